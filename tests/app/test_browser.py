"""The browser learner: the tutorial served by `batchtui web` on 127.0.0.1 and used in a real,
headless Chromium driven by Playwright, as a person would: read step 1, press n, read step 2
(the browser's own Origin is the one `batchtui web` takes a session from).

Chromium's WebGL is off, so xterm.js draws the terminal as DOM text the test reads. Debian's
`chromium` package is the browser (Playwright's own download is not used); `.ci/run` installs
it. Skipped, saying why, only where the browser or the Python packages are truly missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batchtui.progress import Progress, ProgressStore

CHROMIUM = os.environ.get("BATCHTUI_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-webgl", "--disable-dev-shm-usage"]


def _missing() -> str | None:
    for module, extra in (("playwright", "pip install playwright"), ("textual_serve", 'pip install ".[serve]"')):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed ({extra}; .ci/run installs it)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    return None


pytestmark = [pytest.mark.skipif(_missing() is not None, reason=_missing() or ""),
              pytest.mark.wall_clock("terminals")]  # a browser and a server: started first (tests/conftest.py)


@pytest.fixture
def served(tmp_path):
    """`batchtui web` on a loopback port the system gives it (--port 0: no other test can take it
    between choosing and binding); its URL, from its first line, said once it listens."""
    state = tmp_path / "state"
    ProgressStore(state / "batchtui").save(Progress())  # seen the orientation: step 1 in sight
    env = dict(os.environ, XDG_STATE_HOME=str(state))
    server = subprocess.Popen(
        [sys.executable, "-m", "batchtui", "web", "--port", "0"], env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        line = server.stdout.readline()  # its first line, or the error it ended with
        if "batchtui web: the tutorial at http://127.0.0.1:" not in line:
            pytest.fail(f"batchtui web did not start: {line!r}")
        yield line.split(" at ")[1].split(" ")[0].rstrip("/")
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait()


def screen_text(page) -> str:
    return page.evaluate("() => Array.from(document.querySelectorAll('.xterm-rows > div'))"
                         ".map(row => row.textContent).join('\\n')")


def wait_for_text(page, words: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen_text(page)
        if words in text:
            return text
        page.wait_for_timeout(250)
    raise AssertionError(f"{words!r} never showed; the page's terminal reads:\n{text}")


def test_a_learner_in_a_browser_reads_step_1_presses_n_and_reads_step_2(served, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # A fresh profile of its own (Playwright passes it as --user-data-dir).
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 800})
        try:
            page = browser.new_page()
            page.goto(served, wait_until="domcontentloaded")
            first = wait_for_text(page, "Step 1/20")
            assert "One request at a time" in first
            page.locator(".xterm").first.click()  # the terminal takes the keys
            page.keyboard.press("n")
            second = wait_for_text(page, "Step 2/20")
            assert "Step 1/20" not in second
            shot = tmp_path / "step-2.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
