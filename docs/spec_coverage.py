"""Generate ``docs/SPEC-COVERAGE.md``: which core SPEC IDs the tests name (issue 15).

Reads SPEC.md (``- **A1** [core] text`` lines under ``## A. Title`` headings) and every
``tests/test_*.py``, parsed with :mod:`ast` and :mod:`tokenize`: nothing is imported or run.

An ID is

* ``tested`` when a test function (``test_*``, at module level or in a class) or a ``Test*``
  class is named with it: an underscore-separated token of the name, any case
  (``test_j7_...``, ``test_G5_...``, ``test_k14_h6_...``, ``..._reported_n4``);
* ``mentioned`` when it appears only in the docstring of such a test or class, or in a comment
  inside a test function: an upper-case ID (``(J5)``, ``SPEC J1, J2``), ranges included
  (``M10-M12``). Module docstrings are not counted: they name a file's whole area
  (``G3-G33``), which would hide the IDs no test looks at;
* ``not applicable`` when ``docs/spec_not_applicable.txt`` says why it cannot apply to this
  engine (``ID: reason`` per line), shown in place of tests;
* ``not yet`` otherwise.

Host and info IDs are listed apart: the hosting application owns them. The output holds no date
or path, so it changes only when SPEC, the tests or the not-applicable list do.

Usage: ``python docs/spec_coverage.py [SPEC.md] [--check]``. ``--check`` writes nothing; it
exits 1 and prints the differing lines when the committed table is stale. Exit 2: SPEC.md
missing or an input is malformed.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = REPO.parent / "shared" / "SPEC.md"
DEFAULT_TESTS = REPO / "tests"
DEFAULT_OUTPUT = REPO / "docs" / "SPEC-COVERAGE.md"
DEFAULT_NOT_APPLICABLE = REPO / "docs" / "spec_not_applicable.txt"

TITLE_CHARS = 80
MAX_TESTS_SHOWN = 3

SECTION_RE = re.compile(r"^## ([A-Z])\. (.+?)\s*$")
REQUIREMENT_RE = re.compile(r"^- \*\*([A-Z])(\d+)\*\* \[(core|host|info)\] (.+?)\s*$")
NAME_TOKEN_RE = re.compile(r"^([A-Za-z])(\d{1,3})$")
# Upper-case ID in prose, optionally a range within one section: B12-B17, M10–M12, G13-15.
PROSE_ID_RE = re.compile(
    r"(?<![A-Za-z0-9_.])([A-Z])(\d{1,3})(?:\s?[-–]\s?\1?(\d{1,3}))?(?![A-Za-z0-9_])"
)
CLASS_ID_RE = re.compile(r"(?:(?<=[a-z_])|^)([A-Z])(\d{1,3})(?=[A-Z_]|$)")
MAX_RANGE = 40

TESTED = "tested"
MENTIONED = "mentioned"
NOT_YET = "not yet"
NOT_APPLICABLE = "not applicable"


class InputError(Exception):
    """A malformed or missing input; exit 2."""


@dataclass(frozen=True)
class Requirement:
    id: str
    section: str
    number: int
    tag: str
    text: str


@dataclass
class Spec:
    sections: dict[str, str] = field(default_factory=dict)  # letter -> title, SPEC order
    requirements: dict[str, Requirement] = field(default_factory=dict)


@dataclass
class Coverage:
    named: dict[str, set[str]] = field(default_factory=dict)  # ID -> tests named with it
    mentioned: dict[str, set[str]] = field(default_factory=dict)  # ID -> tests mentioning it
    unknown_names: set[str] = field(default_factory=set)  # "ID in test" not in SPEC


def parse_spec(text: str) -> Spec:
    """Sections and requirements. A requirement's text runs on through its indented lines
    (sub-bullets, a paragraph after a blank line) until the next unindented line."""
    spec = Spec()
    section = ""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        heading = SECTION_RE.match(line)
        if heading:
            section = heading.group(1)
            spec.sections[section] = heading.group(2)
            continue
        match = REQUIREMENT_RE.match(line)
        if not match:
            continue
        letter, number, tag, body = match.groups()
        rid = f"{letter}{int(number)}"
        if letter != section:
            raise InputError(f"SPEC: {rid} is listed under section {section or '(none)'}")
        if rid in spec.requirements:
            raise InputError(f"SPEC: {rid} is listed twice")
        parts = [body]
        for following in lines[index + 1 :]:
            if following.strip() and not following[0].isspace():
                break
            parts.append(following.strip().removeprefix("- "))
        full = " ".join(p for p in parts if p)
        spec.requirements[rid] = Requirement(rid, letter, int(number), tag, full)
    if not spec.requirements:
        raise InputError("SPEC: no '- **A1** [core] ...' requirement lines found")
    return spec


def name_ids(name: str) -> list[str]:
    """IDs named by a test function's name: underscore-separated tokens such as ``j7``."""
    ids: list[str] = []
    for token in name.split("_"):
        match = NAME_TOKEN_RE.match(token)
        if match:
            ids.append(f"{match.group(1).upper()}{int(match.group(2))}")
    return ids


def class_ids(name: str) -> list[str]:
    """IDs named by a test class's name: ``TestG15Validity``, ``Test_G15``."""
    ids = [f"{m.group(1)}{int(m.group(2))}" for m in CLASS_ID_RE.finditer(name)]
    return ids + [i for i in name_ids(name) if i not in ids]


def prose_ids(text: str) -> list[str]:
    """Upper-case IDs in a docstring or comment, ranges expanded (``M10-M12``)."""
    ids: list[str] = []
    for match in PROSE_ID_RE.finditer(text):
        letter, first, last = match.group(1), int(match.group(2)), match.group(3)
        end = int(last) if last is not None else first
        if end < first or end - first > MAX_RANGE:
            end = first
        ids.extend(f"{letter}{n}" for n in range(first, end + 1))
    return ids


def _comments(source: str) -> list[tuple[int, str]]:
    readline = io.StringIO(source).readline
    return [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(readline)
        if tok.type == tokenize.COMMENT
    ]


def _tests_in(tree: ast.Module, stem: str) -> Iterable[tuple[ast.AST, str, bool]]:
    """(node, display name, is_class) for each test function and Test* class, at any depth
    of class nesting (functions nested in functions are helpers, not tests)."""

    def walk(body: Sequence[ast.stmt], prefix: str) -> Iterable[tuple[ast.AST, str, bool]]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = f"{prefix}{node.name}"
                if node.name.startswith("Test"):
                    yield node, name, True
                yield from walk(node.body, f"{name}::")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
                "test_"
            ):
                yield node, f"{prefix}{node.name}", False

    yield from walk(tree.body, f"{stem}::")


def scan_tests(files: Iterable[Path], known: set[str]) -> Coverage:
    coverage = Coverage()
    letters = {rid[0] for rid in known}

    def add(table: dict[str, set[str]], ids: Iterable[str], test: str) -> None:
        for rid in ids:
            if rid in known:
                table.setdefault(rid, set()).add(test)

    for path in files:
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError as exc:
            raise InputError(f"{path.name}: cannot parse: {exc}") from exc
        comments = _comments(source)
        for node, display, is_class in _tests_in(tree, path.name):
            assert isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            named = class_ids(node.name) if is_class else name_ids(node.name)
            add(coverage.named, named, display)
            coverage.unknown_names.update(
                f"{i} in {display}" for i in named if i not in known and i[0] in letters
            )
            prose = prose_ids(ast.get_docstring(node) or "")
            if not is_class:
                end = node.end_lineno or node.lineno
                prose += [
                    rid
                    for line, text in comments
                    if node.lineno <= line <= end
                    for rid in prose_ids(text)
                ]
            add(coverage.mentioned, prose, display)
    return coverage


def parse_not_applicable(text: str, spec: Spec) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        rid, sep, reason = line.partition(":")
        rid, reason = rid.strip(), reason.strip()
        where = f"spec_not_applicable.txt line {number}"
        if not sep or not reason:
            raise InputError(f"{where}: expected 'ID: reason'")
        requirement = spec.requirements.get(rid)
        if requirement is None:
            raise InputError(f"{where}: {rid} is not a SPEC ID")
        if requirement.tag != "core":
            raise InputError(f"{where}: {rid} is [{requirement.tag}], not [core]")
        if rid in reasons:
            raise InputError(f"{where}: {rid} is listed twice")
        reasons[rid] = reason
    return reasons


def _sort_key(rid: str) -> tuple[str, int]:
    return rid[0], int(rid[1:])


def title(text: str) -> str:
    """The first ~80 characters of a requirement, as one Markdown table cell."""
    plain = re.sub(r"\s+", " ", text.replace("**", "")).strip()
    if len(plain) > TITLE_CHARS:
        cut = plain[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:.(")
        plain = cut + " …"
        if plain.count("`") % 2:
            plain = plain.replace(" …", "` …")
    return plain.replace("|", "\\|")


def _tests_cell(tests: set[str]) -> str:
    ordered = sorted(tests)
    shown = ", ".join(f"`{t}`" for t in ordered[:MAX_TESTS_SHOWN])
    more = len(ordered) - MAX_TESTS_SHOWN
    return f"{shown} +{more}" if more > 0 else shown


def _percent(part: int, whole: int) -> str:
    return f"{part} ({round(100 * part / whole)} %)" if whole else "0"


def render(spec: Spec, coverage: Coverage, not_applicable: dict[str, str]) -> str:
    for rid in sorted(not_applicable, key=_sort_key):
        if rid in coverage.named:
            tests = _tests_cell(coverage.named[rid])
            raise InputError(f"{rid} is marked not applicable but {tests} is named with it")

    core = [r for r in spec.requirements.values() if r.tag == "core"]
    states: dict[str, str] = {}
    for req in core:
        if req.id in coverage.named:
            states[req.id] = TESTED
        elif req.id in not_applicable:
            states[req.id] = NOT_APPLICABLE
        elif req.id in coverage.mentioned:
            states[req.id] = MENTIONED
        else:
            states[req.id] = NOT_YET

    out = [
        "# SPEC coverage",
        "",
        "<!-- Generated by docs/spec_coverage.py from SPEC.md and tests/test_*.py; do not edit."
        " Regenerate with `make spec-coverage`. -->",
        "",
        "Every `[core]` requirement of SPEC.md (`../shared/SPEC.md`) and what the tests say about"
        " it, read from the test sources (never run).",
        "",
        "- **tested**: a test function or `Test*` class is named with the ID"
        " (`test_j7_...`, `test_G5_...`, `..._n4`);",
        "- **mentioned**: the ID appears only in a test's docstring or in a comment inside a test;",
        "- **not applicable**: it cannot apply to this engine, for the reason given"
        " (`docs/spec_not_applicable.txt`);",
        "- **not yet**: no test names or mentions it.",
        "",
        "## Summary",
        "",
        "| Section | Core IDs | Tested | Mentioned only | Not yet | Not applicable |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    totals = [0, 0, 0, 0, 0]
    by_section: dict[str, list[Requirement]] = {}
    for req in core:
        by_section.setdefault(req.section, []).append(req)
    for letter, name in spec.sections.items():
        reqs = by_section.get(letter, [])
        if not reqs:
            continue
        counts = [len(reqs)] + [
            sum(states[r.id] == s for r in reqs)
            for s in (TESTED, MENTIONED, NOT_YET, NOT_APPLICABLE)
        ]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        cells = [_percent(c, counts[0]) for c in counts[1:]]
        out.append(f"| {letter}. {name} | {counts[0]} | " + " | ".join(cells) + " |")
    cells = [_percent(c, totals[0]) for c in totals[1:]]
    out.append(f"| **All** | {totals[0]} | " + " | ".join(cells) + " |")

    for letter, name in spec.sections.items():
        reqs = by_section.get(letter, [])
        if not reqs:
            continue
        out += ["", f"## {letter}. {name}", "", "| ID | Requirement | State | Tests or reason |"]
        out.append("| --- | --- | --- | --- |")
        for req in sorted(reqs, key=lambda r: r.number):
            state = states[req.id]
            if state == TESTED:
                cell = _tests_cell(coverage.named[req.id])
            elif state == NOT_APPLICABLE:
                cell = not_applicable[req.id].replace("|", "\\|")
            elif state == MENTIONED:
                cell = _tests_cell(coverage.mentioned[req.id])
            else:
                cell = ""
            out.append(f"| {req.id} | {title(req.text)} | {state} | {cell} |")

    others = sorted(
        (r for r in spec.requirements.values() if r.tag != "core"),
        key=lambda r: _sort_key(r.id),
    )
    out += [
        "",
        "## Host and info IDs",
        "",
        "Not implemented by the engine: `[host]` IDs belong to the hosting application (the engine"
        " at most takes a parameter for them), `[info]` IDs are measurements, not rules.",
        "",
    ]
    out += [f"- **{r.id}** [{r.tag}] {title(r.text)}" for r in others]
    return "\n".join(out) + "\n"


def generate(spec_path: Path, tests_dir: Path, not_applicable_path: Path) -> tuple[str, Coverage]:
    if not spec_path.is_file():
        raise InputError(
            f"SPEC.md not found at {spec_path}: check out shared/ next to the repository, or pass"
            " its path"
        )
    spec = parse_spec(spec_path.read_text(encoding="utf-8"))
    reasons = (
        parse_not_applicable(not_applicable_path.read_text(encoding="utf-8"), spec)
        if not_applicable_path.is_file()
        else {}
    )
    files = sorted(tests_dir.glob("test_*.py"))
    if not files:
        raise InputError(f"no tests/test_*.py files under {tests_dir}")
    coverage = scan_tests(files, set(spec.requirements))
    return render(spec, coverage, reasons), coverage


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("spec", nargs="?", type=Path, default=DEFAULT_SPEC, help="SPEC.md")
    parser.add_argument("--tests", type=Path, default=DEFAULT_TESTS)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--not-applicable", type=Path, default=DEFAULT_NOT_APPLICABLE)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the committed table is stale"
    )
    args = parser.parse_args(argv)
    try:
        table, coverage = generate(args.spec, args.tests, args.not_applicable)
    except InputError as exc:
        print(f"spec_coverage: {exc}", file=sys.stderr)
        return 2
    for unknown in sorted(coverage.unknown_names):
        print(f"spec_coverage: warning: no SPEC ID {unknown}", file=sys.stderr)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
        if current == table:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(),
            table.splitlines(),
            fromfile=f"{args.output.name} (committed)",
            tofile=f"{args.output.name} (generated)",
            lineterm="",
        )
        print("\n".join(diff))
        print(f"spec_coverage: {args.output} is stale; run `make spec-coverage`", file=sys.stderr)
        return 1
    args.output.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
