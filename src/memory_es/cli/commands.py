"""Every ``memory-es`` command, by group, and the order ``--help`` lists them in (SPEC C).

A group is one module, chosen by the handle its commands open; each declares its commands'
options beside their bodies (:class:`~memory_es.cli.common.Command`):

- :mod:`~memory_es.cli.standalone`: no root handle (``validate``, ``demo``);
- :mod:`~memory_es.cli.writer`: the writer store (``admit``, ``remember``, ``set-status``,
  ``mark``, ``drain``, ``retry``, ``resolve``, ``forget``, ``consolidate``);
- :mod:`~memory_es.cli.reading`: the read-only root, what it stores (``search``, ``journal``,
  ``list``, ``show``, ``profile``, ``reflect``);
- :mod:`~memory_es.cli.audit`: the read-only root, the operator's views (``inspect``,
  ``export``, ``health``, ``anchor``, ``calibrate``);
- :mod:`~memory_es.cli.maintenance`: a library function that locks or builds the root itself
  (``rebuild``, ``replay``, ``migrate``, ``migrate-journal``, ``rewrite-journal``);
- :mod:`~memory_es.cli.backups`: memory in and out (``backup``, ``import``,
  ``adopt-replay``);
- :mod:`~memory_es.cli.curate`: the reviewed step before ``intentExpiry`` (``curate``);
- :mod:`~memory_es.cli.serve`: the MCP server (``serve-mcp``) and the web inspector
  (``serve-web``).
"""

from __future__ import annotations

from memory_es.cli import (
    audit,
    backups,
    curate,
    maintenance,
    reading,
    serve,
    standalone,
    writer,
)
from memory_es.cli.common import Command

GROUPS = (standalone, writer, reading, audit, maintenance, backups, curate, serve)
HELP_ORDER = (
    "validate", "remember", "set-status", "mark", "admit", "inspect", "export", "drain",
    "serve-mcp", "serve-web", "retry", "resolve", "forget", "rebuild", "consolidate", "replay",
    "health",
    "anchor", "backup", "import", "adopt-replay", "migrate", "migrate-journal",
    "rewrite-journal",
    "search", "calibrate", "journal", "list", "show", "profile", "reflect", "curate", "demo",
)


def commands() -> list[Command]:
    """Every command of every group, in ``HELP_ORDER``."""
    by_name = {command.name: command for group in GROUPS for command in group.COMMANDS}
    return [by_name[name] for name in HELP_ORDER]
