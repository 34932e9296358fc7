"""The installed distribution's version, looked up only when asked (importlib.metadata)."""

from __future__ import annotations


def package_version() -> str:
    """The installed distribution's version ("unknown" in a checkout never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory-es")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "unknown"
