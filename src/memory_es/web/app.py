"""The Starlette app of the inspector and the command that serves it (``memory-es serve-web``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from memory_es.errors import MemoryEsError
from memory_es.keystore import KeyStore
from memory_es.serve.http import App, bind_warning, bound_names, is_wildcard, read_token

if TYPE_CHECKING:
    from memory_es.config import MemoryConfig
    from memory_es.root import MemoryRoot
    from memory_es.web.guard import LoginCode

DEFAULT_PORT: Final = 8766
TOKEN_FILE: Final = "web.token"


def require_web() -> None:
    """The web stack is the ``[web]`` extra: say how to get it instead of a traceback."""
    try:
        import jinja2  # noqa: F401
        import markdown_it  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise MemoryEsError("web_unavailable: the web inspector needs the [web] extra (in a "
                            "checkout: pip install -e '.[web]')", code="web_unavailable") from e


def build_app(root: MemoryRoot, *, token: str, hosts: tuple[str, ...], port: int,
              login: LoginCode | None = None) -> tuple[App, LoginCode]:
    """The guarded app over ``root`` and its login code (made here unless given)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from memory_es.web.guard import LoginCode, Sessions, guard
    from memory_es.web.pages import Pages

    pages = Pages(root)
    get = ["GET", "HEAD"]
    app = Starlette(exception_handlers=pages.handlers(), routes=[
        Route("/", pages.timeline, methods=get),
        Route("/memory/{memory_id}", pages.memory, methods=get),
        Route("/search", pages.search, methods=get),
        Route("/people", pages.people, methods=get),
        Route("/health", pages.health, methods=get),
        Route("/profile", pages.profile, methods=get),
        Mount("/static", StaticFiles(packages=[("memory_es.web", "static")]), name="static"),
    ])
    code = login if login is not None else LoginCode()
    return guard(app, token=token, hosts=hosts, port=port, sessions=Sessions(token),
                 login=code), code


def serve_web(root_path: Path, config: MemoryConfig | None, *, host: str = "127.0.0.1",
              port: int = DEFAULT_PORT, token_path: Path | None = None) -> None:
    """Serve the inspector over ``root_path`` until the process is stopped. The token is read
    from ``token_path``, else from (or made in) ``web.token`` beside the root's keys; a
    one-time login link goes to stderr, the token never does."""
    require_web()
    import uvicorn

    from memory_es.root import MemoryRoot
    from memory_es.serve.http import token_file

    token = read_token(token_path, "web") if token_path is not None else None
    root = MemoryRoot.open(root_path, config)
    root_id = root.root_id()
    if token is None:
        if root_id is None:
            raise MemoryEsError("web_token_required: this root keeps no keys (schema 1): pass "
                                "--token-file", code="web_token_required")
        token_path = token_file(KeyStore.resolve(None), root_id, TOKEN_FILE)
        token = read_token(token_path, "web")
    app, login = build_app(root, token=token, hosts=tuple(bound_names(host)), port=port)
    where = "127.0.0.1" if is_wildcard(host) else host  # a link a browser here can open
    shown = f"[{where}]" if ":" in where else where
    print(f"memory-es: web inspector on http://{shown}:{port}/ (open "
          f"http://{shown}:{port}/login/{login.code} once to sign in; bearer token in "
          f"{token_path})", file=sys.stderr, flush=True)
    warning = bind_warning(host)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
