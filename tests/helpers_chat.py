"""Chat replies as the real servers shape them, for the 127.0.0.1 test servers of the chat
provider tests and the chat model contract."""

from __future__ import annotations

from local_http import Recorded, Reply, Responder, js


def ollama_ok(content: str = '{"candidates": []}') -> Responder:
    def respond(req: Recorded) -> Reply:
        return js(200, {"model": req.body["model"], "created_at": "2024-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": content},
                        "done": True, "done_reason": "stop", "total_duration": 1})
    return respond


def openai_ok(content: str = '{"candidates": []}') -> Responder:
    def respond(req: Recorded) -> Reply:
        return js(200, {"id": "chatcmpl-1", "object": "chat.completion",
                        "model": req.body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    return respond
