"""``memory-es serve-mcp``: the memory tools over MCP, holding the writer store open, a thin
shell over :func:`memory_es.serve.serve`; ``memory-es serve-web``: the read-only web inspector
(:func:`memory_es.web.app.serve_web`). Options sit beside each body; bad options are usage
errors (exit 2) before the root opens."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from memory_es.cli.common import Command, add_lock_timeout, config, root_path
from memory_es.cli.contract import OK, UsageError


def _serve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: the client starts this process) or http (Streamable "
                        "HTTP with a bearer token)")
    p.add_argument("--host", default="127.0.0.1",
                   help="http: the address to bind (default 127.0.0.1; another address "
                        "serves plain HTTP beyond this machine, and a warning says so; "
                        "0.0.0.0 or :: accept this machine's names and addresses as Host)")
    p.add_argument("--port", type=int, default=8765, help="http: the port (default 8765)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="http: one more name clients may send as Host (and Origin), e.g. "
                        "the DNS name they reach this machine by; repeatable. Any other "
                        "Host is answered 421, any other Origin 403")
    p.add_argument("--token-file", metavar="FILE",
                   help="http: read the bearer token from FILE, which must be owner-only "
                        "(mode 0600; default: generated on first start into an owner-only "
                        "file beside the root's keys)")
    p.add_argument("--max-sessions", type=int, default=None, metavar="N",
                   help="http: MCP sessions open at once, 1 to 10000 (default 32); one more "
                        "is answered 503")
    p.add_argument("--session-idle", type=float, default=None, metavar="S",
                   help="http: end a session after S seconds without a request, 1 to 86400 "
                        "(default 600); its id then answers 404 and the client starts anew")
    add_lock_timeout(p)


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    from memory_es.serve import serve

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a TCP port (1-65535)")
    if args.transport == "stdio":
        for name, value in (("--token-file", args.token_file), ("--allow-host", args.allow_host),
                            ("--max-sessions", args.max_sessions),
                            ("--session-idle", args.session_idle)):
            if value:
                raise UsageError(f"{name} is for --transport http (stdio has no network "
                                 "surface)")
    if args.max_sessions is not None and not 1 <= args.max_sessions <= 10_000:
        raise UsageError(f"argument --max-sessions: must be 1 to 10000, got {args.max_sessions}")
    if args.session_idle is not None and not (
            math.isfinite(args.session_idle) and 1 <= args.session_idle <= 86_400):
        raise UsageError("argument --session-idle: must be 1 to 86400 seconds, got "
                         f"{args.session_idle}")
    loaded = config(args)
    serve(root_path(args, loaded), loaded, transport=args.transport, host=args.host,
          port=args.port, lock_timeout=args.lock_timeout, create=False,  # only admit creates
          token_path=Path(args.token_file) if args.token_file is not None else None,
          allow_hosts=tuple(args.allow_host), max_sessions=args.max_sessions,
          session_idle=args.session_idle)
    return OK


SERVE_MCP = Command("serve-mcp", "serve the memory tools (recall, journal, remember; forget "
                    "when enabled) to MCP clients over stdio or HTTP, holding the store open",
                    cmd_serve_mcp, _serve_options, paths=frozenset({"token_file"}), json=False)

def _web_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to bind (default 127.0.0.1; another address serves "
                        "plain HTTP beyond this machine, and a warning says so)")
    p.add_argument("--port", type=int, default=8766, help="the port (default 8766)")
    p.add_argument("--token-file", metavar="FILE",
                   help="read the bearer token from FILE, which must be owner-only (mode "
                        "0600; default: generated on first start into an owner-only file "
                        "beside the root's keys)")


def cmd_serve_web(args: argparse.Namespace) -> int:
    from memory_es.web.app import serve_web

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a TCP port (1-65535)")
    loaded = config(args)
    serve_web(root_path(args, loaded), loaded, host=args.host, port=args.port,
              token_path=Path(args.token_file) if args.token_file is not None else None)
    return OK


SERVE_WEB = Command("serve-web", "serve the read-only web inspector (timeline, a memory's "
                    "history, search with its score parts, people, health, profile) on "
                    "127.0.0.1, behind a token and a one-time login link",
                    cmd_serve_web, _web_options, paths=frozenset({"token_file"}), json=False)

COMMANDS = (SERVE_MCP, SERVE_WEB)
