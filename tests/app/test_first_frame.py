"""The first frame waits for nothing heavy: `batchtui` draws its step before numpy and the engine
are imported (its figures are filled beside the app once the step is drawn), and the figures
that arrive are the simulator's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import steps
from manual_clock import ManualClock
from batchtui.screens.tutorial import TutorialScreen
from batchtui.widgets.hint_box import HintBox
from batchtui.widgets.lesson import LessonMarkdown
from batchtui.clock import call
from steps import figures

# The command a learner runs, up to its first frame, in a child: the headless driver at 80x24
# instead of the terminal's, and a clock that only notes the work it is asked to do once the
# step is drawn (the simulation, the figures, a sweep) instead of doing it. What is imported
# when the app is first idle is what the first frame waited for.
FIRST_FRAME = """
import json, sys
import batchtui.clock as clock
import batchtui.app as app_module

asked = []

async def later(self, widget, callback, delay=0.0):
    asked.append("later")

async def in_background(self, widget, work, done, delay=0.0, group="background"):
    asked.append(group)

clock.RealClock.later = later
clock.RealClock.in_background = in_background

async def first_frame(pilot):
    await pilot.pause()
    screen = pilot.app.tutorial
    json.dump({"modules": sorted(sys.modules), "asked": asked,
               "step": screen.step.number, "pending": screen.step.figures_pending},
              open(sys.argv[1], "w"))
    pilot.app.exit()

def run(self, **options):
    return app_module.App.run(self, headless=True, size=(80, 24), auto_pilot=first_frame)

app_module.BatchApp.run = run
from batchtui.cli import main
sys.exit(main(sys.argv[2:]))
"""

HEAVY = ("numpy", "sim.engine", "sim.cost", "sim.kv", "sim.schedulers", "sim.metrics", "sim.curves",
         "sim.driver", "batchtui.simulation")
"""What the simulator runs on: none of it is needed to draw a step."""
LATER = ("sim.speculative",)
"""Needed once a run drafts or the playground offers a method, not to draw a step: its
dataclasses cost the first frame about 4 ms of imports."""


@pytest.mark.parametrize("argv", [[], ["--step", "16"], ["--step", "9", "--ascii"]],
                         ids=["first-launch", "step-16", "step-9-ascii"])
def test_the_first_frame_imports_neither_numpy_nor_the_engine(argv, tmp_path):
    out = tmp_path / "first-frame.json"
    master, slave = os.openpty()  # the tutorial wants a terminal on its input
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    try:
        result = subprocess.run([sys.executable, "-c", FIRST_FRAME, str(out), *argv], stdin=slave,
                                capture_output=True, text=True, env=env, timeout=120)
    finally:
        os.close(slave)
        os.close(master)
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    loaded = [m for m in seen["modules"] if any(m == h or m.startswith(h + ".") for h in HEAVY + LATER)]
    assert loaded == []
    # The step is drawn with its figures pending, and their computation is asked for.
    assert seen["step"] == (int(argv[1]) if argv else 1)
    assert seen["pending"] and "figures" in seen["asked"]


class HeldClock(ManualClock):
    """The test clock, except that the step's figures wait until `release()`."""

    def __init__(self) -> None:
        self.held: list = []

    async def in_background(self, widget, work, done, delay: float = 0.0, group: str = "background") -> None:
        if group == "figures":
            self.held.append((work, done))
        else:
            await super().in_background(widget, work, done, delay, group)

    async def release(self) -> None:
        held, self.held = self.held, []
        for work, done in held:
            await call(done, work())


async def test_a_draft_step_is_filled_with_the_simulators_figures_and_the_hint_shown_stays(make_app):
    """Step 1 opened from the lazy lessons: drawn as a draft (figures "…"), a hint asked for at
    once, then the figures arrive: the same text the lesson loader computes (tests/unit/
    test_figures.py checks those against the simulator), and the hint still shown, filled."""
    lessons = steps.open_lessons()
    clock = HeldClock()
    app = make_app(lessons, start_step=1, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TutorialScreen)
        assert screen.step.figures_pending and not lessons.ready(0) and clock.held
        assert figures.PENDING in screen.query_one("#lesson", LessonMarkdown).source
        await pilot.press("h")
        await pilot.pause()
        assert screen.query_one(HintBox).shown == 1
        assert figures.PENDING in screen.query_one(HintBox).hints[0]

        await clock.release()
        # Waits on state: the fill runs in a worker after the thread's answer (a busy machine
        # takes more than one pause).
        for _ in range(200):
            await pilot.pause()
            if not screen.step.figures_pending:
                break
        await app.workers.wait_for_complete()
        await pilot.pause()
        filled = steps.load_step(lessons.summaries[0].path)
        assert lessons.ready(0)
        assert screen.step == filled and not screen.step.figures_pending
        assert screen.query_one("#lesson", LessonMarkdown).source == filled.body_md
        hints = screen.query_one(HintBox)
        assert hints.hints[-len(filled.hints):] == filled.hints and hints.shown == 1
        assert figures.PENDING not in "".join(filled.hints) + filled.body_md + filled.activity.params["question"]
        # The step opens filled from now on, without waiting for anything.
        await screen.show_step(1)
        assert len(clock.held) == 1  # step 2's
        await screen.show_step(0)
        assert screen.step is lessons[0] and len(clock.held) == 1


# The tutorial with the collector's settle noted in a file: a test seam outside the product.
NOTED_SETTLE = """
import gc, os, sys
def collections():
    return sum(generation["collections"] for generation in gc.get_stats())
import batchtui.start  # (the command's first import: the collector is held from here)
at_start = collections()
from batchtui import gc_policy

noted = sys.argv.pop(1)
real = gc_policy.settle
def settle():
    held, during = not gc.isenabled(), collections() - at_start
    real()
    with open(noted + ".tmp", "w") as f:
        f.write("%d %s %s %d %s" % (gc.get_freeze_count(), "textual.app" in sys.modules, held, during,
                                    gc.isenabled()))
    os.replace(noted + ".tmp", noted)  # whole when the test sees it
gc_policy.settle = settle
sys.exit(batchtui.start.main())
"""


@pytest.mark.wall_clock("terminals")
def test_the_app_on_a_terminal_settles_the_collector_after_its_first_frame(tmp_path):
    """The objects of start-up (Textual, the lessons read) are frozen once the step is drawn, so
    no full collection walks them again while keys come in (`batchtui.gc_policy`). Until then the
    command holds the collector off (about 200 collections that freed next to nothing cost the
    first frame 20-60 ms), and it runs again from the settle on."""
    from pty_session import PtySession

    noted = tmp_path / "settled"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    session = PtySession([str(noted), "--step", "2"], tmp_path / "state", env={"PYTHONPATH": root},
                         command=[sys.executable, "-c", NOTED_SETTLE])
    try:
        assert session.wait_for("next", timeout=60), session.text()
        deadline = 20.0
        while not noted.exists() and deadline > 0:
            session.wait_for("never on screen", timeout=0.2)
            deadline -= 0.2
        frozen, textual_loaded, held, collections, collecting = noted.read_text().split()
        assert int(frozen) > 50_000 and textual_loaded == "True"
        assert (held, int(collections), collecting) == ("True", 0, "True")
        session.press("q")
        assert session.wait_exit(timeout=20) == 0
    finally:
        session.kill()


def _styles(screen) -> dict:
    """Every node's styles from the stylesheet, its parts' (component classes) too."""
    return {id(node): (repr(node._css_styles.get_rules()),
                       repr({name: part.get_rules() for name, part in node._component_styles.items()}))
            for node in screen.walk_children(with_self=True)}


@pytest.mark.parametrize("start_step, first_launch", [(1, True), (6, False), (16, False), (20, False)],
                         ids=["first-launch", "step-6", "step-16", "step-20"])
async def test_the_tutorial_is_styled_once_before_its_first_frame(make_app, monkeypatch, start_step, first_launch):
    """Textual restyles a screen's every node when the screen is resumed; the tutorial's first
    resume, just after its mount styled each node, is told not to (`TutorialScreen.on_screen_resume`):
    no restyle of the whole screen comes before the first frame, and one after it changes nothing."""
    from textual.css.stylesheet import Stylesheet

    restyled = []
    real = Stylesheet.update_nodes

    def update_nodes(self, nodes, animate=False):
        nodes = list(nodes)
        if len(nodes) > 1 and isinstance(nodes[0], TutorialScreen):  # the screen and all in it
            restyled.append(len(nodes))
        return real(self, nodes, animate)

    monkeypatch.setattr(Stylesheet, "update_nodes", update_nodes)
    app = make_app(steps.open_lessons(), first_launch=first_launch, start_step=start_step)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.tutorial
        assert screen.step.number == start_step and restyled == []
        before = _styles(screen)
        screen.update_node_styles(animate=False)
        assert restyled and _styles(screen) == before
