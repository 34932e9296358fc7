"""``memory-es serve-web``, the read-only web inspector, as a real process on 127.0.0.1:
the gate (token, login link, sessions, Host, Origin, no writing verb), every page against what
the Python API answers for the same question, escaping, and bad input (one page, its status,
no traceback). The browser-driven checks are in tests/test_web_browser.py."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from helpers_index import active_index_path
from helpers_web import FIXTURE_DAY, MARKUP, Served, make_root, serve
from memory_es import MemoryRoot
from memory_es.web.guard import POLICY

PAGES = ["/", "/search?q=Atlas+launch", "/people", "/health", "/profile",
         "/memory/809f989c12b0", "/static/style.css", "/static/keys.js"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = make_root(tmp_path_factory.mktemp("web") / "root")
    running = serve(root)
    try:
        yield running
    finally:
        err = running.stop()
        assert "Traceback" not in err, err  # nothing a test sent broke a handler


def texts(body: str, css_class: str) -> list[str]:
    """The text of every link with ``css_class`` in a page, unescaped."""
    return [unescape(t) for t in re.findall(rf'class="{css_class}">([^<]*)</a>', body)]


def test_every_page_needs_the_token_or_a_signed_in_session(served: Served) -> None:
    """No token: 401 on every page (static files too); the bearer token opens each; the login
    link starts a session once (303 to the timeline with an HttpOnly, SameSite=Strict
    cookie) and is refused the second time; the session's cookie opens the pages; a made-up
    cookie does not."""
    for page in PAGES:
        assert served.get(page, auth=False)[0] == 401, page
        assert served.get(page)[0] == 200, page
    status, headers, _ = served.get(served.login, auth=False)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    session = cookie.split(";")[0]
    assert served.get(served.login, auth=False)[0] == 401  # one time only
    assert served.get("/", auth=False, headers={"Cookie": session})[0] == 200
    assert served.get("/", auth=False,
                      headers={"Cookie": "memory_es_session=made-up"})[0] == 401
    assert served.get("/", auth=False,
                      headers={"Authorization": f"Bearer {served.token}x"})[0] == 401


def test_a_foreign_host_or_origin_is_refused(served: Served) -> None:
    """DNS rebinding: a Host that is not the bound address is 421, an Origin from another
    site 403, even with the token; the loopback names and the inspector's own origin pass."""
    assert served.get("/", headers={"Host": f"evil.example:{served.port}"})[0] == 421
    assert served.get("/", headers={"Origin": "http://evil.example"})[0] == 403
    assert served.get("/", headers={"Origin": "null"})[0] == 403
    for name in ("localhost", "127.0.0.1"):
        assert served.get("/", headers={"Host": f"{name}:{served.port}",
                                        "Origin": f"http://{name}:{served.port}"})[0] == 200


def test_no_route_accepts_a_write_and_nothing_is_written(served: Served) -> None:
    """POST, PUT, DELETE and PATCH are 405 on every route (with or without the token) and the
    journal does not move."""
    before = MemoryRoot.open(served.root).health().journal_position
    for page in [*PAGES, served.login, "/login/anything"]:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            status, headers, _ = served.get(page, method=method)
            assert status == 405 and headers["allow"] == "GET, HEAD", (page, method)
    assert MemoryRoot.open(served.root).health().journal_position == before


def test_every_answer_carries_the_security_headers(served: Served) -> None:
    """A policy without inline script or style, no framing, no referrer, no cache, on pages
    and refusals alike."""
    assert "unsafe-inline" not in POLICY and "script-src 'self'" in POLICY
    for page in ("/", "/nope", "/memory/zz"):
        for auth in (True, False):
            headers = served.get(page, auth=auth)[1]
            assert headers["content-security-policy"] == POLICY
            assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
    assert "<script>" not in served.get("/")[2].replace('<script src="/static/keys.js" defer>', "")


def test_the_pages_show_what_the_api_answers(served: Served) -> None:
    """Timeline, search with explain, a memory, people, health and profile against the same
    reads through MemoryRoot."""
    root = MemoryRoot.open(served.root)
    body = served.get(f"/?from={FIXTURE_DAY}&through={FIXTURE_DAY}&tz=UTC")[2]
    journal = root.journal({"fromDate": FIXTURE_DAY, "throughDate": FIXTURE_DAY,
                            "timeZone": "UTC", "limit": 25}).to_json()
    assert texts(body, "text") == [e["text"] for e in journal["entries"]]
    assert journal["entries"] and f"<h2>{FIXTURE_DAY}</h2>" in body

    body = served.get("/search?q=Atlas+launch")[2]
    recalled = root.search("Atlas launch", 10, explain=True).to_json()
    assert texts(body, "text") == [h["text"] for h in recalled["results"]]
    scores = re.findall(r'class="score">([0-9.]+)<', body)
    assert scores == [f"{h['score']:.3f}" for h in recalled["results"]]
    assert body.count('class="bar bar-lexicalEvidence"') == len(recalled["results"])
    assert recalled["results"][1]["currentness"] == "superseded" and "superseded</span>" in body

    detail = root.show("809f989c12b0").to_json()
    body = served.get("/memory/809f989c12b0")[2]
    assert unescape(detail["text"]) in unescape(body)
    positions = re.findall(r"<tr><td>(\d+)</td>", body)
    assert positions == [str(e["position"]) for e in detail["events"]]
    assert all(link["id"] in body for link in detail["supersededBy"])
    steps = re.findall(r'<tr class="step"><td>(\d+)</td><td>[^<]*</td><td>([^<]*)</td><td>'
                       r'<span class="badge status-([a-z]+)">', body)
    assert steps == [(str(s["position"]), s["from"] or "–", s["to"])
                     for s in detail["statusHistory"]] and len(steps) >= 2

    graph = [json.loads(line) for line in (served.root / "graph.jsonl").read_text().splitlines()]
    names = [row["name"] for row in sorted(
        (row for row in graph if row["kind"] == "entity"),
        key=lambda row: (row["name"].casefold(), row["id"]))]  # the layout's stable order
    body = served.get("/people")[2]
    assert [unescape(n) for n in re.findall(r'class="node-label">([^<]*)<', body)] == names
    assert body.count('class="edge"') == sum(row["kind"] == "relation" for row in graph)

    counts = root.inspect().to_json()["counts"]
    body = served.get("/health?audit=1")[2]
    for key, value in counts.items():
        assert f"<th>{key}</th><td>{value}</td>" in body
    assert "<strong class=\"status-clean\">clean</strong>" in body

    body = served.get("/profile")[2]  # index.md rendered: its headings and list items
    summary = (served.root / "index.md").read_text("utf-8").splitlines()
    headings = [line.lstrip("#").strip() for line in summary if line.startswith("#")]
    items = [line[2:] for line in summary if line.startswith("- ")]
    assert [unescape(h) for h in re.findall(r"<h[12]>([^<]*)</h[12]>",
                                            body.split('class="markdown summary"')[1])] == \
        headings
    assert [unescape(i) for i in re.findall(r"<li>([^<]*)</li>", body)] == items and items


def test_a_memory_written_as_markup_renders_as_text(served: Served) -> None:
    """``<script>alert(1)</script>`` reaches every page it is on as escaped text."""
    found = MemoryRoot.open(served.root).search("bold plan", 1).recall.hits[0]
    assert found.text == MARKUP
    for page in (f"/memory/{found.id}", "/search?q=bold+plan", "/"):
        body = served.get(page)[2]
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, page
        assert "<script>alert" not in body and "<b>bold" not in body


@pytest.mark.parametrize("page,status,code", [
    ("/memory/zz", 400, "invalid"), ("/memory/ffffffffffff", 404, "memory_not_found"),
    ("/search?q=x&as_of=yesterday", 400, "recall_invalid_as_of"),
    ("/?from=2026-13-01", 400, "journal_"), ("/?from=2026-01-01&through=2026-06-30", 400,
                                               "journal_"),
    ("/?cursor=forged", 400, "journal_cursor"), ("/nope", 404, None)])
def test_bad_input_is_one_page_with_its_status(served: Served, page: str, status: int,
                                               code: str | None) -> None:
    got, _, body = served.get(page)
    assert got == status, body
    if code is not None:
        assert code in body


def test_bad_options_and_token_files_are_one_line(tmp_path: Path) -> None:
    """A port that is not one, a token file others can read, a root that is not there: one
    line, exit 2 (usage, bad token) or 1 (no root), before anything is served."""
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "memory_es.cli", "serve-web", *argv],
                              capture_output=True, text=True, timeout=60)

    done = run("--root", str(tmp_path), "--port", "0")
    assert done.returncode == 2 and "--port 0" in done.stderr
    token = tmp_path / "token"
    token.write_text("a" * 40)
    token.chmod(0o644)
    done = run("--root", str(tmp_path / "none"), "--token-file", str(token))
    assert done.returncode == 2 and "web_token_unsafe" in done.stderr
    token.chmod(0o600)
    done = run("--root", str(tmp_path / "none"), "--token-file", str(token))
    assert done.returncode != 0 and "no memory root" in done.stderr
    for d in (done,):
        assert d.stderr.count("\n") == 1 and "Traceback" not in d.stderr


def test_a_search_that_finds_nothing_says_so(served: Served) -> None:
    """No hit, or a moment before the first memory: the page says nothing was found (and
    when the answer is as of an instant, which one), never an error."""
    status, _, body = served.get("/search?q=zebra+quantum+xylophone")
    assert status == 200 and "Nothing found." in body
    status, _, body = served.get("/search?q=Atlas&as_of=2026-05-04T11:00%2B02:00")
    assert status == 200 and "Nothing found." in body and "as of 2026-05-04T09:00:00.000Z" in body


def test_the_gate_is_strict_about_hosts_cookies_and_the_login_link(
        tmp_path: Path) -> None:
    """The port is part of the address (another one is 421), two Host headers are 421, a
    session cookie among other apps' odd cookies still counts, and a HEAD of the login link
    (a link preview) does not use it up."""
    running = serve(make_root(tmp_path / "root"))
    try:
        assert running.get("/", headers={"Host": f"127.0.0.1:{running.port + 1}"})[0] == 421
        assert running.get("/", headers={"Origin": "http://127.0.0.1:1"})[0] == 403
        conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=60)
        conn.putrequest("GET", "/", skip_host=True)
        for host in ("evil.example", f"127.0.0.1:{running.port}"):
            conn.putheader("Host", host)
        conn.putheader("Authorization", f"Bearer {running.token}")
        conn.endheaders()
        assert conn.getresponse().status == 421
        conn.close()
        assert running.get(running.login, method="HEAD", auth=False)[0] == 405
        status, headers, _ = running.get(running.login, auth=False)
        assert status == 303
        session = headers["set-cookie"].split(";")[0]
        odd = f'prefs={{"a":1}}; name=John Doe; {session}; x=a\\b'
        assert running.get("/", auth=False, headers={"Cookie": odd})[0] == 200
    finally:
        assert "Traceback" not in running.stop()
    again = serve(running.root)  # a restart: the same token, so the session goes on
    try:
        assert again.get("/", auth=False, headers={"Cookie": session})[0] == 200
        forged = session[:-1] + ("0" if session[-1] != "0" else "1")
        assert again.get("/", auth=False, headers={"Cookie": forged})[0] == 401
        assert again.get("/", auth=False,
                         headers={"Cookie": "memory_es_session=é.1.ab"})[0] == 401
    finally:
        assert "Traceback" not in again.stop()


def test_a_sick_root_still_gets_its_pages(served: Served) -> None:
    """A projection file that is not UTF-8 is one page saying so (503); an index SQLite
    cannot read leaves the health page up, with the audit naming it; an unknown route is
    the inspector's own 404 page; a day far out of range is 400."""
    graph = served.root / "graph.jsonl"
    kept = graph.read_bytes()
    graph.write_bytes(b"\xff\xfe not utf-8\n")
    try:
        status, _, body = served.get("/people")
        assert status == 503 and "projection_unreadable" in body
    finally:
        graph.write_bytes(kept)
    index = active_index_path(served.root)
    original = index.read_bytes()
    index.write_bytes(b"\x00" * len(original))
    try:
        status, _, body = served.get("/health?audit=1")
        assert status == 200 and "index_unreadable" in body
    finally:
        index.write_bytes(original)
    status, headers, body = served.get("/no/such/page")
    assert status == 404 and headers["content-type"].startswith("text/html")
    assert "no such page" in body
    assert served.get("/?through=0001-01-01")[0] == 400


def test_markdown_keeps_memory_words_as_text() -> None:
    """The profile's and index.md's Markdown: raw HTML shown as text, no image fetched, no
    ``javascript:`` link, a line with a bidirectional override withheld whole."""
    from memory_es.web.markdown import render

    html = str(render("# Plans\n\n- <script>alert(1)</script> and <b>bold</b>\n"
                      "- ![pixel](http://tracker.example/p.png)\n"
                      "- [click](javascript:alert(1)) [ok](https://example.org/) "
                      "[d](data:image/png;base64,AAAA) <data:image/png;base64,AAAA>\n"
                      "- evil \u202eflipped\n"))
    assert "<h1>Plans</h1>" in html and html.count("<li>") == 4
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert "<b>" not in html and "<img" not in html
    assert 'href="javascript' not in html and '<a href="https://example.org/">ok</a>' in html
    assert 'href="data:' not in html
    assert "\u202e" not in html and "[unsafe text withheld]" in html


def test_a_large_graph_draws_the_most_connected_or_around_a_chosen_entity() -> None:
    """Past 200 entities the picture keeps the most connected (a stable choice, in name
    order on the circle); choosing an entity left out draws it with its neighbours."""
    from memory_es.web.graph import MAX_DRAWN, Entity, Relation, layout

    entities = tuple(Entity(f"e{i:03d}", f"name {i:03d}", "person", ("m",) * (i % 3))
                     for i in range(MAX_DRAWN + 50))
    hub, loner, friend = entities[-1], entities[-2], entities[-3]
    relations = (*(Relation(hub.id, e.id, "knows", "m") for e in entities[:5]),
                 Relation(loner.id, friend.id, "knows", "m"))
    graph = layout(entities, relations)
    drawn = [n.entity.id for n in graph.nodes]
    assert len(drawn) == MAX_DRAWN and graph.partial and graph.focus is None
    assert hub.id in drawn and loner.id in drawn and friend.id in drawn  # related ones first
    assert drawn == sorted(drawn)  # name order on the circle, as names sort here
    assert layout(entities, relations) == graph  # the same graph, the same picture
    no_lines = [e.id for e in entities if not e.memories and e.id not in (
        hub.id, loner.id, friend.id, *(e.id for e in entities[:5]))]
    assert not set(no_lines[-5:]) & set(drawn)  # fewest lines, no relation: left out
    around = layout(entities, relations, focus=entities[0].id)
    assert [n.entity.id for n in around.nodes] == [entities[0].id, hub.id]
    assert around.focus == entities[0].id and len(around.edges) == 1
    alone = layout(entities, relations, focus=no_lines[-1])
    assert [n.entity.id for n in alone.nodes] == [no_lines[-1]] and not alone.edges


def test_an_entity_card_lists_its_lines(served: Served) -> None:
    graph = [json.loads(line) for line in (served.root / "graph.jsonl").read_text().splitlines()]
    entity = next(row for row in graph if row["kind"] == "entity" and row["name"] == "Morgan")
    ids = [row["memory"] for row in graph
           if row["kind"] == "association" and row["entity"] == entity["id"]]
    expected = [m.text for m in MemoryRoot.open(served.root).memories(ids)]
    status, _, body = served.get(f"/people?entity={entity['id']}")
    assert status == 200 and expected
    card = body.split('<section class="card">')[1].split("</section>")[0]
    assert texts(card, "text") == expected
    assert 'id="drawn">Drawn around Morgan' in body


def test_sessions_are_bounded_and_signed_with_the_token() -> None:
    """At most ``limit`` at once, idle ones end, none outlives its lifetime; a cookie issued
    before a restart (another table, the same token) is taken, under another token not."""
    from memory_es.web.guard import Sessions

    now = [1_000_000.0]
    table = Sessions("tok", limit=2, idle=60, lifetime=3600, clock=lambda: now[0])
    first, second, third = table.start(), table.start(), table.start()
    assert len(table) == 2 and table.valid(third) and table.valid(second)
    restarted = Sessions("tok", limit=2, idle=60, lifetime=3600, clock=lambda: now[0])
    assert restarted.valid(first)  # signed by the same token: it comes back after a restart
    assert not Sessions("other", clock=lambda: now[0]).valid(first)
    now[0] += 61
    assert not table.valid(third) and not restarted.valid(first)  # idle too long
    assert Sessions("tok", clock=lambda: now[0]).valid(first)  # a restart: idle time afresh
    now[0] += 3600
    assert not Sessions("tok", lifetime=3600, clock=lambda: now[0]).valid(first)  # too old
    for bad in ("", "x", "a.b.c", first.replace(".", "!"), first + "0", "é" + first):
        assert not Sessions("tok", clock=lambda: now[0]).valid(bad), bad


def test_an_ended_session_stays_ended() -> None:
    """A session ended for idling, or pushed out by the bound, is refused every time after,
    though its signature still holds (it does not slip back in as a restart's would)."""
    from memory_es.web.guard import Sessions

    now = [1_000_000.0]
    table = Sessions("tok", limit=2, idle=60, lifetime=3600, clock=lambda: now[0])
    idle, pushed = table.start(), table.start()
    now[0] += 61
    assert not table.valid(idle) and not table.valid(idle) and not table.valid(pushed)
    kept = table.start()
    evicted, newest = table.start(), table.start()  # a third pushes the oldest out
    assert not table.valid(kept) and not table.valid(kept)
    assert table.valid(evicted) and table.valid(newest) and len(table) == 2
