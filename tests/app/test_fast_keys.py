"""Keys the way SSH and pastes deliver them: two or three in one read, around every screen that
opens over the tutorial, and hundreds of random keys at typing speed (thousands among the
thorough tests). The app must stay alive, never blank, never crash: afterwards `?` shows the
help and `q` quits with status 0.

These run the real `batchtui` on a pseudo-terminal. The random run is 400 keys (2,000 among the
thorough tests, `pytest -m thorough`); BATCHTUI_LONG_FUZZ=N makes it N keys long for a longer soak,
and BATCHTUI_FUZZ_SEED=S draws other keys (seed 14 by default). Keys come at real-time pauses, so
even one seed meets other timings on each run: a crash that came once in twelve runs of seed 14
(a digit in the same read as a step change) was found by running it again and over other seeds.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from pty_session import PtySession, key_bytes

pytestmark = pytest.mark.wall_clock("terminals")  # real terminals and sleeps: started first (tests/conftest.py)

HELP_TITLE = "Help (close it with"
FOOTER_MARK = "next"  # the footer's first label: the frame is complete

# Keys a learner has, except the quitting ones (q, ctrl+q): a random run must not end itself.
# Letters and digits that are not keys go into answer boxes and file prompts.
RANDOM_KEYS = ("n", "p", "t", "h", "c", "g", "m", "space", ".", "+", "-", "r", "w", "o", "tab", "shift+tab",
               "up", "down", "left", "right", "enter", "escape", "1", "2", "3", "4", "?", "ctrl+n",
               "ctrl+p", "ctrl+t", "ctrl+o", "ctrl+d", "ctrl+r", "f1", "x", "7", "backspace", "pagedown")


@pytest.fixture
def launch(tmp_path):
    sessions = []

    def start(*args: str) -> PtySession:
        session = PtySession(list(args), tmp_path / f"state-{len(sessions)}")
        sessions.append(session)
        assert session.wait_for(FOOTER_MARK, timeout=60), session.text()
        return session

    yield start
    for session in sessions:
        session.kill()


def burst(session: PtySession, *keys: str, settle: float = 0.3) -> None:
    """All `keys` in one write, then a moment for the app to act on them."""
    session.write(key_bytes(*keys))
    time.sleep(settle)
    assert session.proc.poll() is None, f"the app ended after {keys}:\n{session.text()}"


def assert_answers_and_quits(session: PtySession) -> None:
    """Alive, not blank, no crash: the help opens, and q then exits with status 0."""
    assert session.proc.poll() is None, session.text()
    for opener in ("question_mark", "f1", "question_mark", "f1"):
        # Escape closes whatever is open (contents, help, a file prompt) or leaves a text box;
        # F1 still opens the help if a box kept the focus.
        session.press("escape")
        time.sleep(0.6)
        session.write(b"?" if opener == "question_mark" else key_bytes("f1"))
        if session.wait_for(HELP_TITLE, timeout=5):
            break
    else:
        pytest.fail(f"the help never opened; the screen shows:\n{session.text()}")
    session.press("q")  # closes the help
    time.sleep(0.6)
    session.press("escape")  # leaves an answer box, if one has the focus
    time.sleep(0.6)
    session.press("q")
    status = session.wait_exit(timeout=5)
    if status is None:  # q went into a text box: the chord quits from anywhere
        session.press("ctrl+q")
        status = session.wait_exit(timeout=20)
    assert status == 0, session.text()
    transcript = session.transcript()
    assert "Traceback" not in transcript and "unexpected error" not in transcript


def crash_reports(session_state) -> list:
    return sorted((session_state / "batchtui").glob("crash-*.txt"))


# Each tuple is written in one go. q only ever closes something, never quits.
CONTENTS = [("t", "enter", "enter"), ("t", "enter", "t"), ("t", "t", "t"), ("t", "q", "t"), ("t", "down", "enter", "enter"),
            ("t", "enter", "n"), ("enter", "t"), ("t", "up", "enter", "ctrl+t"), ("t", "enter"), ("ctrl+t", "enter", "enter")]
HELP = [("?", "?", "?"), ("?", "enter", "?"), ("?", "q", "?"), ("f1", "f1"), ("?", "t", "enter"), ("t", "?"),
        ("enter", "enter"), ("?", "n", "?"), ("f1", "q", "f1", "enter")]
CHEAT_SHEET = [("c", "enter"), ("c", "n", "p"), ("c", "t", "enter", "enter"), ("tab", "right", "right", "right"),
               ("right", "left", "c"), ("g", "c", "g"), ("c", "?", "enter")]
FILE_PROMPTS = [("w", "enter", "enter"), ("o", "enter", "enter"), ("w", "enter", "w", "enter", "enter"),
                ("o", "enter", "o"), ("w", "o"), ("o", "t", "enter", "enter"), ("w", "backspace", "enter", "enter"),
                ("o", "ctrl+t", "enter"), ("w", "enter", "n")]
ANSWER_BOX = [("tab", "1", "2", "enter", "enter"), ("tab", "enter", "ctrl+r"), ("ctrl+d", "ctrl+r", "ctrl+d"),
              ("tab", "9", "enter", "ctrl+n"), ("ctrl+p", "tab", "x", "enter", "t", "enter"),
              ("ctrl+r", "ctrl+r", "ctrl+r"), ("tab", "4", "7", "enter", "ctrl+p", "ctrl+n")]
CHOICES = [("1", "2", "3"), ("1", "n", "p"), ("2", "ctrl+d", "1"), ("3", "t", "enter"), ("space", "1", "space")]


@pytest.mark.parametrize("step, bursts", [
    (1, CONTENTS), (4, HELP), (19, CHEAT_SHEET), (20, FILE_PROMPTS), (9, ANSWER_BOX), (18, CHOICES),
], ids=["contents", "help", "cheat-sheet", "file-prompts", "answer-box", "choices"])
def test_keys_in_one_read_around_every_screen(launch, tmp_path, step, bursts):
    session = launch("--step", str(step))
    for keys in bursts:
        burst(session, *keys)
        # Close whatever the burst left open, so the next burst starts from the tutorial.
        burst(session, "escape", settle=0.4)
    assert_answers_and_quits(session)
    assert crash_reports(tmp_path / "state-0") == []


def test_a_storm_of_resizes_and_a_huge_paste(launch, tmp_path):
    session = launch("--step", "9")
    for cols, rows in [(40, 10), (120, 40), (30, 8), (79, 24), (80, 23), (200, 60), (80, 24)] * 2:
        session.resize(cols, rows)
        time.sleep(0.02)
    time.sleep(1.0)
    # Back at 80x24, the tutorial (each size is laid out in turn: slow on a busy machine).
    assert session.wait_for("next", timeout=90), session.text()
    pasted = ("512 tokens in, 256 out; " * 2000).encode()
    session.write(b"\x1b[200~" + pasted + b"\x1b[201~")  # onto the lesson
    time.sleep(0.5)
    session.press("tab")  # the answer box
    time.sleep(0.3)
    session.write(b"\x1b[200~" + pasted + b"\x1b[201~")
    time.sleep(1.0)
    burst(session, "enter")
    assert_answers_and_quits(session)
    assert crash_reports(tmp_path / "state-0") == []


@pytest.mark.parametrize("keys", [("g", "q"), ("p", "p", "q"), ("n", "q"), ("c", "q"), ("ctrl+r", "ctrl+q")],
                         ids=["playground", "back-twice", "next", "cheat-sheet", "new-question"])
def test_a_quit_in_the_same_read_as_a_step_change_exits_0(launch, tmp_path, keys):
    # Step 9's drill draws its question in a thread: quitting or leaving while it lands once
    # crashed the app on its way out (exit 1).
    session = launch("--step", "9")
    session.press(*keys)
    assert session.wait_exit(timeout=20) == 0, session.text()
    assert crash_reports(tmp_path / "state-0") == []


def test_the_helpdesk_key_in_the_same_read_as_the_step_change_and_twice_in_one_read(launch, tmp_path):
    # g and m together: m arrives before the playground's run has started; it starts it and
    # loads the chat. Then m three times in one read: single turns, the chat, single turns;
    # then m and space: the chat, and the run (running since the step opened) paused.
    # Waits on state (the footer's m label says which traffic is loaded, the status line
    # whether the run is paused), not on m's notice: the next key clears a notice, so "space"
    # in the same read as "m" may clear it before a frame shows it.
    session = launch("--step", "19")
    burst(session, "g", "m", settle=0.5)
    assert session.wait_for("m single-turn", timeout=20), session.text()
    burst(session, "m", "m", "m", settle=0.5)
    assert session.wait_for("m multi-turn", timeout=20), session.text()
    burst(session, "m", "space", settle=0.5)
    assert session.wait_for("m single-turn", timeout=20), session.text()
    assert session.wait_for("paused · t", timeout=5), session.text()
    assert "space run" in session.text()
    assert_answers_and_quits(session)
    assert crash_reports(tmp_path / "state-0") == []


@pytest.mark.parametrize("count", [400, pytest.param(2000, marks=pytest.mark.thorough)])
def test_random_keys_at_typing_speed(launch, tmp_path, count):
    rng = random.Random(int(os.environ.get("BATCHTUI_FUZZ_SEED", 14)))
    count = int(os.environ.get("BATCHTUI_LONG_FUZZ", count))
    session = launch("--step", "1")
    for i in range(count):
        session.write(key_bytes(rng.choice(RANDOM_KEYS)))
        time.sleep(rng.uniform(0.005, 0.015))
        if i % 100 == 99:
            assert session.proc.poll() is None, f"ended after {i + 1} keys:\n{session.text()}"
    time.sleep(1.0)
    assert_answers_and_quits(session)
    assert crash_reports(tmp_path / "state-0") == []


@pytest.mark.parametrize("keys", [("s", "l", "e", "e", "p", ":", "2"), ("enter", "enter"), ("t", "enter", "t")],
                         ids=["typing", "enter-enter", "contents"])
def test_keys_in_one_read_over_the_first_launch_orientation(tmp_path, keys):
    """The orientation closes on any key: several in one read close it once (they crashed the
    app with "Can't pop screen" when each asked it to close)."""
    session = PtySession(["--step", "14"], tmp_path / "state", first_launch=True)
    try:
        assert session.wait_for("Press any key to begin", timeout=60), session.text()
        burst(session, *keys, settle=0.6)
        burst(session, "escape", settle=0.4)
        assert_answers_and_quits(session)
        assert crash_reports(tmp_path / "state") == []
    finally:
        session.kill()


@pytest.mark.parametrize("gap", [0.0, 0.05], ids=["same-read", "50ms-later"])
def test_escape_then_a_key_soon_after_is_both_keys(launch, tmp_path, gap):
    """Esc leaves the dials and n opens the next step, even when n follows within the escape
    delay (Textual reads Esc + n in one read as alt+n) or in the same read."""
    session = launch("--step", "1")
    session.press("tab")
    time.sleep(0.6)
    assert session.wait_for("enter types", timeout=10), session.text()  # a dial has focus
    session.write(b"\x1b")
    time.sleep(gap)
    session.write(b"n")
    assert session.wait_for("Step 2/20", timeout=10), session.text()
    assert_answers_and_quits(session)


def test_the_escape_delay_is_short_unless_the_learner_set_one(tmp_path):
    import subprocess
    import sys

    script = ("import argparse, os, sys\n"
              "from batchtui import tui\n"
              "parser = argparse.ArgumentParser(); tui.add_app_arguments(parser)\n"
              "tui.run_app(parser.parse_args(['--fps', '0']))  # refused: returns at once\n"
              "import textual.constants as c; print(c.ESCAPE_DELAY)\n")
    for env, expected in (({}, "0.025"), ({"ESCDELAY": "60"}, "0.06")):
        environment = {k: v for k, v in os.environ.items() if k != "ESCDELAY"} | env
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                             cwd=tmp_path, timeout=60)
        assert out.stdout.strip().splitlines()[-1] == expected, out
