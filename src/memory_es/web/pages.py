"""The inspector's pages: each a read of :class:`~memory_es.root.MemoryRoot` (no lock, nothing
written, safe beside a running agent) rendered through an autoescaping template, so every
memory text reaches the page as text, never as markup.

Handlers are plain functions: Starlette runs them on its thread pool, and one lock keeps the
handle's caches (the bound recall, the journal's snapshots) to one request at a time.
"""

from __future__ import annotations

import contextlib
import os
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from memory_es.browse.journal_request import JournalFilter
from memory_es.errors import MemoryEsError
from memory_es.failures import REFUSED, USAGE, classify
from memory_es.root import MemoryRoot
from memory_es.vocabulary import JOURNAL_CURRENTNESS, JOURNAL_STATUSES
from memory_es.web.graph import read_graph
from memory_es.web.markdown import render as render_markdown

TIMELINE_DAYS: Final = 7  # the range the timeline opens on, ending today
PAGE_LIMIT: Final = 25  # MemoryJournal's largest page
SEARCH_LIMIT: Final = 10
CARD_LINES: Final = 50  # an entity card's lines at most
INDEX_FILE: Final = "index.md"
FILTERS: Final = ("status", "type", "session", "currentness")  # JournalFilter's fields


class Pages:
    """The handlers, bound to one read-only handle and the templates."""

    def __init__(self, root: MemoryRoot) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.env = Environment(loader=PackageLoader("memory_es.web", "templates"),
                               autoescape=select_autoescape(default=True,
                                                            default_for_string=True),
                               undefined=StrictUndefined, trim_blocks=True,
                               lstrip_blocks=True)
        self.env.filters["markdown"] = render_markdown
        self.last_audit: tuple[str, dict[str, Any]] | None = None
        self.zone = host_zone()  # the timeline's default, read once

    def page(self, name: str, http_status: int = 200, **values: Any) -> HTMLResponse:
        html = self.env.get_template(f"{name}.html").render(page=name, **values)
        return HTMLResponse(html, status_code=http_status)

    def handlers(self) -> dict[Any, Any]:
        """Starlette's own answers (no such page, a bug) as the inspector's error page."""
        async def known(request: Request, exc: Exception) -> Response:
            status = exc.status_code if isinstance(exc, HTTPException) else 500
            return self.page("error", status, code=f"http_{status}",
                             message="no such page" if status == 404 else "cannot answer that")

        async def bug(request: Request, exc: Exception) -> Response:
            return self.page("error", 500, code="internal_error",
                             message=f"internal error: {type(exc).__name__}")

        return {HTTPException: known, Exception: bug}

    def failed(self, error: MemoryEsError) -> HTMLResponse:
        """The CLI's contract as an HTTP status: a usage error is the asker's (400), a refusal
        404 for an id that names nothing and 409 otherwise, anything else the root's (503)."""
        failure = classify(error)
        status = {USAGE: 400, REFUSED: 404 if failure.code.endswith("not_found") else 409
                  }.get(failure.exit_code, 503)
        return self.page("error", status, code=failure.code, message=failure.message)

    # -- pages ----------------------------------------------------------------------------------

    def timeline(self, request: Request) -> HTMLResponse:
        """Days with their memories (MemoryJournal's frozen snapshot, paged by its cursor),
        filtered by status, kind, session and currentness before the snapshot is cut, so
        every page holds only matching memories (a cursor carries its filter)."""
        q = request.query_params
        chosen = {name: q.get(name, "").strip() for name in FILTERS}
        zone = q.get("tz") or self.zone
        today = date.today()
        through = q.get("through") or today.isoformat()
        since = q.get("from") or _days_before(through, TIMELINE_DAYS - 1, today)
        try:
            if q.get("cursor"):
                ask: dict[str, Any] = {"cursor": q["cursor"]}
                filters = None
            else:
                ask = {"fromDate": since, "throughDate": through, "timeZone": zone,
                       "limit": PAGE_LIMIT}
                filters = JournalFilter(**{k: v or None for k, v in chosen.items()}) or None
            with self.lock:
                journal = self.root.journal(ask, filters=filters).to_json()
        except MemoryEsError as e:
            return self.failed(e)
        if q.get("cursor"):  # the form shows what the cursor carries
            carried = journal.get("filter") or {}
            chosen = {name: carried.get(name, "") for name in FILTERS}
            r = journal["range"]
            since, through, zone = r["fromDate"], r["throughDate"], r["timeZone"]
        days: dict[str, list[dict[str, Any]]] = {}
        for entry in journal["entries"]:
            days.setdefault(entry["day"], []).append(entry)
        return self.page("timeline", journal=journal, days=days, since=since, through=through,
                         zone=zone, chosen=chosen, statuses=JOURNAL_STATUSES,
                         currentness=JOURNAL_CURRENTNESS)

    def memory(self, request: Request) -> HTMLResponse:
        """One memory: text, status, provenance, validity, supersession both ways, events."""
        try:
            with self.lock:
                detail = self.root.show(request.path_params["memory_id"]).to_json()
        except MemoryEsError as e:
            return self.failed(e)
        return self.page("memory", detail=detail, m=detail)

    def search(self, request: Request) -> HTMLResponse:
        """Recall with ``explain``: each hit's score parts as bars, the cut it passed, the
        degraded reason; ``as_of`` answers from the journal at a past instant."""
        q = request.query_params
        query, as_of = q.get("q", "").strip(), q.get("as_of", "").strip() or None
        if not query:
            return self.page("search", query="", as_of=as_of or "", result=None)
        try:
            with self.lock:
                result = self.root.search(query, SEARCH_LIMIT, explain=True,
                                          as_of=as_of).to_json()
        except MemoryEsError as e:
            return self.failed(e)
        return self.page("search", query=query, as_of=as_of or "", result=result,
                         bars=[_bars(hit.get("explain") or {}) for hit in result["results"]])

    def people(self, request: Request) -> HTMLResponse:
        """The entity graph as a picture, and a chosen entity's card: its lines and, for a
        person, the fact sheet recall would show (the picture is then drawn around it)."""
        chosen = request.query_params.get("entity", "") or None
        try:
            graph = read_graph(self.root.root, chosen)
        except UnicodeDecodeError:
            return self.failed(_unreadable("graph.jsonl"))
        card = next((e for e in graph.entities if e.id == chosen), None)
        lines: list[dict[str, Any]] = []
        sheet: list[str] = []
        if card is not None:
            try:
                with self.lock:
                    lines = [m.to_json() for m in self.root.memories(card.memories[:CARD_LINES])]
                    if card.type == "person":
                        found = self.root.recall(card.name, SEARCH_LIMIT, about=card.id)
                        sheet = [s.text(found.zone or UTC) for s in found.fact_sheets]
            except MemoryEsError as e:
                return self.failed(e)
        return self.page("people", graph=graph, card=card, lines=lines, sheet=sheet)

    def health(self, request: Request) -> HTMLResponse:
        """The intake queue, the worker's snapshot, the vector backlog and the forget receipts
        now (content-free); the strict audit's findings when asked for (``?audit=1``: it reads
        the whole journal)."""
        counts: dict[str, Any] | None = None
        forgets: dict[str, Any] | None = None
        backlog: int | None = None
        problem: str | None = None
        worker = self.root.worker_snapshot().to_json()
        with self.lock:
            try:  # a sick root still gets its audit: the queue is read on its own
                counts = self.root.intake_counts().to_json()
                forgets = self.root.forgets().to_json()
                backlog = self.root.vector_backlog()
            except MemoryEsError as e:
                problem = classify(e).message
            if request.query_params.get("audit"):
                try:
                    taken = datetime.now().astimezone().isoformat(timespec="seconds")
                    self.last_audit = (taken, self.root.health().to_json())
                except MemoryEsError as e:
                    return self.failed(e)
        return self.page("health", counts=counts, backlog=backlog, problem=problem,
                         audit=self.last_audit, worker=worker, forgets=forgets)

    def profile(self, request: Request) -> HTMLResponse:
        """The owner profile and the consolidation summary (``index.md``), as text."""
        try:
            with self.lock:
                profile = self.root.profile().to_json()
            summary = _read(self.root.root / INDEX_FILE)
        except MemoryEsError as e:
            return self.failed(e)
        except UnicodeDecodeError:
            return self.failed(_unreadable(INDEX_FILE))
        return self.page("profile", profile=profile, summary=summary)


def host_zone() -> str:
    """This machine's IANA zone (``$TZ``, ``/etc/timezone``, the ``/etc/localtime`` link),
    else UTC: the journal reads days in a named zone, never a bare offset."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text("utf-8").strip())
    with contextlib.suppress(OSError):
        target = os.readlink("/etc/localtime")
        candidates.append(target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "")
    for name in candidates:
        if name:
            with contextlib.suppress(Exception):  # not a zone this machine knows
                ZoneInfo(name)
                return name
    return "UTC"


def _days_before(day: str, days: int, fallback: date) -> str:
    """``day`` less ``days`` (ISO); a day that is none, or too early, leaves the journal to
    name the problem (the range then starts at ``fallback``'s)."""
    try:
        return (date.fromisoformat(day) - timedelta(days=days)).isoformat()
    except (ValueError, OverflowError):
        return (fallback - timedelta(days=days)).isoformat()


def _unreadable(name: str) -> MemoryEsError:
    return MemoryEsError(f"projection_unreadable: {name} is not UTF-8 text; memory-es rebuild "
                         "writes it again", code="projection_unreadable")


def _read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        return None


BAR_PARTS: Final = ("semantic", "lexicalEvidence", "anchorBonus", "neighbourSupport", "rrfHint",
                    "salience")


def _bars(parts: dict[str, Any]) -> list[tuple[str, float, int]]:
    """(name, value, width in SVG units of 200) of each score part a hit's explanation has;
    a conversation turn scored by a turn model adds its parts as ``turn-*`` (a negative part,
    such as the lean toward asking, is drawn by its size and labelled with its sign)."""
    named = [(name, parts.get(name)) for name in BAR_PARTS]
    turn = parts.get("turnModel")
    if isinstance(turn, dict):
        named += [(f"turn-{name}", value) for name, value in turn.items() if name != "semantic"]
    out = []
    for name, value in named:
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append((name, float(value), max(0, min(200, round(200 * abs(float(value)))))))
    return out
