"""Where each key lands, on a real terminal: keys that arrive in one read (SSH delivers a fast
typist's keys so) end where the same keys typed slowly end; a guess typed as a step opens is
made, and answered; a step change never shows two steps at once.

These run the real `batchtui` on a pseudo-terminal and wait on what the screen shows, with
generous timeouts for a loaded machine. (`test_fast_keys.py` checks that the app survives
storms of keys; these check where the keys go.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from pty_session import PtySession, key_bytes
from sim.deployments import model_choices
from sim.scenario import Scenario

pytestmark = pytest.mark.wall_clock("terminals")  # real terminals and sleeps: started first (tests/conftest.py)

FOOTER_MARK = "next"
HELP_OPEN = "Help (close it with"
CONTENTS_OPEN = "Steps: up/down to move"
SLOW_GAP = 0.3
"""Seconds between keys typed "slowly": each has been acted on before the next comes."""
HOLDS = 1.0
"""Seconds an end state must hold once reached (a key still on its way would change it)."""


def send(session: PtySession, keys: tuple[str, ...], pace: str) -> None:
    if pace == "one read":
        session.write(key_bytes(*keys))
        return
    for key in keys:
        session.write(key_bytes(key))
        time.sleep(SLOW_GAP)


def settles_on(session: PtySession, words: str, absent: str | None = None, timeout: float = 30.0) -> bool:
    """`words` (and not `absent`) on screen, and still so `HOLDS` seconds later."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = session.text()
        if words in text and (absent is None or absent not in text):
            time.sleep(HOLDS)
            text = session.text()
            if words in text and (absent is None or absent not in text):
                return True
        time.sleep(0.05)
    return False


def checked(session: PtySession) -> str | None:
    """The value the drill last checked, as its feedback names it."""
    found = re.findall(r"Not quite: (\S+) is too", session.text())
    return found[-1] if found else None


@pytest.fixture
def launch(tmp_path):
    sessions = []

    def start(*args: str, first_launch: bool = False, synchronized: bool = False) -> PtySession:
        session = PtySession(list(args), tmp_path / f"state-{len(sessions)}", first_launch=first_launch,
                             synchronized=synchronized)
        sessions.append(session)
        assert session.wait_for("Press any key" if first_launch else FOOTER_MARK, timeout=60), session.text()
        return session

    yield start
    for session in sessions:
        session.kill()


SLOWLY = pytest.param("slowly", marks=pytest.mark.thorough)
"""The same keys one at a time (among the thorough tests): the end states asserted are theirs."""


@pytest.mark.parametrize("pace", ["one read", SLOWLY])
def test_keys_in_one_read_end_where_typing_them_slowly_ends(launch, tmp_path, pace):
    """Sequences that were reordered or lost, each in one write: each ends as the same keys
    typed one at a time end."""
    session = launch("--step", "2")
    assert session.wait_for("sequence alone on", timeout=60), session.text()  # the drill's question is in
    session.press("tab")  # the answer box
    assert session.wait_for("esc leave", timeout=30), session.text()

    # Backspace between characters deletes the character before it, not the last one typed.
    send(session, ("1", "2", "backspace", "3", "enter"), pace)
    assert settles_on(session, "Not quite: 13 is too"), session.text()

    # Ctrl-U clears what is typed before it, not what is typed after.
    send(session, ("9", "9", "ctrl+u", "1", "6", "6"), pace)
    time.sleep(HOLDS)
    session.press("enter")
    assert settles_on(session, "Not quite: 166 is too"), (checked(session), session.text())

    # Esc leaves the box before the c after it: c then opens the cheat sheet.
    send(session, ("c", "escape", "c"), pace)
    assert settles_on(session, "Step 19/20", timeout=60), session.text()

    # ? opens the help, Esc closes it, ? opens it again.
    send(session, ("?", "escape", "?"), pace)
    assert settles_on(session, HELP_OPEN), session.text()
    session.press("escape")
    assert session.wait_for("Step 19/20", timeout=30), session.text()

    # t opens the contents, Enter opens the step it is on, t opens the contents again.
    send(session, ("t", "enter", "t"), pace)
    assert settles_on(session, CONTENTS_OPEN), session.text()
    session.press("escape")
    assert session.wait_for("Step 19/20", timeout=30), session.text()

    # The playground's save prompt: Ctrl-U clears the name offered, the name typed is saved to.
    session.press("g")
    assert session.wait_for("Step 20/20", timeout=60), session.text()
    session.press("w")
    assert session.wait_for("ctrl+u clears", timeout=30), session.text()
    send(session, ("ctrl+u", *"mine.toml", "enter"), pace)  # (relative: in its working folder)
    assert settles_on(session, "Step 20/20", absent="ctrl+u clears"), session.text()
    assert (tmp_path / "state-0" / "mine.toml").is_file(), session.text()

    # The model picker takes the keys after l: q closes it (and does not quit), m after it is the
    # playground's; then ↓ to gpt-oss 120B, s for EAGLE-3 and Enter run it, z after them zooms.
    send(session, ("l", "q", "m"), pace)
    assert settles_on(session, "The multi-turn helpdesk"), session.text()
    row = [c.model_id for c in model_choices(Scenario(engine={"max_model_len": 16384}))].index("gpt-oss-120b")
    send(session, ("l", "home", *["down"] * row, "s", "enter", "z"), pace)
    assert settles_on(session, "gpt-oss-120b", absent="Esc keeps"), session.text()
    assert settles_on(session, "accepted"), session.text()  # the drafts line, in sight zoomed
    assert "unzoom" in session.text().splitlines()[-1], session.text()
    assert session.proc.poll() is None


@pytest.mark.parametrize("pace", ["one read", SLOWLY])
def test_twenty_n_over_the_first_launch_orientation_reach_step_20(launch, pace):
    """The first key closes the orientation; the other nineteen each move a step on."""
    session = launch(first_launch=True)
    send(session, ("n",) * 20, pace)
    assert settles_on(session, "Step 20/20", timeout=90), session.text()


# -- a guess typed as its step opens

PREDICTS = (1, 5, 7, 11, 13, 17)
"""Every step with a prediction (steps.load_steps(): kind "predict")."""
ANSWERED = ("Goal Predict, then watch the run", "Goal Predict: not 1;")
"""The goal line once the run's result meets the guess ("... · right", or "not 1; guess again")."""


def guess_lands(session: PtySession, state_home, step: int) -> None:
    """The guess (1) just typed is made: at 30x (the + keys, acted on after it) its run goes, the
    answer comes and the progress has it."""
    session.write(b"+" * 8)
    end = time.monotonic() + 120
    while not any(words in session.text() for words in ANSWERED) and time.monotonic() < end:
        time.sleep(0.05)
    assert any(words in session.text() for words in ANSWERED), f"step {step}: no result\n{session.text()}"
    path = state_home / "batchtui" / "progress.json"
    end = time.monotonic() + 30
    while json.loads(path.read_text())["answers"].get(str(step)) != "1" and time.monotonic() < end:
        time.sleep(0.1)  # (saved as the answer's message is handled: the goal line may show first)
    assert json.loads(path.read_text())["answers"].get(str(step)) == "1", path.read_text()


def busy_loops(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, start_new_session=True) for _ in range(count)]


@pytest.mark.parametrize("load", [0, pytest.param(2, marks=pytest.mark.thorough)], ids=["idle", "two-busy-loops"])
def test_a_guess_typed_50_ms_after_the_step_key_is_made_and_answered(launch, tmp_path, load):
    """n (p for step 1), then the digit 50 ms later: the step's figures are still being computed
    (1-2.4 s on a loaded machine); the guess was lost when they arrived."""
    hogs = busy_loops(load)
    try:
        session = launch("--step", "2")
        at = 2
        for step in PREDICTS:
            if step < at:
                session.press("p")
            else:
                if step - 1 > at:
                    session.press(*["n"] * (step - 1 - at))
                    assert session.wait_for(f"Step {step - 1}/20", timeout=60), session.text()
                session.press("n")
            time.sleep(0.05)
            session.press("1")
            assert session.wait_for(f"Step {step}/20", timeout=60), session.text()
            guess_lands(session, tmp_path / "state-0", step)
            at = step
    finally:
        for hog in hogs:
            os.killpg(hog.pid, 9)
            hog.wait()


@pytest.mark.parametrize("load, predicts", [
    (0, (1, 17)),  # the first step and the last prediction (each takes a launch)
    pytest.param(0, PREDICTS, marks=pytest.mark.thorough),
    pytest.param(2, PREDICTS, marks=pytest.mark.thorough),
], ids=["idle-two-steps", "idle", "two-busy-loops"])
def test_a_guess_typed_just_after_the_first_frame_is_made_and_answered(launch, tmp_path, load, predicts):
    """`batchtui --step N` and the digit 0.1 s after the first frame: before the step's run and
    figures have started."""
    hogs = busy_loops(load)
    try:
        for n, step in enumerate(predicts):
            session = launch("--step", str(step))
            time.sleep(0.1)
            session.press("1")
            guess_lands(session, tmp_path / f"state-{n}", step)
            session.kill()
    finally:
        for hog in hogs:
            os.killpg(hog.pid, 9)
            hog.wait()


# -- a step change, frame by frame

def rows(screen: str) -> list[str]:
    return screen.split("\n")


STATUS_CLOCK = re.compile(r"· t ([\d.,]+) s")


def test_a_step_change_never_shows_two_steps_at_once(launch):
    """Every frame written after a step key shows one step: the first frame with the new step's
    header has its goal line, its keys and its run's clock (no longer the old step's), whichever
    way the change goes (a running step to a prediction waiting for its guess, and back)."""
    session = launch("--step", "4", synchronized=True)
    for key, before, after in (("n", 4, 5), ("p", 5, 4)):
        assert session.wait_for(f"Step {before}/20", timeout=60)
        if before == 5:
            session.press("1")  # the guess: step 5's run goes
        session.write(b"++++")  # the old step's clock well past the new one's start
        time.sleep(2.0)
        old = rows(session.frames(0)[-1])
        assert float(STATUS_CLOCK.search(old[1]).group(1).replace(",", "")) > 2.0, old[1]
        mark = session.mark()
        session.press(key)
        assert session.wait_for(f"Step {after}/20", timeout=60), session.text()
        time.sleep(1.0)
        new = [rows(frame) for frame in session.frames(mark) if f"Step {after}/20" in frame.split("\n")[0]]
        assert new, "no frame of the new step"
        first = new[0]
        shown = "\n".join(first)
        assert first[-2] != old[-2], f"the old goal line under the new step:\n{shown}"
        clock = STATUS_CLOCK.search(first[1])
        assert clock and float(clock.group(1).replace(",", "")) < 1.0, f"the old clock under the new step:\n{shown}"
