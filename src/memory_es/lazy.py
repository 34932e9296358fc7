"""Package faces that import a name on first use (PEP 562), so importing a package loads
nothing its caller does not ask for: ``import memory_es`` and ``memory-es --version`` never
load numpy, pydantic or the event classes."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(package: str, homes: Mapping[str, str], submodules: frozenset[str] = frozenset()
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``'s face: ``homes`` maps each public
    name to the module that defines it (imported on first use, then kept in the package, so
    the second lookup is a plain attribute); ``submodules`` are answered as modules."""

    def __getattr__(name: str) -> Any:
        if name in submodules:  # ``package.model``, as an attribute of the package
            return importlib.import_module(f"{package}.{name}")
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes, *submodules})

    return __getattr__, __dir__
