"""The tutorial: lesson text and activity on the left, the live simulation on the right.

At 80x24 everything a step's claim needs is in sight without scrolling: the dials take a line
each, the views are given the lines they need and paged (`v`) when they do not all fit, a run
beside the step's own is a two-column table rather than a second stack of views, and `z` gives
the simulation the whole screen (the playground starts that way on small terminals).

The screen opens steps and owns the step's live run; each other concern has a controller of its
own that reads and drives the screen through its public members: `navigation.py` (step keys,
coalesced), `drafts.py` (a step's figures filled in), `dials.py`, `question.py` (goal line,
hints), `reveal.py`, `before_after.py` (a pinned or beside run, the views showing it),
`sweeps.py` (the curve's), `playground.py` (save, open, `m`, `l`), `live_server.py` (`s`, `f`)
and `tutorial_lines.py` (the footer's keys, the status line).
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Input

if TYPE_CHECKING:
    from ..simulation import LiveSimulation, SimulationFrame

from sim.errors import SimError

from .. import keys
from ..activity_kinds import activity_view
from ..goals import StepGoal, goal_for
from ..step_list import draft_of, summaries_of
from ..widgets.activities.base import ActivityView
from ..widgets.activity_panel import ActivityPanel
from ..widgets.answer_box import AnswerBox
from ..widgets.dial import DialControl
from ..widgets.dial_list import DialList
from ..widgets.goal_bar import GoalBar
from ..widgets.hint_box import HintBox
from ..widgets.key_bar import KeyBar
from ..widgets.lesson import LessonMarkdown
from ..widgets.notice_line import NoticeLine
from ..widgets.pane import Pane
from ..widgets.sim_status import SimStatus
from ..widgets.step_header import StepHeader
from ..widgets.view_stack import ViewStack
from .before_after import VIEW_KINDS, BeforeAfter
from .dials import Dials
from .drafts import Drafts
from .live_server import LiveServer
from .navigation import Navigation
from .playground import Playground
from .question import Question
from .reveal import Reveal
from .sweeps import Sweeps
from .tutorial_lines import KeysState, footer_keys, status_line
from .whole_frame import WholeFrameScreen

FIRST_START_DELAY = 0.1
"""Seconds between the first frame and the start of the first step's simulation."""
SHORT_BELOW = 24
"""Terminal lines from which the dials keep a help line of their own."""


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
        self.index = start_index
        self.shown = None
        """The step on screen: a draft (`figures_pending`) until its figures are filled."""
        self.sim: LiveSimulation | None = None
        self.speed = 1.0
        """The speed the learner chose (`+`, `-`) on this step: a run started again on it (a dial
        that restarts, `r`, a guess) keeps it; the next step starts at 1x."""
        self.zoomed = False
        """The simulation has the whole screen (`z`); the lesson is hidden."""
        self._opening: object | None = None
        """The step whose simulation starts after the next refresh (see `show_step`)."""
        self._first_opening = True
        self._held = False
        """The first launch's orientation is up: the step's run waits for it to close."""
        self._notice_key = 0
        """Counts the notices said, so a key press clears only the one it found."""
        self._standing_notice = ""
        """A notice that stays through step openings until the learner's first key (what
        `--gpu` found: the lookup may answer before the first step is drawn)."""
        self.goal: StepGoal | None = None
        """What a step without a question of its own asks (None: its activity says)."""
        self._keys_say_running = False
        """The footer's label for space: "pause" while the run was running when it was drawn."""
        self.changing = asyncio.Lock()
        """Held while a step opens or its activity changes: keys and a table-of-contents choice
        arriving together take turns, so none works on widgets another is replacing."""
        self.navigation = Navigation(self)
        """The step the step keys want, drawn once a row of them has been read."""
        self.before = BeforeAfter(self)
        """A "before" beside the live run (pinned, or the step's start) and the views showing it."""
        self.playground = Playground(self)
        """The playground's files and traffic switch (its keys delegate to it)."""
        self.live = LiveServer(self)  # the playground beside a real server (its keys delegate to it)
        self.reveal = Reveal(self)
        self.sweeps = Sweeps(self)
        self.dials = Dials(self)
        self.question = Question(self)
        self.drafts = Drafts(self)

    @property
    def step(self):
        """The step on show, as drawn (its figures may still be pending, see `show_step`)."""
        return self.shown if self.shown is not None else self.steps[self.index]

    @property
    def settings(self):
        return self.app.settings

    @property
    def stack(self) -> ViewStack:
        return self.query_one(ViewStack)

    # -- layout
    def compose(self) -> ComposeResult:
        yield StepHeader(id="header")
        with Horizontal(id="body"):
            with Pane(id="lesson-pane"):
                yield LessonMarkdown(id="lesson", ascii_only=self.settings.ascii_only)
                yield HintBox(id="hints")
                yield ActivityPanel(id="activity")
                yield LessonMarkdown(id="reveal", ascii_only=self.settings.ascii_only)
            with Vertical(id="sim-column"):
                yield SimStatus(id="sim-status")
                yield DialList(id="dials")
                yield ViewStack(VIEW_KINDS, id="views")
        with Vertical(id="bottom"):
            yield NoticeLine(id="notice")
            yield GoalBar(id="goal")
            yield KeyBar(id="keys")

    async def on_mount(self) -> None:
        ascii_only = self.settings.ascii_only
        self.set_class(ascii_only, "-ascii")
        self.query_one(KeyBar).ascii_only = ascii_only
        self.query_one(GoalBar).set_marks(ascii_only, self.settings.glyphs.sep)
        self.query_one(StepHeader).separator = self.settings.glyphs.sep
        first_launch = self.app.store.first_launch()
        # While the orientation is read, the step waits: nothing runs (or redraws) behind it.
        self._held = first_launch
        await self.show_step(self.index)
        if self.app.startup_notice:
            self.say(self.app.startup_notice)
        if first_launch:
            from .orientation import OrientationScreen

            self.app.push_screen(OrientationScreen(), lambda _: self._release())

    def _release(self) -> None:
        """The orientation closed: the step's run starts, as it would have."""
        self._held = False
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
            self._standing_notice = gpu.notice
            self.say(gpu.notice)

    def say(self, message: str, error: bool = False) -> None:
        """Put a line in front of the learner, in place of the goal, until the next key."""
        self._notice_key += 1
        self.query_one(NoticeLine).say(self.app.words(message), error)
        self.query_one(GoalBar).display = not message

    def clear_notice(self) -> None:
        self.say("")

    def on_key(self, event: events.Key) -> None:
        self._standing_notice = ""
        # The next key after a notice puts the goal back, unless that key said something new.
        if self.query_one(NoticeLine).message:
            said = self._notice_key
            self.call_after_refresh(lambda: self._notice_key == said and self.clear_notice())

    # -- steps
    async def show_step(self, index: int) -> None:
        """Open step `index` (0-based): its text, dials, views and a fresh simulation."""
        async with self.changing:
            if self.is_attached:  # not while the app is closing
                await self._show_step(index)

    async def _show_step(self, index: int) -> None:
        index = max(0, min(len(self.summaries) - 1, index))
        try:
            step = draft_of(self.steps, index)  # figures "…" until `self.drafts` fills them
        except SimError as exc:  # a lesson file broken since the app started
            self.say(f"Step {self.summaries[index].number} cannot be opened: {exc}", error=True)
            return
        self.index = index
        self.shown = step
        self.speed = 1.0
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
        delay = FIRST_START_DELAY if first else 0.0
        if step.figures_pending:
            await self.drafts.fill_later(step, index, delay)
        if first:
            self._opening = opening = object()
            await self.settings.clock.later(self, lambda: self._begin(opening), delay)

    async def _show(self, step) -> None:
        self.stop_simulation()
        self.say(self._standing_notice)
        minutes_left = sum(s.minutes for s in self.summaries[self.index:])
        words = self.app.words
        self.query_one(StepHeader).show_step(words(step.section), step.number, len(self.summaries),
                                             words(step.title), minutes_left)
        self._set_zoom(False)  # the playground too: its things to try are in the lesson pane
        progress = self.app.progress
        view = activity_view(step, progress.answers.get(step.number), step.number in progress.completed,
                             seed=step.number)
        # Text, dials and activity at once: each waits on Textual's layout, not on the others.
        await asyncio.gather(self.query_one(LessonMarkdown).update(words(step.body_md)),
                             self.dials.mount(step), self.query_one(ActivityPanel).show(view))
        self.query_one("#lesson-pane").scroll_home(animate=False)
        self.dials.set_hint()
        self.question.set_hints()
        self.before.forget()
        self.playground.left_traffic = None
        self.goal = goal_for(step) if view is None or view.goal() is None else None
        self.reveal.hide()
        self.before.arrange(step)
        # Saved once the step is drawn: a save waits on the disk (fsync).
        self.call_after_refresh(self.app.remember_step, step.number)
        self._focus_lesson()
        self.update_goal()
        self.update_keys()
        if self.index == len(self.summaries) - 1:
            # The end: which steps a learner who skipped or missed some can still go back to.
            others = self.app.progress.still_open([s.number for s in self.summaries if s.number != step.number])
            if others:
                self.say(f"The last step. {others} t opens the table of contents.")

    async def _begin(self, opening: object | None, draw_now: bool = False) -> None:
        """Start the step's simulation and sweep, unless another step was opened meanwhile;
        `draw_now`: its first state drawn at once."""
        if opening is not self._opening:
            return
        self._opening = None
        step = self.step
        self.start_simulation(step.scenario, draw_now=draw_now)
        self.update_keys()
        if self.sweeps.wanted(step):
            await self.sweeps.start(step)

    def on_view_stack_arranged(self, message: ViewStack.Arranged) -> None:
        self.update_keys()

    def start_simulation(self, scenario, draw_now: bool = False) -> None:
        """A run of `scenario`; its first state posted as a frame, or drawn now (`draw_now`)."""
        step = self.step
        try:
            self.sim = self.new_run(scenario, compare=step.compare.scenario if step.compare else None)
        except SimError as exc:
            self.sim = None
            self.say(f"This scenario cannot run: {exc}", error=True)
            return
        for view in self.stack.views("kv", make="kv" in step.views):  # for snapshots without a block size
            view.block_size = scenario.block_size
        self.settings.clock.start(self, self.sim, running=step.starts_running and not self._held)
        if draw_now:
            self.draw_frame(self.sim.frame())
        else:
            self.sim.publish()

    def new_run(self, scenario, compare=None, compare_keeps: tuple[str, ...] = ()) -> LiveSimulation:
        """A run of `scenario` at the app's frame rate and the learner's speed. Raises SimError."""
        from ..simulation import LiveSimulation, keys_read

        return LiveSimulation(scenario, self.post_message, fps=self.settings.fps, compare=compare,
                              compare_keeps=compare_keeps, time_scale=self.speed, keys=keys_read(self.app))

    def stop_simulation(self) -> None:
        if self.sim is not None:
            self.sim.stop()
            self.sim = None

    def adopt_simulation(self, sim) -> None:
        """Run `sim` (made elsewhere: the start setting beside a prediction's) in place of the
        step's run, paused until the activity resumes it."""
        self.stop_simulation()
        self.sim = sim
        self.settings.clock.start(self, sim, running=False)

    def restart_with(self, scenario) -> None:
        """A fresh run of `scenario` (the step's start, a file opened), its values on the dials."""
        self.stop_simulation()
        self.dials.show_values(scenario)
        self.start_simulation(scenario)

    async def begin_now(self) -> None:
        """Start the first step's run now if it is still to start (a moment after the first
        frame): a key acts on it (`BatchApp.run_action`)."""
        if self.sim is None and self._opening is not None:
            await self._begin(self._opening)

    def key_pressed(self, name: str) -> None:
        """A key the step's goal may be waiting for (`goals.StepGoal.key`)."""
        if self.goal is not None and self.goal.key(name):
            self.update_goal()

    # -- frames from the driver
    def on_simulation_frame(self, frame: SimulationFrame) -> None:
        if frame.origin is not self.sim:
            return  # from a step already left
        # The next frame is posted once this one is drawn (after this refresh), not before.
        self.call_after_refresh(frame.origin.frame_shown)
        self.draw_frame(frame)

    def draw_frame(self, frame: SimulationFrame) -> None:
        """The views, the activity, the status line and the goal at the state `frame` holds."""
        frames = {"main": frame.snapshot}
        if frame.compare is not None:
            frames["compare"] = frame.compare
        if self.before.pinned is not None:
            frames["pinned"] = self.before.pinned[0]
        self.stack.update_frame(frames)
        panel = self.query_one(ActivityPanel)
        panel.update_snapshot(frame.snapshot, frame.compare)
        self.update_status(frame.snapshot)
        if self.goal is not None:
            if self.goal.observe(frame.snapshot):
                self.update_goal()
        elif panel.view is not None:
            self.update_goal()  # a challenge's goal line says how far the run is

    def update_status(self, snapshot=None) -> None:
        sim = self.sim
        if sim is None:
            return
        snapshot = snapshot or sim.snapshot()
        line, short = status_line(sim, snapshot, self.settings.glyphs.sep)
        self.query_one(SimStatus).show(line, sim.running, short)
        if sim.running != self._keys_say_running:
            self.update_keys()  # run or pause: the footer says what space does now

    # -- dials
    def on_dial_control_changed(self, message: DialControl.Changed) -> None:
        self.dials.changed(message.dial, message.value)

    def dials_moved(self, moved: dict) -> None:
        """What follows dials set on the live run: the status, the goal, the "before" table's
        title, the curve (of the dials on show) and the activity."""
        self.update_status()
        if self.goal is not None and any([self.goal.dial_moved(name, value) for name, value in moved.items()]):
            self.update_goal()
        self.before.configure()
        step = self.step
        if self.sweeps.wanted(step) and any(map(step.sweep.invalidated_by, moved)):
            self.run_worker(partial(self.sweeps.start, step, self.sim.scenario), group="sweep-start")
        self.run_worker(partial(self.query_one(ActivityPanel).scenario_changed, self.sim.scenario),
                        group="activity")

    def on_dial_control_leave(self, message: DialControl.Leave) -> None:
        self._focus_lesson()

    def on_answer_box_leave(self, message: AnswerBox.Leave) -> None:
        self._focus_lesson()

    # -- activities
    def on_activity_view_updated(self, message: ActivityView.Updated) -> None:
        """A question arrived, or the activity's state changed: its hints, keys and goal."""
        self.question.set_hints()
        self.update_goal()
        self.update_keys()

    def on_activity_view_finished(self, message: ActivityView.Finished) -> None:
        self.app.record_answer(self.step.number, message.answer, completed=message.completed)
        # The answer is in: the plain keys (space, +, -, .) go to the simulation again.
        if isinstance(self.focused, Input):
            self._focus_lesson()
        self.update_goal()
        self.update_keys()

    def on_activity_view_run_dials(self, message: ActivityView.RunDials) -> None:
        self.dials.run(message)

    def update_goal(self) -> None:
        self.question.update_goal()

    async def action_give_up(self) -> None:
        async with self.changing:
            await self.query_one(ActivityPanel).give_up()
            if isinstance(self.focused, Input):
                self._focus_lesson()
            self.update_goal()
            self.update_keys()  # a reading answered this way takes no more number keys

    async def action_new_question(self) -> None:
        async with self.changing:
            await self.query_one(ActivityPanel).new_question()
            self.question.set_hints()
            self.update_goal()
            self.update_keys()  # a new reading question takes number keys again

    # -- the playground's keys, and b (pin) on every step
    def action_save_scenario(self) -> None:
        self.playground.save()

    def action_load_scenario(self) -> None:
        self.playground.load()

    async def action_helpdesk_traffic(self) -> None:
        await self.playground.helpdesk_traffic()

    def action_pick_model(self) -> None:
        self.playground.pick_model()

    def action_live(self, key: str) -> None:
        self.live.act(key)

    def action_pin(self) -> None:
        self.before.pin()

    # -- views
    def action_zoom(self) -> None:
        self._set_zoom(not self.zoomed)
        self.run_worker(self.dials.mount_again, group="dials")
        if self.zoomed and self.focused is self.query_one("#lesson-pane"):
            self.set_focus(None)
        elif not self.zoomed and self.focused is None:
            self._focus_lesson()
        self.update_keys()

    def unzoom(self) -> None:
        """The lesson back in sight (a hint shown while zoomed)."""
        self._set_zoom(False)
        self.run_worker(self.dials.mount_again, group="dials")

    def _set_zoom(self, zoomed: bool) -> None:
        self.zoomed = zoomed
        self.set_class(zoomed, "-zoomed")

    def action_next_views(self) -> None:
        stack = self.stack
        if stack.page_count <= 1:
            self.say("Every view of this step is in sight.")
            return
        stack.next_page()

    # -- keys and focus
    def _focus_lesson(self) -> None:
        """The lesson takes the keys (↑ ↓ scroll it, ← → change step); zoomed, nothing does."""
        pane = self.query_one("#lesson-pane")
        if self.zoomed:
            self.set_focus(None)
        else:
            pane.focus()

    def action_focus_lesson(self) -> None:
        self._focus_lesson()

    def watch_focused(self, focused: Widget | None) -> None:
        """Focus moved (Textual sets it before the focus and blur events go out): the footer and
        the dials' help line say so in the frame that shows the move, not a message later."""
        if not self.is_mounted or not self.query(DialList):
            return
        self.query_one(DialList).update_help()
        self.dials.place_help()
        self.update_keys()

    def update_keys(self) -> None:
        """The footer: the keys that work now, in the words of what they do now."""
        focused = self.focused
        panel = self.query_one(ActivityPanel)
        scenario = self.sim.scenario if self.sim is not None else self.step.scenario
        self._keys_say_running = self.sim is not None and self.sim.running
        state = KeysState(
            focus="typing" if isinstance(focused, Input) else "dial" if isinstance(focused, DialControl) else "lesson",
            dial_numeric=isinstance(focused, DialControl) and focused.spec.is_numeric,
            takes_choices=panel.takes_choices, choices=panel.choice_count, has_input=panel.has_input,
            has_dials=bool(self.step.dials), playground=self.playground.on(self.step),
            pages=self.stack.page_count, page=self.stack.page, give_up_label=panel.give_up_label or "",
            pins=self.before.pins(self.step), pinned=self.before.pinned is not None,
            running=self._keys_say_running, zoomed=self.zoomed, multi_turn=scenario.workload.turns > 1)
        self.query_one(KeyBar).show_keys(*footer_keys(state))

    # -- actions (ids in keys.py)
    def action_next_step(self) -> None:
        self.navigation.step_by(1)

    def action_previous_step(self) -> None:
        self.navigation.step_by(-1)

    def action_go_to_step(self, number: int) -> None:
        self.navigation.step_number(number)

    def action_contents(self) -> None:
        self.navigation.contents()

    def action_hint(self) -> None:
        self.question.next_hint()

    def action_run_pause(self) -> None:
        if self.sim is None:
            return
        if self.sim.done:
            self.say("The workload is finished: r resets the scenario.")
            return
        self.sim.run_pause()
        self.update_status()
        self.update_keys()

    def action_single_iteration(self) -> None:
        if self.sim is not None:
            self.sim.single_iteration()
            self.update_keys()

    def action_faster(self) -> None:
        if self.sim is not None:
            self.speed = self.sim.faster()
            self.update_status()

    def action_slower(self) -> None:
        if self.sim is not None:
            self.speed = self.sim.slower()
            self.update_status()

    async def action_reset_scenario(self) -> None:
        step = self.step
        self.stop_simulation()
        if self.before.active:
            self.before.forget()
            self.before.show_again()
        self.playground.left_traffic = None
        self.restart_with(step.scenario)
        if self.sweeps.wanted(step):
            await self.sweeps.start(step)
        self.say("Scenario reset to the step's start.")
        self.update_keys()

    def action_choose(self, choice: int) -> None:
        self.query_one(ActivityPanel).choose(choice)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":
            return self.query_one(ActivityPanel).takes_choices
        if self.playground.takes(action):
            return self.playground.on(self.step)
        return True

    def on_resize(self) -> None:
        # Crossing a width breakpoint can change the dials' shape (two columns when wide).
        self.call_after_refresh(self.dials.reshape)
        self.call_after_refresh(self.dials.place_help)

    def on_dial_list_help_changed(self, message: DialList.HelpChanged) -> None:
        self.dials.place_help()

    def on_unmount(self) -> None:
        self.stop_simulation()
        self.live.end()

