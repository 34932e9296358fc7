"""Shared machinery of the contract suites: each provider failure is one parametrised case."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pytest


class FailureCases:
    """Parametrises a contract's ``failure`` argument over :attr:`failures`; a name in
    :attr:`known_gaps` is a strict xfail that says which exception escapes instead, and why."""

    #: provider failure -> the documented error code it must end in
    failures: ClassVar[Mapping[str, str]] = {}
    #: provider failure -> (the exception that escapes instead, why): a known gap, strict xfail
    known_gaps: ClassVar[Mapping[str, tuple[type[BaseException], str]]] = {}

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "failure" in metafunc.fixturenames:
            params = []
            for name in sorted(self.failures):
                marks = []
                if name in self.known_gaps:
                    raises, reason = self.known_gaps[name]
                    marks.append(pytest.mark.xfail(raises=raises, reason=reason, strict=True))
                params.append(pytest.param(name, marks=marks, id=name))
            metafunc.parametrize("failure", params)
