"""The readers: one source file or folder of a named format into a :class:`SourceRead`
(another memory store's formats are in :mod:`~memory_es.imports.peers`).

Each reader follows the format as its project documents it, keeps the source's own ids and
times, and refuses item by item (a one-line reason) what it cannot take; a source that is not
the format at all fails whole (:class:`ImportSourceError`, nothing written).

- ``mem0``: mem0's exported memories, the JSON ``get_all`` returns (``{"results": [...]}`` or a
  bare list): each ``{"id", "memory", "created_at", "updated_at", "user_id", "agent_id", ...}``
  is one curated line, timed by ``updated_at`` (else ``created_at``).
- ``notes``: a folder of Markdown notes with front matter (basic-memory / Obsidian): every
  ``*.md`` file outside hidden folders; each paragraph of a note's body is one line, prefixed
  with the note's title (front matter ``title``, else its first ``#`` heading, else the file
  name) and timed by ``date``, ``created``, ``modified`` or ``updated`` (else the file's
  modification time).
- ``chatgpt``: ChatGPT's ``conversations.json`` export: along each conversation's current
  branch (``current_node`` back through ``parent``), every user message with the assistant's
  reply is one completed turn of session ``chatgpt:<conversation id>``, timed by the reply;
  the turn's text holds both sides (``User: ...`` / ``Assistant: ...``), so a Lite or Journal
  root keeps what the user said, not only the answer.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_es.imports.items import (
    EXCHANGE_MAX_BYTES,
    NOTE_MAX_BYTES,
    ImportItem,
    ImportSourceError,
    SourceRead,
    json_of,
    parse_time,
    regular_bytes,
)
from memory_es.imports.peers import read_mcp_memory, read_memory_es
from memory_es.imports.reference import read_reference
from memory_es.vocabulary import IMPORT_FORMATS


def read_source(fmt: str, path: str | Path) -> SourceRead:
    """``path`` read as ``fmt`` (one of :data:`FORMATS`)."""
    reader = FORMATS.get(fmt)
    if reader is None:
        raise ImportSourceError(f"import_format_unknown: {fmt!r} is not one of "
                                f"{', '.join(FORMATS)}", code="import_format_unknown")
    source = Path(path).resolve()  # the source named may be a link; nothing inside it may
    if not source.exists():
        raise ImportSourceError(f"{source}: no such file or folder", code="not_found")
    return reader(source)


def _json(path: Path, fmt: str) -> tuple[Any, str]:
    if not path.is_file():
        raise ImportSourceError(f"{path}: a {fmt} source is one JSON file",
                                code="import_wrong_format")
    raw = regular_bytes(path)
    return json_of(raw, str(path)), hashlib.sha256(raw).hexdigest()


def _wrong(path: Path, fmt: str, expected: str) -> ImportSourceError:
    return ImportSourceError(f"{path}: not a {fmt} export: expected {expected}",
                             code="import_wrong_format")


# -- mem0 ----------------------------------------------------------------------------------


def read_mem0(path: Path) -> SourceRead:
    data, digest = _json(path, "mem0")
    rows = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(rows, list) or any(not isinstance(r, dict) for r in rows) \
            or (rows and not any("memory" in r for r in rows)):
        raise _wrong(path, "mem0", 'a list of {"id", "memory", ...} objects, bare or under '
                     '"results"')
    read = SourceRead("mem0", digest)
    for n, row in enumerate(rows, start=1):
        original = row.get("id")
        if not isinstance(original, str) or not original.strip():
            read.refuse(f"#{n}", "invalid: no string id")
            continue
        text = row.get("memory")
        if not isinstance(text, str):
            read.refuse(original, "invalid: memory is not a string")
            continue
        at = read.time_of(original, row.get("updated_at") or row.get("created_at"),
                          "created_at")
        if at is not None:
            read.add(ImportItem(original, at, text), NOTE_MAX_BYTES)
    return read


# -- Markdown notes ------------------------------------------------------------------------

_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_KEY = re.compile(r"^([A-Za-z_][\w-]*):[ \t]*(.*)$")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")
TIME_KEYS = ("date", "created", "modified", "updated")


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """The front matter's scalar keys (a list such as ``tags`` is skipped) and the body."""
    match = _FRONT.match(text)
    if match is None:
        return {}, text
    keys: dict[str, str] = {}
    for line in match.group(1).splitlines():
        found = _KEY.match(line)
        if found and found.group(2) and not found.group(2).startswith("["):
            keys[found.group(1).lower()] = found.group(2).strip().strip("'\"")
    return keys, text[match.end():]


def paragraphs(body: str) -> Iterator[str]:
    """Blocks of text between blank lines, headings left out (the title prefixes each)."""
    block: list[str] = []
    for line in [*body.splitlines(), ""]:
        if not line.strip() or _HEADING.match(line):
            if block:
                yield " ".join(part.strip() for part in block)
            block = []
        else:
            block.append(line)


def _notes(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md") and not name.startswith("."):
                yield Path(folder, name)


def read_notes(path: Path) -> SourceRead:
    if not path.is_dir():
        raise _wrong(path, "notes", "a folder of Markdown (.md) notes")
    digest = hashlib.sha256()
    read = SourceRead("notes", "")
    for note in _notes(path):
        rel = note.relative_to(path).as_posix()
        try:
            raw = regular_bytes(note)
        except ImportSourceError:
            read.refuse(rel, "invalid: not a regular file (a link, FIFO or device)")
            continue
        digest.update(f"{len(rel)}:{rel}{len(raw)}:".encode("utf-8", "surrogateescape") + raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            read.refuse(rel, "invalid: not UTF-8")
            continue
        keys, body = front_matter(text)
        heading = next((m.group(1) for m in map(_HEADING.match, body.splitlines()) if m), None)
        title = keys.get("title") or heading or note.stem
        when = next((keys[k] for k in TIME_KEYS if keys.get(k)), None)
        try:
            at = (parse_time(when, "date") if when is not None
                  else datetime.fromtimestamp(note.stat().st_mtime, UTC))
        except ValueError as e:
            read.refuse(rel, f"invalid: {e}")
            continue
        for k, block in enumerate(paragraphs(body), start=1):
            line = block if block.startswith(title) else f"{title}: {block}"
            read.add(ImportItem(f"{rel}#{k}", at, line), NOTE_MAX_BYTES)
    read.sha256 = digest.hexdigest()
    if not read.items and not read.refused:
        raise _wrong(path, "notes", "at least one Markdown (.md) note with text")
    return read


# -- ChatGPT ---------------------------------------------------------------------------------


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return ""
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip()).strip()


def _branch(mapping: dict[str, Any], current: object) -> list[dict[str, Any]]:
    """The messages from the conversation's root to ``current``, oldest first."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        if isinstance(node.get("message"), dict):
            out.append(node["message"])
        node_id = node.get("parent")
    return out[::-1]


def _role(message: dict[str, Any]) -> str:
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    return role if isinstance(role, str) else ""


def read_chatgpt(path: Path) -> SourceRead:
    data, digest = _json(path, "chatgpt")
    if not isinstance(data, list) or any(
            not isinstance(c, dict) or not isinstance(c.get("mapping"), dict) for c in data):
        raise _wrong(path, "chatgpt", 'a list of conversations, each with a "mapping"')
    read = SourceRead("chatgpt", digest)
    for n, conversation in enumerate(data, start=1):
        conv_id = conversation.get("conversation_id") or conversation.get("id")
        if not isinstance(conv_id, str) or not conv_id:
            read.refuse(f"#{n}", "invalid: conversation has no id")
            continue
        asked: dict[str, Any] | None = None
        for message in _branch(conversation["mapping"], conversation.get("current_node")):
            role = _role(message)
            if role == "user":
                if asked is not None:
                    _unanswered(read, conv_id, asked)
                asked = message if _message_text(message) else None
            elif role == "assistant" and asked is not None and _message_text(message):
                _exchange(read, conv_id, asked, message, conversation)
                asked = None
        if asked is not None:
            _unanswered(read, conv_id, asked)
    return read


def _unanswered(read: SourceRead, conv_id: str, asked: dict[str, Any]) -> None:
    """A user message the assistant never answered on this branch: not a completed turn
    (A8), so refused with its reason rather than lost without one."""
    read.refuse(f"{conv_id}/{asked.get('id')}", "unanswered: a user message without an "
                "assistant reply is no completed turn")


def _exchange(read: SourceRead, conv_id: str, asked: dict[str, Any], reply: dict[str, Any],
              conversation: dict[str, Any]) -> None:
    original = f"{conv_id}/{reply.get('id')}"
    user, answer = _message_text(asked), _message_text(reply)
    at = read.time_of(original, reply.get("create_time") or conversation.get("create_time"),
                      "create_time")
    if at is None:
        return
    exchange = f"User: {user}\nAssistant: {answer}" if user else f"Assistant: {answer}"
    read.add(ImportItem(original, at, exchange, capture_text=exchange,
                        session=f"chatgpt:{conv_id}", speaker_kind="human-turn"),
             EXCHANGE_MAX_BYTES, user, answer)


FORMATS: dict[str, Callable[[Path], SourceRead]] = {
    "mem0": read_mem0,
    "notes": read_notes,
    "chatgpt": read_chatgpt,
    "memory-es": read_memory_es,
    "mcp-memory": read_mcp_memory,
    "reference": read_reference,
}
assert tuple(FORMATS) == IMPORT_FORMATS  # the CLI lists the same names
