"""The tutorial: lesson text and activity on the left, the live simulation on the right.

At 80x24 everything a step's claim needs is in sight without scrolling: the dials take a line
each, the views are given the lines they need and paged (`v`) when they do not all fit, a run
beside the step's own is a two-column table rather than a second stack of views, and `z` gives
the simulation the whole screen (the playground starts that way on small terminals).

The screen composes, opens steps and owns the step's run (`StepRun`, its one holder), and shows
what changed on the bottom lines; nothing else. Its parts are given what they work on and
callbacks, never the screen, and post what the learner did (`DialList.Moved`, an activity's
`Finished`); docs/ARCHITECTURE.md maps them. `keys.py` names the part that runs each action.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget

if TYPE_CHECKING:
    from ..simulation import LiveSimulation, SimulationFrame

from sim.errors import SimError

from .. import keys
from ..activity_kinds import view_for
from ..goals import StepGoal, goal_for
from ..learner_gpu import on_learner_gpu
from ..step_list import draft_of, figures_of, summaries_of
from ..widgets.activities.base import ActivityView
from ..widgets.bottom_lines import BottomLines
from ..widgets.dial_list import DialList
from ..widgets.question_pane import QuestionPane
from ..widgets.sim_pane import SimPane
from ..widgets.step_header import StepHeader
from ..widgets.tutorial_body import TutorialBody
from ..widgets.view_stack import ViewStack
from .before_after import VIEW_KINDS, BeforeAfter, hold_back_curves
from .live_server import LiveServer
from .navigation import Navigation
from .playground import Played, Playground
from .step_run import StepRun
from .sweeps import Sweeps
from .tutorial_lines import KeysState, footer_keys
from .whole_frame import StyledOnceScreen, WholeFrameScreen

FIRST_START_DELAY = 0.1
"""Seconds between the first frame and the start of the first step's simulation."""
SHORT_BELOW = 24
"""Terminal lines from which the dials keep a help line of their own."""


@keys.delegate
class TutorialScreen(WholeFrameScreen, StyledOnceScreen):
    """One step at a time. Owns the live simulation of the step on show."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = keys.bindings() + [Binding(str(n), f"choose({n})", show=False) for n in range(1, 10)]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (160, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_BELOW, "-tall")]
    """Below 24 lines (an 80x24 terminal in tmux is an 80x23 pane) the dials' help line goes
    into the status line while a dial has focus, so the views keep the 80x24 layout's lines."""

    def __init__(self, steps, start_index: int = 0) -> None:
        super().__init__()
        self.steps = steps
        """A `steps.Lessons` (each step built when first shown) or a plain list of steps."""
        self.summaries = summaries_of(steps)
        """Number, title, section and minutes of every step, without building them."""
        self.goal: StepGoal | None = None
        """What a step without a question of its own asks (None: its activity says)."""
        self.changing = asyncio.Lock()
        """Held while a step opens or its activity changes: keys and a table-of-contents choice
        arriving together take turns, so none works on widgets another is replacing."""
        app = self.app
        self.bottom = BottomLines(app.settings.ascii_only, app.settings.glyphs.sep, id="bottom")
        self.sim_pane = SimPane(VIEW_KINDS, lambda: self.run.sim, id="sim-column")
        self.lesson = QuestionPane(self.changing, ascii_only=app.settings.ascii_only, id="lesson-pane")
        self.navigation = Navigation(app, self.summaries, self.show_step, self.say, index=start_index)
        self.before = BeforeAfter(self.stack, app.words, lambda step: self.live.shows(step))
        self.sweeps = Sweeps(self.stack, partial(app.settings.clock.in_background, self))
        self.run = StepRun(app, self.post_message, partial(app.settings.clock.start, self), self.stack,
                           lambda: self.step, lambda: self.sim_pane.dials, self.before, self.sweeps, self.say,
                           self.draw_frame, self.show_changes)
        """The step's live run, its one holder (the panes and helpers read it there)."""
        self.body = TutorialBody(self.lesson, self.sim_pane, self.run, id="body")
        self.playground = Playground(app, self.run, self._played)
        self.live = LiveServer(app, self.playground, self.say, show_views=self._views_again, reopen=self._reopen_on,
                               worker=self.run_worker)

    @property
    def index(self) -> int:
        return self.navigation.index

    @property
    def step(self):
        """The step on show, as drawn (its figures may still be pending, see `show_step`): the
        lesson pane holds it."""
        return self.lesson.step if self.lesson.step is not None else self.steps[self.index]

    @property
    def stack(self) -> ViewStack:
        return self.sim_pane.stack

    @property
    def sim(self) -> LiveSimulation | None:
        """The step's live run (`StepRun.sim`)."""
        return self.run.sim

    def compose(self) -> ComposeResult:
        yield StepHeader(id="header")
        yield self.body
        yield self.bottom

    async def on_mount(self) -> None:
        self.set_class(self.app.settings.ascii_only, "-ascii")
        self.query_one(StepHeader).separator = self.app.settings.glyphs.sep
        first_launch = self.app.store.first_launch()
        # While the orientation is read, the step waits: nothing runs (or redraws) behind it.
        self.run.held = first_launch
        await self.show_step(self.index)
        if self.app.startup_notice:
            self.say(self.app.startup_notice)
        if first_launch:
            from .orientation import OrientationScreen

            self.app.push_screen(OrientationScreen(), lambda _: self.run.release())

    async def learner_gpu_known(self, gpu, changed: set) -> None:
        """`--gpu` answered: the header names the GPU, the notice says what was found, and the
        step on show opens again if it is one that starts on that GPU."""
        self.query_one(StepHeader).show_gpu(self.app.words(gpu.label))
        if self.index in changed:
            await self.show_step(self.index)
        if gpu.notice:
            self.bottom.stand(gpu.notice)

    def say(self, message: str, error: bool = False) -> None:
        """Put a line in front of the learner, in place of the goal, until the next key."""
        self.bottom.say(message, error)

    def on_key(self, event: events.Key) -> None:
        if (clear := self.bottom.key_arrived()) is not None:
            self.call_after_refresh(clear)

    # -- steps
    async def show_step(self, index: int) -> None:
        """Open step `index` (0-based): its text, dials, views and a fresh simulation."""
        async with self.changing:
            if self.is_attached:  # not while the app is closing
                await self._show_step(index)

    async def _show_step(self, index: int) -> None:
        index = max(0, min(len(self.summaries) - 1, index))
        try:
            step = draft_of(self.steps, index)  # figures "…" until `_fill_in` fills them
        except SimError as exc:  # a lesson file broken since the app started
            self.say(f"Step {self.summaries[index].number} cannot be opened: {exc}", error=True)
            return
        self.navigation.index = index
        first = self.lesson.step is None  # (the app's first step: the engine is still to load)
        self.lesson.step, self.goal = step, None  # (the step before's goal is not this one's)
        self.run.speed = 1.0
        # The step before's start, if still to come, is off: it would start this step's run
        # while it is drawn, and then this step's own start would start it again over whatever
        # a key did in between (g and m in one read: the chat m loaded was lost).
        self.run.opening = None
        # One layout and one frame, drawn whole, for the whole change: never one step's header
        # over another's views. After the first step the engine is loaded: the run starts (about
        # a millisecond) and its first state is drawn within the change.
        with self.app.batch_update():
            await self._show(step)
            if not first:
                await self.run.begin(None, draw_now=True)
        self.draw_whole_next_frame()
        # At launch, the run, the sweep and the figures start once the first frame is out, given
        # Textual's writer thread a moment to write it: importing the engine (numpy) holds the
        # GIL (benchmarks/app_benchmark.py).
        delay, clock = FIRST_START_DELAY if first else 0.0, self.app.settings.clock
        if step.figures_pending:
            await clock.in_background(self, partial(figures_of, self.steps, index),
                                      partial(self._figures_ready, step), delay=delay, group="figures")
        if first:
            self.run.opening = opening = object()
            await clock.later(self, lambda: self.run.begin(opening), delay)

    async def _show(self, step) -> None:
        self.run.stop()
        self.say(self.bottom.standing)
        words, summaries = self.app.words, self.summaries
        self.query_one(StepHeader).show_step(words(step.section), step.number, len(summaries), words(step.title),
                                             sum(s.minutes for s in summaries[self.index:]))
        view = view_for(step, self.app.progress)
        await self.body.show_step(step, view)
        self.playground.left_traffic = None
        self.goal = goal_for(step) if view is None or view.goal() is None else None
        # Saved once the step is drawn: a save waits on the disk (fsync).
        self.call_after_refresh(self.app.remember_step, step.number)
        self.update_goal()
        self.update_keys()
        if said := self.navigation.at_the_end():
            self.say(said)

    def _figures_ready(self, draft, filled) -> None:
        """A draft's figures arrived: put them in, once nothing else is changing the step."""
        if draft is self.lesson.step:
            self.run_worker(partial(self._fill_in, draft, filled), group="figures-in")

    async def _fill_in(self, draft, filled) -> None:
        said = await self.lesson.fill_in(draft, filled, self.app.progress)
        if said:
            self.say(said, error=True)
        elif said is not None and self.is_attached:
            self.show_changes(goal=True)

    async def _reopen_on(self, gpu) -> bool:
        """The playground opened again on `gpu` (a fitted profile), the run's settings kept;
        False if the step on show is not the playground (`LiveServer`)."""
        if not Playground.on(self.step):
            return False
        current = self.sim.scenario if self.sim is not None else self.step.scenario
        self.steps[self.index] = on_learner_gpu(replace(self.step, scenario=current), gpu)
        await self.show_step(self.index)
        return True

    # -- the run's frames
    def on_simulation_frame(self, frame: SimulationFrame) -> None:
        if frame.origin is self.sim:  # (else from a step already left)
            # The next frame is posted once this one is drawn (after this refresh), not before.
            self.call_after_refresh(frame.origin.frame_shown)
            self.draw_frame(frame)

    def draw_frame(self, frame: SimulationFrame) -> None:
        """The views, the activity, the status line and the goal at the state `frame` holds."""
        self.body.draw(frame)
        self.show_changes(keys=False)
        # The step's goal watches the run; an activity's goal line says how far the run is.
        if self.goal.observe(frame.snapshot) if self.goal is not None else self.lesson.activity.view is not None:
            self.update_goal()

    def show_changes(self, status: bool = False, goal: bool = False, keys: bool = True) -> None:
        """What changed, on the status line (`status`), the goal line (`goal`) and the footer
        (`keys`; else only if the run started or stopped since it was drawn: space's label)."""
        sim = self.sim
        if status and sim is not None:
            self.sim_pane.show_status()
        if goal:
            self.update_goal()
        if keys or sim is not None and sim.running != self.bottom.says_running:
            self.update_keys()

    # -- what the widgets and the helpers tell
    def on_dial_list_moved(self, message: DialList.Moved) -> None:
        """The learner moved a dial (the body had the views and the activity follow)."""
        self.say(message.passed, error=bool(message.passed))  # why it passed choices by, if it did
        self.dials_moved(message.moved)

    def dials_moved(self, moved: dict) -> None:
        """The status line and the step's goal follow dials moved on the run."""
        self.show_changes(status=True, keys=False)
        if self.goal is not None and any([self.goal.dial_moved(name, value) for name, value in moved.items()]):
            self.update_goal()

    def on_dial_list_refused(self, message: DialList.Refused) -> None:
        self.say(message.words, error=True)

    @on(ActivityView.Updated)
    @on(ActivityView.Finished)
    @on(ViewStack.Arranged)
    def _updated(self, message) -> None:
        """A question arrived, the activity's state changed or it was answered (the lesson pane
        took its hints, recorded the answer), or the views were arranged again: the goal line
        and the footer follow."""
        self.show_changes(goal=not isinstance(message, ViewStack.Arranged))

    def _played(self, played: Played) -> None:
        """What a playground key did (`Playground`)."""
        self.say(played.words, error=played.error)
        if played.restart is not None:
            self.run.restart_with(played.restart)
        if played.moved:
            self.dials_moved(played.moved)
            self.body.dials_moved(played.moved)
        if played.key is not None and self.goal is not None and self.goal.key(played.key):
            self.update_goal()  # a key the step's goal may be waiting for (`goals.StepGoal.key`)
        self.update_keys()

    def _views_again(self, page_of: str | None) -> None:
        """The step's views again (a real server came or went), `page_of`'s page in sight."""
        if self.is_mounted:
            self.before.show_again(self.step, self.sim, page_of)
            self.update_keys()

    def update_goal(self) -> None:
        """The goal line; then the reveal and the curves a prediction hides, which wait for the
        answer."""
        step = self.step
        if self.bottom.show_goal(self.lesson.activity.view, self.goal, step.number in self.app.progress.completed):
            self.app.record_answer(step.number, "done", completed=True)
        hold_back_curves(self.stack, step, self.lesson.answered)
        self.lesson.update_reveal()

    # -- keys and focus
    def watch_focused(self, focused: Widget | None) -> None:
        """Focus moved (Textual sets it before the focus and blur events go out): the footer and
        the dials' help line say so in the frame that shows the move, not a message later."""
        if self.is_mounted and self.query(DialList):
            self.sim_pane.focus_moved()
            self.update_keys()

    def update_keys(self) -> None:
        """The footer: the keys that work now, in the words of what they do now."""
        sim = self.sim
        running = sim is not None and sim.running
        state = KeysState.of(self.focused, self.lesson.activity, self.step, self.stack, self.before, running,
                             self.body.zoomed, sim)
        self.bottom.show_keys(*footer_keys(state), running)

    def on_resize(self) -> None:
        # Crossing a width breakpoint can change the dials' shape (two columns when wide).
        self.call_after_refresh(lambda: self.body.zoom(self.body.zoomed, "reshape"))

    def on_unmount(self) -> None:
        self.run.stop()
        self.live.end()

    # -- actions (ids in keys.py, which names the part that runs an action; then `acted`)
    def acted(self, said) -> None:
        """An action a part of the screen ran is done: the line it returned said, if any; the
        goal line and the footer follow what it changed (hints, zoom, an answer, ...)."""
        if isinstance(said, str) and said:
            self.say(said)
        self.show_changes(goal=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":
            return self.lesson.activity.takes_choices or self.lesson.activity.choices_coming
        return self.playground.on(self.step) if self.playground.takes(action) else True

    async def action_reset_scenario(self) -> None:
        self.playground.left_traffic = None  # (the traffic `m` replaced is the step's own again)
        self.say(await self.run.reset())
        self.update_keys()
