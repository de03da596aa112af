"""The tutorial: lesson text and activity on the left, the live simulation on the right.

At 80x24 everything a step's claim needs is in sight without scrolling: the dials take a line
each, the views are given the lines they need and paged (`v`) when they do not all fit, a run
beside the step's own is a two-column table rather than a second stack of views, and `z` gives
the simulation the whole screen (the playground starts that way on small terminals).

The screen composes, opens steps and owns the step's live run (`sim`, its one holder); nothing
else. Attributes go down, messages come up: the lesson pane (`widgets/question_pane.py`: text,
hints, activity, reveal) is given the step, the simulation pane (`widgets/sim_pane.py`: status
line, dials, views) a way to read the run, and they post what the learner did (the dial list's
`Moved`, an activity's `Finished`, `RunDials`). The helpers are given what they work on and
callbacks, never the screen: `navigation.py` (step keys, coalesced), `drafts.py` (a step's
figures filled in), `before_after.py` (a pinned or beside run, the views showing it),
`sweeps.py` (the curve's), `playground.py` (save, open, `m`, `l`), `live_server.py` (`s`, `f`:
a real server beside the playground) and `tutorial_lines.py` (the footer's keys). `keys.py`
names the part that runs each key's action (`keys.delegate` makes the screen's `action_`s).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input

if TYPE_CHECKING:
    from ..simulation import LiveSimulation, SimulationFrame

from sim.errors import SimError

from .. import keys
from ..activity_kinds import view_for
from ..goals import StepGoal, goal_for
from ..learner_gpu import on_learner_gpu
from ..step_list import draft_of, summaries_of
from ..widgets.activities.base import ActivityView
from ..widgets.bottom_lines import BottomLines
from ..widgets.dial_list import DialList
from ..widgets.question_pane import QuestionPane
from ..widgets.sim_pane import SimPane
from ..widgets.step_header import StepHeader
from ..widgets.tutorial_body import TutorialBody
from ..widgets.view_stack import ViewStack
from .before_after import VIEW_KINDS, BeforeAfter, hold_back_curves
from .drafts import figures_of, fill_in
from .live_server import LiveServer
from .navigation import Navigation
from .playground import Played, Playground
from .step_run import StepRun
from .sweeps import Sweeps
from .tutorial_lines import KeysState, footer_keys
from .whole_frame import WholeFrameScreen

FIRST_START_DELAY = 0.1
"""Seconds between the first frame and the start of the first step's simulation."""
SHORT_BELOW = 24
"""Terminal lines from which the dials keep a help line of their own."""


@keys.delegate
class TutorialScreen(WholeFrameScreen):
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
        self.shown = None
        """The step on screen: a draft (`figures_pending`) until its figures are filled."""
        self._opening: object | None = None
        """The step whose simulation starts after the next refresh (see `show_step`)."""
        self._first_opening = True
        self.goal: StepGoal | None = None
        """What a step without a question of its own asks (None: its activity says)."""
        self._keys_say_running = False
        """The footer's label for space: "pause" while the run was running when it was drawn."""
        self.changing = asyncio.Lock()
        """Held while a step opens or its activity changes: keys and a table-of-contents choice
        arriving together take turns, so none works on widgets another is replacing."""
        app = self.app
        self.bottom = BottomLines(app.settings.ascii_only, app.settings.glyphs.sep, id="bottom")
        self.sim_pane = SimPane(VIEW_KINDS, lambda: self.run.sim, id="sim-column")
        self.lesson = QuestionPane(ascii_only=app.settings.ascii_only, id="lesson-pane")
        self.body = TutorialBody(self.lesson, self.sim_pane, id="body")
        self.navigation = Navigation(app, self.summaries, self.show_step, self.say, index=start_index)
        self.before = BeforeAfter(self.stack, app.words, lambda step: self.live.shows(step))
        self.sweeps = Sweeps(self.stack, partial(app.settings.clock.in_background, self))
        self.run = StepRun(app, self.post_message, partial(app.settings.clock.start, self), self.stack,
                           lambda: self.step, lambda: self.sim_pane.dials, self.before, self.say, self.draw_frame,
                           self.show_changes)
        """The step's live run, its one holder (the panes and helpers read it there)."""
        self.playground = Playground(app, lambda: self.step, self._playground_run, lambda: self.sim_pane.dials,
                                     self._played)
        self.live = LiveServer(app, self.stack, self._playground_run, self.say, restart=self.run.restart_with,
                               show_views=self._views_again, reopen=self._reopen_on, begin_now=self.begin_now,
                               worker=self.run_worker)

    @property
    def index(self) -> int:
        return self.navigation.index

    @property
    def step(self):
        """The step on show, as drawn (its figures may still be pending, see `show_step`)."""
        return self.shown if self.shown is not None else self.steps[self.index]

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

            self.app.push_screen(OrientationScreen(), lambda _: self._release())

    def _release(self) -> None:
        """The orientation closed: the step's run starts, as it would have."""
        self.run.held = False
        if self.sim is not None and self.step.starts_running:
            self.sim.resume()
            self.update_status()
            self.update_keys()

    async def learner_gpu_known(self, gpu, changed: set) -> None:
        """`--gpu` answered: the header names the GPU, the notice says what was found, and the
        step on show opens again if it is one that starts on that GPU."""
        self.query_one(StepHeader).show_gpu(self.app.words(gpu.label))
        if self.index in changed:
            await self.show_step(self.index)
        if gpu.notice:
            self.bottom.standing = gpu.notice
            self.say(gpu.notice)

    def say(self, message: str, error: bool = False) -> None:
        """Put a line in front of the learner, in place of the goal, until the next key."""
        self.bottom.say(message, error)

    def clear_notice(self) -> None:
        self.bottom.say("")

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
        self.shown = self.lesson.step = step
        self.run.speed = 1.0
        # The step before's start, if still to come, is off: it would start this step's run
        # while it is drawn, and then this step's own start would start it again over whatever
        # a key did in between (g and m in one read: the chat m loaded was lost).
        self._opening = None
        first, self._first_opening = self._first_opening, False
        # One layout and one frame, drawn whole, for the whole change: never one step's header
        # over another's views. After the first step the engine is loaded: the run starts (about
        # a millisecond) and its first state is drawn within the change.
        with self.app.batch_update():
            await self._show(step)
            if not first:
                await self._begin(None, draw_now=True)
        self.draw_whole_next_frame()
        # At launch, the run, the sweep and the figures start once the first frame is out, given
        # Textual's writer thread a moment to write it: importing the engine (numpy) holds the
        # GIL (benchmarks/app_benchmark.py).
        delay, clock = FIRST_START_DELAY if first else 0.0, self.app.settings.clock
        if step.figures_pending:
            await clock.in_background(self, partial(figures_of, self.steps, index),
                                      partial(self._figures_ready, step), delay=delay, group="figures")
        if first:
            self._opening = opening = object()
            await clock.later(self, lambda: self._begin(opening), delay)

    async def _show(self, step) -> None:
        self.run.stop()
        self.say(self.bottom.standing)
        words, summaries = self.app.words, self.summaries
        self.query_one(StepHeader).show_step(words(step.section), step.number, len(summaries), words(step.title),
                                             sum(s.minutes for s in summaries[self.index:]))
        self.body.zoom(False)  # the playground too: its things to try are in the lesson pane
        view = view_for(step, self.app.progress)
        # Text, dials and activity at once: each waits on Textual's layout, not on the others.
        await asyncio.gather(self.lesson.show_step(view), self.sim_pane.show_step(step))
        self.sim_pane.dials.answer_first(view is not None and view.has_input)
        self.before.forget()
        self.sweeps.forget()
        self.playground.left_traffic = None
        self.goal = goal_for(step) if view is None or view.goal() is None else None
        self.before.arrange(step, self.sim)
        # Saved once the step is drawn: a save waits on the disk (fsync).
        self.call_after_refresh(self.app.remember_step, step.number)
        self.action_focus_lesson()
        self.update_goal()
        self.update_keys()
        if self.index == len(summaries) - 1:
            # The end: which steps a learner who skipped or missed some can still go back to.
            others = self.app.progress.still_open([s.number for s in summaries if s.number != step.number])
            if others:
                self.say(f"The last step. {others} t opens the table of contents.")

    def _figures_ready(self, draft, filled) -> None:
        """A draft's figures arrived: put them in, once nothing else is changing the step."""
        if draft is self.shown:
            self.run_worker(partial(self._fill_in, draft, filled), group="figures-in")

    async def _fill_in(self, draft, filled) -> None:
        async with self.changing:
            if draft is not self.shown or not self.is_attached:
                return
            if isinstance(filled, SimError):
                self.say(f"Step {draft.number}'s figures cannot be computed: {filled}", error=True)
                return
            self.shown = self.lesson.step = filled
            with self.app.batch_update():
                await fill_in(self.lesson, draft, self.app.progress, lambda: isinstance(self.focused, Input))
            if self.is_attached:  # (not if the app closed while the widgets were updated)
                self.lesson.set_hints(keep_shown=True)
                self.update_goal()
                self.update_keys()

    async def _begin(self, opening: object | None, draw_now: bool = False) -> None:
        """Start the step's simulation and sweep, unless another step was opened meanwhile;
        `draw_now`: its first state drawn at once."""
        if opening is not self._opening:
            return
        self._opening = None
        step = self.step
        self.run.start(step.scenario, draw_now=draw_now)
        self.update_keys()
        if self.sweeps.wanted(step):
            await self.sweeps.start(step)

    async def begin_now(self) -> None:
        """Start the first step's run now if it is still to start (a moment after the first
        frame): a key acts on it (`BatchApp.run_action`)."""
        if self.sim is None and self._opening is not None:
            await self._begin(self._opening)

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
        frames = {"main": frame.snapshot, "compare": frame.compare, "pinned": (self.before.pinned or (None,))[0]}
        self.sim_pane.draw({source: snapshot for source, snapshot in frames.items() if snapshot is not None})
        self.update_status(check_only=True)
        self.lesson.activity.update_snapshot(frame.snapshot, frame.compare)
        # The step's goal watches the run; an activity's goal line says how far the run is.
        if self.goal.observe(frame.snapshot) if self.goal is not None else self.lesson.activity.view is not None:
            self.update_goal()

    def update_status(self, check_only: bool = False) -> None:
        if self.sim is not None:
            if not check_only:
                self.sim_pane.show_status()
            if self.sim.running != self._keys_say_running:
                self.update_keys()  # run or pause: the footer says what space does now

    def show_changes(self, status: bool = False, goal: bool = False, keys: bool = True) -> None:
        """What a key or an activity changed: the status line, the goal line, the footer."""
        if status:
            self.update_status()
        if goal:
            self.update_goal()
        if keys:
            self.update_keys()

    def _playground_run(self) -> LiveSimulation | None:
        """The live run while the step on show is the playground (its keys', the server's)."""
        return self.sim if Playground.on(self.step) else None

    # -- what the widgets and the helpers tell
    def on_dial_list_moved(self, message: DialList.Moved) -> None:
        """The learner moved a dial: the status, the goal, the "before" table's title, the curve
        (of the dials on show) and the activity follow."""
        self.clear_notice()
        self.dials_moved(message.moved)

    def dials_moved(self, moved: dict) -> None:
        self.update_status()
        if self.goal is not None and any([self.goal.dial_moved(name, value) for name, value in moved.items()]):
            self.update_goal()
        step = self.step
        self.before.configure(step, self.sim)
        if self.sweeps.wanted(step) and any(map(step.sweep.invalidated_by, moved)):
            self.run_worker(partial(self.sweeps.start, step, self.sim.scenario), group="sweep-start")
        self.run_worker(partial(self.lesson.activity.scenario_changed, self.sim.scenario), group="activity")

    def on_view_stack_arranged(self, message: ViewStack.Arranged) -> None:
        self.update_keys()

    def on_dial_list_refused(self, message: DialList.Refused) -> None:
        self.say(message.words, error=True)

    def on_activity_view_updated(self, message: ActivityView.Updated) -> None:
        """A question arrived, or the activity's state changed (the lesson pane took its hints)."""
        self.update_goal()
        self.update_keys()

    def on_activity_view_finished(self, message: ActivityView.Finished) -> None:
        self.app.record_answer(self.step.number, message.answer, completed=message.completed)
        self._answered()

    def _answered(self) -> None:
        """The answer is in: the plain keys (space, +, -, .) go to the simulation again."""
        if isinstance(self.focused, Input):
            self.action_focus_lesson()
        self.update_goal()
        self.update_keys()

    def on_activity_view_run_dials(self, message: ActivityView.RunDials) -> None:
        self.run.run_asked(message)

    def _played(self, played: Played) -> None:
        """What a playground key did (`Playground`)."""
        self.say(played.words, error=played.error)
        if played.restart is not None:
            self.run.restart_with(played.restart)
        if played.moved:
            self.dials_moved(played.moved)
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
        self._keys_say_running = sim is not None and sim.running
        state = KeysState.of(self.focused, self.lesson.activity, self.step, self.stack, self.before,
                             self._keys_say_running, self.body.zoomed, sim)
        self.bottom.show_keys(*footer_keys(state))

    def on_resize(self) -> None:
        # Crossing a width breakpoint can change the dials' shape (two columns when wide).
        self.call_after_refresh(lambda: self.body.zoom(self.body.zoomed, "reshape"))

    def on_unmount(self) -> None:
        self.run.stop()
        self.live.end()

    # -- actions (ids in keys.py; an action a part of the screen runs is named there)
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":
            return self.lesson.activity.takes_choices
        return self.playground.on(self.step) if self.playground.takes(action) else True

    def action_focus_lesson(self) -> None:
        self.body.focus_lesson()

    def action_hint(self) -> None:
        if words := self.body.hint():
            self.say(words)

    def action_zoom(self) -> None:
        self.body.toggle_zoom()
        self.update_keys()

    def action_next_views(self) -> None:
        self.stack.next_page() if self.stack.page_count > 1 else self.say("Every view of this step is in sight.")

    async def action_reset_scenario(self) -> None:
        step = self.step
        self.run.stop()
        if self.before.active:
            self.before.forget()
            self.before.show_again(step, None)
        self.playground.left_traffic = None
        self.run.restart_with(step.scenario)
        if self.sweeps.wanted(step):
            await self.sweeps.start(step)
        self.say("Scenario reset to the step's start.")
        self.update_keys()

    async def action_give_up(self) -> None:
        async with self.changing:
            await self.lesson.activity.give_up()
            self._answered()  # (a reading answered this way takes no more number keys)

    async def action_new_question(self) -> None:
        async with self.changing:
            await self.lesson.activity.new_question()
            self.lesson.set_hints()
            self.update_goal()
            self.update_keys()  # a new reading question takes number keys again
