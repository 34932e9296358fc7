"""``memory-es serve-mcp``: the memory tools over MCP, a thin shell over
:func:`memory_es.serve.serve`. Bad options are usage errors (exit 2) before the root opens."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from memory_es.cli.commands import _config, _root
from memory_es.cli.contract import OK, UsageError


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
    config = _config(args)
    serve(_root(args, config), config, transport=args.transport, host=args.host,
          port=args.port, lock_timeout=args.lock_timeout, create=False,  # only admit creates
          token_path=Path(args.token_file) if args.token_file is not None else None,
          allow_hosts=tuple(args.allow_host), max_sessions=args.max_sessions,
          session_idle=args.session_idle)
    return OK
