"""The package's version: one constant, which the build reads too (pyproject.toml's
``[tool.setuptools.dynamic]``), so asking for it imports nothing."""

from __future__ import annotations

__version__ = "0.1.0"


def package_version() -> str:
    """This package's version, the one its distribution was built with."""
    return __version__
