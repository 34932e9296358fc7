"""``memory-es serve-mcp``: the memory tools over MCP (issue 17), a thin shell over
:func:`memory_es.serve.serve`. Bad options are usage errors (exit 2) before the root opens."""

from __future__ import annotations

import argparse
from pathlib import Path

from memory_es.cli.commands import _config, _root
from memory_es.cli.contract import OK, UsageError


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    from memory_es.serve import serve

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a TCP port (1-65535)")
    if args.transport == "stdio" and args.token_file is not None:
        raise UsageError("--token-file is for --transport http (stdio has no network surface)")
    config = _config(args)
    serve(_root(args, config), config, transport=args.transport, host=args.host,
          port=args.port, lock_timeout=args.lock_timeout, create=False,  # only admit creates
          token_path=Path(args.token_file) if args.token_file is not None else None)
    return OK
