"""The web inspector in a real browser: headless Chromium driven through WebDriver (selenium and
Debian's ``chromium`` with ``chromium-driver``, which ``.ci/run`` installs when missing).

Every page loads after the one-time login link with no console error, shows what the API
answers, and works from the keyboard (``/`` to search, ``j``/``k`` through the lines, Enter to
open one); a memory written as ``<script>alert(1)</script>`` shows as text and runs nothing.
A screenshot of each page goes to ``$MEMORY_ES_SCREENSHOTS`` (CI keeps them) or the test's
folder. Without the browser the module is skipped, unless ``MEMORY_ES_REQUIRE_BROWSER`` is set
(CI sets it), when that is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers_web import FIXTURE_DAY, MARKUP, Served, make_root, serve
from memory_es import MemoryRoot

DRIVER = shutil.which("chromedriver")
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
if DRIVER is None or BROWSER is None:
    if os.environ.get("MEMORY_ES_REQUIRE_BROWSER"):
        pytest.fail("MEMORY_ES_REQUIRE_BROWSER is set but chromium or chromedriver is missing "
                    "(apt-get install chromium chromium-driver)", pytrace=False)
    pytest.skip("no chromium/chromedriver here (apt-get install chromium chromium-driver; "
                ".ci/run does)", allow_module_level=True)

from selenium import webdriver  # noqa: E402  (only once the browser is known to be here)
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_S = 60  # a slow machine is slow, not broken


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    running = serve(make_root(tmp_path_factory.mktemp("browser") / "root"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(BROWSER)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                 "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        driver.get(f"http://127.0.0.1:{served.port}{served.login}")
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("MEMORY_ES_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screens")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def visit(driver: Any, served: Served, path: str) -> None:
    driver.get(f"http://127.0.0.1:{served.port}{path}")
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete")


def console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


PAGES = {
    "timeline": f"/?from={FIXTURE_DAY}&through={FIXTURE_DAY}&tz=UTC",
    "search": "/search?q=Atlas+launch",
    "memory": "/memory/809f989c12b0",
    "people": "/people?entity=81e8021922b4669ef20cf49c3ab759de6a871c37c5d1a270e53941247941084d",
    "health": "/health?audit=1",
    "profile": "/profile",
}


@pytest.mark.slow
def test_every_page_loads_clean_and_shows_what_the_api_answers(
        browser: Any, served: Served, shots: Path) -> None:
    """Signed in by the login link (the session cookie), each page loads with no console
    error (the stylesheet, the script and the icon all pass the CSP) and its content is the
    API's; its screenshot is kept."""
    root = MemoryRoot.open(served.root)
    for name, path in PAGES.items():
        visit(browser, served, path)
        assert console_errors(browser) == [], name
        assert browser.find_element(By.TAG_NAME, "h1").text, name
        shot = shots / f"web-{name}.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000, name
    visit(browser, served, PAGES["search"])
    shown = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".hit a.text")]
    assert shown == [h.text for h in root.search("Atlas launch", 10).recall.hits]
    visit(browser, served, PAGES["timeline"])
    lines = browser.find_elements(By.CSS_SELECTOR, "li.line a.text")
    journal = root.journal({"fromDate": FIXTURE_DAY, "throughDate": FIXTURE_DAY,
                            "timeZone": "UTC", "limit": 25}).to_json()
    assert [a.text for a in lines] == [e["text"] for e in journal["entries"]]


@pytest.mark.slow
def test_the_keyboard_moves_through_the_pages(browser: Any, served: Served) -> None:
    """``/`` opens Search from any page and focuses the question there; a typed question and
    Enter recall; ``j`` selects the next line and focuses its link, ``k`` the previous one,
    and Enter opens it."""
    visit(browser, served, PAGES["timeline"])
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("/")
    WebDriverWait(browser, WAIT_S).until(lambda d: "/search" in d.current_url)
    # the address changes before the new page has loaded and autofocused its box
    WebDriverWait(browser, WAIT_S).until(
        lambda d: d.switch_to.active_element.get_attribute("id") == "q")
    box = browser.switch_to.active_element
    box.send_keys("Atlas launch", Keys.ENTER)
    WebDriverWait(browser, WAIT_S).until(lambda d: "q=Atlas" in d.current_url)
    hits = browser.find_elements(By.CSS_SELECTOR, ".hit")
    assert len(hits) >= 2
    browser.find_element(By.TAG_NAME, "h1").click()  # leave the search box
    page = browser.find_element(By.TAG_NAME, "body")
    page.send_keys("j")
    page.send_keys("j")
    page.send_keys("k")
    selected = browser.find_elements(By.CSS_SELECTOR, "[data-line].selected")
    assert len(selected) == 1 and selected[0] == browser.find_elements(By.CSS_SELECTOR, ".hit")[0]
    focused = browser.switch_to.active_element
    target = focused.get_attribute("href")
    assert target and "/memory/" in target
    focused.send_keys(Keys.ENTER)
    WebDriverWait(browser, WAIT_S).until(lambda d: "/memory/" in d.current_url)
    assert console_errors(browser) == []


@pytest.mark.slow
def test_a_memory_written_as_markup_runs_nothing(browser: Any, served: Served) -> None:
    """The Remember whose text is a script tag shows that text and raises no alert."""
    found = MemoryRoot.open(served.root).search("bold plan", 1).recall.hits[0]
    visit(browser, served, f"/memory/{found.id}")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert browser.find_element(By.CSS_SELECTOR, "blockquote.memory-text").text == MARKUP
    assert browser.find_elements(By.TAG_NAME, "b") == []
    assert console_errors(browser) == []
