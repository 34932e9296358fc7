"""The commands that open no root handle: ``validate`` (a config file against SPEC O, C10) and
``demo`` (the whole flow in roots of its own)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from memory_es.cli.common import Command, print_json
from memory_es.cli.contract import OK, REFUSED


def cmd_validate(args: argparse.Namespace) -> int:
    from memory_es.config import config_notices, load_config, validate_file

    errors = validate_file(args.config) if args.config is not None else []
    notices = [] if errors or args.config is None else config_notices(load_config(args.config))
    if args.json:
        print_json({"valid": not errors, "errors": errors, "notices": notices})
    elif args.config is None:
        print("OK (no config file: all defaults)")
    else:
        print("\n".join(errors) if errors else "\n".join(["OK", *(f"note: {n}" for n in notices)]))
    return REFUSED if errors else OK


VALIDATE = Command("validate", "check a config file against SPEC O (exit 1 when invalid)",
                   cmd_validate)


def cmd_demo(args: argparse.Namespace, cli: Callable[[list[str]], int]) -> int:
    """The whole Lite flow, then BuJo capture, in a temporary root, or kept at ``--root``
    (memory_es.demo). ``cli`` is ``memory-es`` itself, handed in by ``main``: a command
    module never imports the package that dispatches it."""
    from memory_es.demo import run_demo

    return run_demo(cli, Path(args.root) if args.root is not None else None)


DEMO = Command(
    "demo", "the whole Lite flow, then BuJo capture, in a temporary root "
    "(removed afterwards), or kept at --root DIR (and DIR-bujo)", None,
    description="Run the whole Lite flow, then BuJo capture with an offline demo "
                "model. Without --root the roots live in a temporary directory "
                "and are removed with their keys; with --root DIR the Lite root is "
                "made at DIR and the BuJo root at DIR-bujo, both kept (each must "
                "be new or empty: exit 1 otherwise, nothing written).",
    json=False)

COMMANDS = (VALIDATE, DEMO)
