"""Honest endings: a quit is 0; an error nothing caught restores the terminal, says in one line
where its report is, keeps the progress and exits 1; a terminal that goes away (with or without
SIGHUP), a closed textual-serve connection, SIGTERM: the app ends, at once, never an orphan."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import pytest

from pty_session import PtySession

pytestmark = pytest.mark.wall_clock("terminals")  # real terminals and sleeps: started first (tests/conftest.py)

FOOTER_MARK = "next"
LEAVE_ALTERNATE_SCREEN = "\x1b[?1049l"

# The tutorial with a fault planted in the hint key (`h`): a test seam outside the product.
# The error's message and a local variable are huge: neither may reach the terminal.
FAULTY_BATCHTUI = """
import sys
from batchtui.cli import main
from batchtui.screens.tutorial import TutorialScreen

def broken_hint(self):
    learner_notes = "N" * 2_000_000
    raise RuntimeError("planted fault " + "x" * 300_000)

TutorialScreen.action_hint = broken_hint
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def launch(tmp_path):
    sessions = []

    def start(*args: str, command: list[str] | None = None) -> PtySession:
        session = PtySession(list(args), tmp_path, command=command)
        sessions.append(session)
        assert session.wait_for(FOOTER_MARK, timeout=60), session.text()
        return session

    yield start
    for session in sessions:
        session.kill()


def after_the_app(session: PtySession) -> str:
    """What the terminal got once the app had restored it, escape sequences removed."""
    transcript = session.transcript()
    assert LEAVE_ALTERNATE_SCREEN in transcript, "the terminal was not restored"
    tail = transcript.rsplit(LEAVE_ALTERNATE_SCREEN, 1)[1]
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-B]|\x1b[=>]", "", tail)


def test_the_terminal_has_read_what_a_process_wrote_last_once_it_has_exited(tmp_path):
    """The harness these tests read the app through: once a process has exited, its last bytes
    are in the transcript (the exit did not wait for them to be read, and on a busy machine
    the tests that read the app's closing line at once missed it)."""
    for _ in range(5):
        session = PtySession([], tmp_path, first_launch=True, command=[
            sys.executable, "-c", "import sys; sys.stdout.write('x' * 20000 + 'END'); sys.stdout.flush()"])
        try:
            assert session.wait_exit(timeout=20) == 0
            assert session.transcript().endswith("END")
        finally:
            session.kill()


def test_q_quits_with_status_zero_and_says_which_steps_are_still_open(launch):
    session = launch("--step", "2")
    session.press("q")
    assert session.wait_exit(timeout=20) == 0
    lines = after_the_app(session).strip().splitlines()
    assert " ".join(line.strip() for line in lines) == (
        "batchtui: Still open: steps 1-20. `batchtui` opens where you left off; `batchtui steps` lists them.")
    # Wrapped to the terminal at spaces, a command to type never split across two lines.
    assert all(len(line.rstrip()) < 80 and line.count("`") % 2 == 0 for line in lines), lines


def test_an_error_nobody_caught_exits_1_with_one_line_and_a_capped_report(launch, tmp_path):
    session = launch("--step", "3", command=[sys.executable, "-c", FAULTY_BATCHTUI])
    session.press("n")  # to step 4: saved as the learner's place
    assert session.wait_for("Step 4/20")
    time.sleep(0.5)
    session.press("h")
    assert session.wait_exit(timeout=30) == 1

    lines = [line for line in after_the_app(session).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "unexpected error (RuntimeError)" in lines[0] and "progress is saved" in lines[0]
    report = (tmp_path / "batchtui").glob("crash-*.txt")
    report = next(report)
    assert str(report) in lines[0]

    text = report.read_text()
    assert "planted fault" in text and "broken_hint" in text  # the error and where it happened
    assert len(text) < 80_000  # the 300,000-character message is cut...
    assert "NNNNNNNNNN" not in text  # ...and local variables are never written
    assert "xxxx" not in session.transcript()  # nor anything of it on the terminal
    saved = json.loads((tmp_path / "batchtui" / "progress.json").read_text())
    assert saved["current_step"] == 4


# The tutorial with a fault planted where the progress file is read, at start-up.
FAULTY_START = """
import sys
from batchtui.cli import main
from batchtui.progress import ProgressStore

def broken_load(self):
    raise RuntimeError("planted fault at start-up")

ProgressStore.load = broken_load
sys.exit(main(sys.argv[1:]))
"""


def test_an_error_before_the_progress_is_read_writes_nothing_over_it(tmp_path):
    """The crash path saved the app's blank default over the learner's file and said "Your
    progress is saved"."""
    from batchtui.progress import Progress, ProgressStore

    store = ProgressStore(tmp_path / "batchtui")
    store.save(Progress(current_step=7, completed={1, 2, 3, 4, 5, 6}, answers={2: "167"}))
    before = store.path.read_bytes()
    session = PtySession(["--step", "3"], tmp_path, command=[sys.executable, "-c", FAULTY_START])
    try:
        assert session.wait_exit(timeout=60) == 1, session.text()
        lines = [line for line in after_the_app(session).splitlines() if line.strip()]
        assert len(lines) == 1 and "unexpected error (RuntimeError)" in lines[0], lines
        assert "Nothing was written over your saved progress" in lines[0] and "is saved" not in lines[0]
        assert store.path.read_bytes() == before
    finally:
        session.kill()


@pytest.mark.parametrize("paused", [False, True], ids=["running", "paused"])
def test_a_terminal_that_goes_away_without_sighup_ends_the_app(launch, paused):
    # The pty is not the app's controlling terminal (see PtySession): closing it sends no
    # SIGHUP, the app only sees its input hang up, as after many dropped SSH connections.
    session = launch("--step", "6")
    if paused:
        session.press("space")
        time.sleep(0.5)
    closed = time.monotonic()
    session.close_terminal()
    status = session.wait_exit(timeout=10)
    took = time.monotonic() - closed
    assert status == 129, status
    assert took < 2.0, f"{took:.2f} s"


def test_sighup_ends_the_app(launch):
    session = launch("--step", "6")
    session.proc.send_signal(signal.SIGHUP)
    assert session.wait_exit(timeout=5) in (-signal.SIGHUP, 128 + signal.SIGHUP)


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"])
def test_a_stop_signal_restores_the_terminal_and_exits_128_plus_its_number(launch, signum, status):
    session = launch("--step", "6")
    session.proc.send_signal(signum)
    assert session.wait_exit(timeout=10) == status
    assert after_the_app(session).strip() == ""


def test_a_tutorial_without_a_terminal_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-m", "batchtui"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, XDG_STATE_HOME=str(tmp_path)))
    assert done.returncode == 2
    assert "reads its keys from a terminal" in done.stderr and "Traceback" not in done.stderr


# -- textual-serve: the app runs under Textual's web driver, its terminal a pair of pipes


def _web_app(tmp_path) -> subprocess.Popen:
    env = dict(os.environ, TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver", COLUMNS="80", ROWS="24",
               XDG_STATE_HOME=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "batchtui", "--step", "6"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen, end = b"", time.monotonic() + 60
    while FOOTER_MARK.encode() not in seen and time.monotonic() < end:
        if select.select([proc.stdout], [], [], 0.1)[0]:
            seen += os.read(proc.stdout.fileno(), 65536)
    assert FOOTER_MARK.encode() in seen
    return proc


def _meta(payload: dict) -> bytes:
    data = json.dumps(payload).encode()
    return b"M" + len(data).to_bytes(4, "big") + data


def _ends_within(proc: subprocess.Popen, seconds: float) -> int | None:
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def test_a_closed_textual_serve_connection_ends_the_app(tmp_path):
    proc = _web_app(tmp_path)
    proc.stdin.write(_meta({"type": "quit"}))  # what textual-serve sends when the page closes
    proc.stdin.flush()
    assert _ends_within(proc, 10) == 0


@pytest.mark.parametrize("pipe", ["stdin", "stdout"])
def test_a_killed_textual_serve_ends_the_app(tmp_path, pipe):
    proc = _web_app(tmp_path)
    getattr(proc, pipe).close()  # the server is gone: its end of the pipes closes
    assert _ends_within(proc, 5) == 129


def test_through_a_real_textual_serve(tmp_path):
    """The same two endings through textual-serve itself (an optional extra: skipped without it)."""
    pytest.importorskip("textual_serve")
    aiohttp = pytest.importorskip("aiohttp")
    import asyncio

    # A launcher whose path names this test, so its processes can be found and nothing else.
    launcher = tmp_path / f"batchtui-under-serve-{os.getpid()}.py"
    launcher.write_text("import sys\nfrom batchtui.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    command = f"{sys.executable} {launcher} --step 6"
    # The server listens on a socket this test bound and listens on first (its descriptor passed
    # down, given to the aiohttp.web.run_app that Server.serve calls): no other test can take the
    # port in between, and a connection made before the server is up waits in the queue.
    serve = ("import socket, sys\nfrom aiohttp import web\nfrom textual_serve.server import Server\n"
             "listening = socket.socket(fileno=int(sys.argv[1]))\nrun_app = web.run_app\n"
             "web.run_app = lambda app, host, port, **kw: run_app(app, sock=listening, **kw)\n"
             f"Server({command!r}, host='127.0.0.1').serve()\n")
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path))

    def apps() -> list[int]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if str(launcher).encode() in argv and argv[0] != b"/bin/sh":
                found.append(int(pid))
        return found

    async def visit(server: subprocess.Popen, port: int, leave: str) -> float:
        async with aiohttp.ClientSession() as client:
            ws = await asyncio.wait_for(client.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24"), 60)
            received = 0
            while received < 2000:
                message = await ws.receive(timeout=60)
                received += len(message.data or b"")
            assert apps(), "no app process while the page is open"
            if leave == "close the page":
                await ws.close()
            else:
                server.kill()
            left = time.monotonic()
            # Whether the app ends is the point, not how fast: a busy machine takes seconds.
            while apps() and time.monotonic() - left < 30:
                await asyncio.sleep(0.05)
            return time.monotonic() - left

    for leave in ("close the page", "kill the server"):
        with socket.create_server(("127.0.0.1", 0)) as listening:
            server = subprocess.Popen([sys.executable, "-c", serve, str(listening.fileno())], env=env,
                                      pass_fds=[listening.fileno()], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            try:
                took = asyncio.run(visit(server, listening.getsockname()[1], leave))
            finally:
                server.kill()
                server.wait()
        assert not apps(), f"{leave}: the app outlived it ({took:.1f} s)"
