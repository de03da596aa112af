"""The tutorial: lesson text and activity on the left, the live simulation on the right.

At 80x24 everything a step's claim needs is in sight without scrolling: the dials take a line
each, the views are given the lines they need and paged (`v`) when they do not all fit, a run
beside the step's own is a two-column table rather than a second stack of views, and `z` gives
the simulation the whole screen (the playground starts that way on small terminals).
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
from textual.screen import Screen
from textual.widgets import Input

if TYPE_CHECKING:
    from ..simulation import LiveSimulation, SimulationFrame

from sim.errors import SimError

from .. import keys
from ..activity_kinds import activity_view
from ..formatting import count, in_app_words, number
from ..goals import StepGoal, goal_for
from ..step_list import draft_of, summaries_of
from ..widgets.activities.base import ActivityView
from ..widgets.activity_panel import ActivityPanel
from ..widgets.answer_box import AnswerBox
from ..widgets.compare import CompareView
from ..widgets.curve import CurveView
from ..widgets.dial import DialControl
from ..widgets.dial_list import DialList
from ..widgets.gauges import GaugesView
from ..widgets.goal_bar import GoalBar
from ..widgets.hint_box import HintBox
from ..widgets.iteration import IterationView
from ..widgets.key_bar import KeyBar
from ..widgets.kv_cache import KVCacheView
from ..widgets.lesson import LessonMarkdown
from ..widgets.metrics import MetricsView
from ..widgets.notice_line import NoticeLine
from ..widgets.pane import Pane
from ..widgets.seats import SeatsView
from ..widgets.sim_status import SimStatus
from ..widgets.sparklines import SparklinesView
from ..widgets.step_header import StepHeader
from ..widgets.view_stack import ViewKind, ViewStack


def _beside(make):
    """A view of the run beside the step's own (the comparison run)."""
    def made(**kwargs):
        view = make(**kwargs)
        view.source = "compare"
        return view
    return made


VIEW_KINDS = (
    ViewKind("seats", SeatsView), ViewKind("compare_seats", _beside(SeatsView)), ViewKind("kv", KVCacheView),
    ViewKind("iteration", IterationView), ViewKind("gauges", GaugesView), ViewKind("metrics", MetricsView),
    ViewKind("compare", CompareView), ViewKind("sparklines", SparklinesView), ViewKind("curve", CurveView),
)
"""Every view the simulation pane can show. A step names those it shows in its `views` list;
"compare" (two runs' metrics in two columns) and "compare_seats" are added for a step with a
run beside its own."""

FIRST_START_DELAY = 0.1
"""Seconds between the first frame and the start of the first step's simulation."""
REVEAL_CONTEXT = 6
"""Lines of the answer (a guess, a verdict) kept in sight above the reveal text."""
SWEEP_DELAY = 0.15
"""Seconds between a step's first frame and the start of its rate sweep."""
SHORT_BELOW = 24
"""Terminal lines from which the dials keep a help line of their own."""
DIAL_ROWS = 6
"""Dial lines in sight at most (in one column); a longer list scrolls as focus moves."""
DIAL_ROWS_ZOOMED = 4
"""In two columns, zoomed: the views need the height more."""

DEFAULT_KEYS = ("step.next", "step.previous", "sim.run_pause", "view.zoom", "sim.single_iteration",
                "step.contents", "step.hint", "app.help", "app.quit")
"""The footer's keys when the lesson has the keys, most wanted first (the end gives way at 80
columns, except `?`)."""
DIAL_KEYS = ("dial.adjust", "dial.move", "dial.type", "focus.lesson", "sim.run_pause", "app.help")
TYPING_KEYS = ("answer.submit", "answer.leave", "chord.hint", "answer.give_up", "chord.next",
               "chord.previous", "chord.contents", "chord.help", "chord.quit")


class TutorialScreen(Screen):
    """One step at a time. Owns the live simulation of the step on show."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = keys.bindings() + [
        Binding(str(n), f"choose({n})", show=False) for n in range(1, 10)
    ]
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
        self.zoomed = False
        """The simulation has the whole screen (`z`); the lesson is hidden."""
        self._opening: object | None = None
        """The step whose simulation starts after the next refresh (see `show_step`)."""
        self._first_opening = True
        self._held = False
        """The first launch's orientation is up: the step's run waits for it to close."""
        self._reveal_shown = False
        self._notice_key = 0
        """Counts the notices said, so a key press clears only the one it found."""
        self.goal: StepGoal | None = None
        """What a step without a question of its own asks (None: its activity says)."""
        self.pinned = None
        """(snapshot, scenario) pinned with `b` as "before"; None when nothing is pinned."""
        self.beside_start = None
        """The step's starting scenario, run beside a prediction's setting as "before"."""
        self._swept = None
        """The scenario the curve view's latest sweep is of (an older one arriving late is dropped)."""
        self._keys_say_running = False
        """The footer's label for space: "pause" while the run was running when it was drawn."""
        self.scenario_file: Path | None = None
        """The playground's file last saved or opened (the prompts suggest it)."""
        self.left_traffic = None
        """The playground's scenario as `m` found it when it loaded the multi-turn helpdesk
        (`m` again goes back to its traffic); None once a step, reset or file replaces it."""
        self._changing = asyncio.Lock()
        """Held while a step opens or its activity changes: keys and a table-of-contents choice
        arriving together take turns, so none works on widgets another is replacing."""
        self._wanted: int | None = None
        """The step the learner's n/p keys asked for last, while the change is on its way."""
        self._navigating = False
        """A worker is opening `_wanted` (the step keys queue behind it coalesce)."""

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
        self.query_one(GoalBar).set_marks(ascii_only)
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
        if self.sim is not None and self.step.activity.kind != "predict":
            self.sim.resume()
            self._update_status()
            self._update_keys()

    async def learner_gpu_known(self, gpu, changed: set) -> None:
        """`--gpu` answered: the header names the GPU, the notice says what was found, and the
        step on show opens again if it is one that starts on that GPU."""
        self.query_one(StepHeader).show_gpu(self.app.words(gpu.label))
        if self.index in changed:
            await self.show_step(self.index)
        if gpu.notice:
            self.say(gpu.notice)

    def say(self, message: str, error: bool = False) -> None:
        """Put a line in front of the learner, in place of the goal, until the next key."""
        self._notice_key += 1
        self.query_one(NoticeLine).say(self.app.words(message), error)
        self.query_one(GoalBar).display = not message

    def clear_notice(self) -> None:
        self.say("")

    def on_key(self, event: events.Key) -> None:
        # The next key after a notice puts the goal back, unless that key said something new.
        if self.query_one(NoticeLine).message:
            said = self._notice_key
            self.call_after_refresh(lambda: self._notice_key == said and self.clear_notice())

    # -- steps
    async def show_step(self, index: int) -> None:
        """Open step `index` (0-based): its text, dials, views and a fresh simulation."""
        async with self._changing:
            if self.is_attached:  # not while the app is closing
                await self._show_step(index)

    async def _show_step(self, index: int) -> None:
        index = max(0, min(len(self.summaries) - 1, index))
        try:
            # A step whose figures the simulator has not computed yet opens as a draft (its
            # figures read "…"), filled beside the app once it is drawn: the first frame does
            # not wait for numpy and the engine, nor a step change for its figures.
            step = draft_of(self.steps, index)
        except SimError as exc:  # a lesson file broken since the app started
            self.say(f"Step {self.summaries[index].number} cannot be opened: {exc}", error=True)
            return
        self.index = index
        self.shown = step
        # One layout and one frame for the whole change, not one per part.
        with self.app.batch_update():
            await self._show(step)
        # The simulation and the sweep start once this step is on screen: the first frame (and
        # every step change) does not wait for the engine to be imported and built. At launch,
        # also give Textual's writer thread a moment to put that frame on the terminal:
        # importing the engine (numpy) holds the GIL (benchmarks/app_benchmark.py).
        self._opening = opening = object()
        delay = FIRST_START_DELAY if self._first_opening else 0.0
        self._first_opening = False
        if step.figures_pending:
            await self.settings.clock.in_background(
                self, lambda: self._filled(index), lambda filled: self._figures_ready(step, filled),
                delay=delay, group="figures")
        await self.settings.clock.later(self, lambda: self._begin(opening), delay)

    def _filled(self, index: int):
        """Step `index` with its figures computed (in a thread: the simulator runs), or the error
        that stopped them."""
        try:
            return self.steps[index]
        except SimError as exc:
            return exc

    def _figures_ready(self, draft, filled) -> None:
        """A draft's figures arrived: put them in, once nothing else is changing the step."""
        if draft is self.shown:
            self.run_worker(partial(self._fill_in, draft, filled), group="figures-in")

    async def _fill_in(self, draft, filled) -> None:
        """The lesson text, hints, activity wording and reveal of the step on show with its
        figures; what the learner did meanwhile (a guess, a hint shown) stays."""
        async with self._changing:
            if draft is not self.shown or not self.is_attached:
                return
            if isinstance(filled, SimError):
                self.say(f"Step {draft.number}'s figures cannot be computed: {filled}", error=True)
                return
            self.shown = filled
            words = self.app.words
            panel = self.query_one(ActivityPanel)
            updates = [self.query_one("#lesson", LessonMarkdown).update(words(filled.body_md))]
            if filled.activity != draft.activity and not isinstance(self.focused, Input):
                progress = self.app.progress
                view = activity_view(filled, progress.answers.get(filled.number),
                                     filled.number in progress.completed, seed=filled.number)
                updates.append(panel.show(view))
            if self._reveal_shown:
                updates.append(self.query_one("#reveal", LessonMarkdown).update(words(filled.reveal_md)))
            with self.app.batch_update():
                await asyncio.gather(*updates)
            self._set_hints(keep_shown=True)
            self._update_goal()
            self._update_keys()

    async def _show(self, step) -> None:
        self._stop_simulation()
        self.clear_notice()
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
                             self._mount_dials(step), self.query_one(ActivityPanel).show(view))
        self.query_one("#lesson-pane").scroll_home(animate=False)
        self._set_dial_hint()
        self._set_hints()
        self.pinned = self.beside_start = self.left_traffic = None
        self.goal = goal_for(step) if view is None or view.goal() is None else None
        self._reveal_shown = False
        self.query_one("#reveal").display = False
        self._arrange_views(step)
        # Saved once the step is drawn: a save waits on the disk (fsync).
        self.call_after_refresh(self.app.remember_step, step.number)
        self._focus_lesson()
        self._update_goal()
        self._update_keys()
        if self.index == len(self.summaries) - 1:
            # The end: which steps a learner who skipped or missed some can still go back to.
            others = self.app.progress.still_open([s.number for s in self.summaries if s.number != step.number])
            if others:
                self.say(f"The last step. {others} t opens the table of contents.")

    async def _begin(self, opening: object | None) -> None:
        """Start the step's simulation and sweep, unless another step was opened meanwhile."""
        if opening is not self._opening:
            return
        self._opening = None
        step = self.step
        self._start_simulation(step.scenario)
        self._update_keys()
        if "curve" in step.views and step.sweep is not None:
            await self._start_sweep(step)

    def _view_names(self, step) -> list[str]:
        """The views in the order the lesson lists them. A run beside the step's own shows as its
        seats under the step's and the metrics of both in two columns; a "before" (the start
        setting beside a prediction's, or a pinned run) as the metrics in two columns."""
        compare = step.compare is not None
        two_runs = compare or self.beside_start is not None or self.pinned is not None
        names = []
        for name in step.views:
            names.append("compare" if two_runs and name == "metrics" else name)
            if compare and name == "seats":
                names.append("compare_seats")
        if two_runs and "compare" not in names:
            names.append("compare")
        return names

    def _arrange_views(self, step) -> None:
        stack = self.stack
        for view in stack.views("seats"):
            view.caption = None
        if step.compare is not None:
            main, beside = step.scenario, step.compare.scenario
            headers, title = _compare_headers(main, beside, step.compare.label)
            for view in stack.views("compare"):
                view.configure("main", "compare", headers, self.app.words(title))
            for view in stack.views("seats"):
                view.caption = headers[0] if title == "" else None
            for view in stack.views("compare_seats"):
                view.caption = headers[1] if title == "" else "beside"
        self._configure_before()
        pending = "curve" in step.views and step.sweep is not None
        for view in stack.views("curve"):
            view.update_curves((), pending=pending)
        stack.show(self._view_names(step))

    def _configure_before(self) -> None:
        """The two-column table of a "before" and the live "now", titled with what changed."""
        if self.beside_start is not None:
            source, before = "compare", self.beside_start
        elif self.pinned is not None:
            source, before = "pinned", self.pinned[1]
        else:
            return
        now = self.sim.scenario if self.sim is not None else self.step.scenario
        changed = _setting_changes(self.step.dials, before, now)
        if changed:
            title = "; ".join(changed)
        elif self.pinned is not None:
            title = f"before: pinned at t {self.pinned[0].time:.1f} s"
        else:
            title = ""
        for view in self.stack.views("compare"):
            view.configure(source, "main", ("before", "now"), self.app.words(title))

    def _show_views_again(self) -> None:
        """The views after a "before" came or went; the page with the table in sight."""
        self._configure_before()
        names = self._view_names(self.step)
        self.stack.show(names, keep_frames=True, page_of="compare" if "compare" in names else None)
        self.stack.update_frame(self._frames())

    def _frames(self) -> dict:
        frames = {}
        if self.sim is not None:
            frames["main"] = self.sim.snapshot()
        if self.pinned is not None:
            frames["pinned"] = self.pinned[0]
        return frames

    def on_view_stack_arranged(self, message: ViewStack.Arranged) -> None:
        self._update_keys()

    def _set_hints(self, keep_shown: bool = False) -> None:
        # A drill question's own hints (with its numbers) come before the step's general ones.
        hints = self.query_one(ActivityPanel).hints + tuple(self.step.hints)
        self.query_one(HintBox).set_hints(tuple(self.app.words(h) for h in hints), keep_shown)

    def _start_simulation(self, scenario) -> None:
        from ..simulation import LiveSimulation

        step = self.step
        try:
            self.sim = LiveSimulation(scenario, self.post_message, fps=self.settings.fps,
                                      compare=step.compare.scenario if step.compare else None)
        except SimError as exc:
            self.sim = None
            self.say(f"This scenario cannot run: {exc}", error=True)
            return
        for view in self.stack.views("kv"):  # for snapshots that do not carry the block size
            view.block_size = scenario.block_size
        # A prediction is made before the run starts.
        self.settings.clock.start(self, self.sim, running=step.activity.kind != "predict" and not self._held)
        self.sim.publish()

    def _stop_simulation(self) -> None:
        if self.sim is not None:
            self.sim.stop()
            self.sim = None

    async def _mount_dials(self, step) -> None:
        dials = [(spec, spec.value(step.scenario)) for spec in step.dials]
        columns, rows = self._dial_shape(len(dials))
        await self.query_one(DialList).set_dials(dials, rows, columns)

    def _dial_shape(self, count: int) -> tuple[int, int]:
        """Columns and lines in sight for `count` dials: two columns on a wide pane."""
        wide = self.zoomed or self.has_class("-wide")
        if wide and count > DIAL_ROWS_ZOOMED:
            return 2, DIAL_ROWS_ZOOMED
        return 1, DIAL_ROWS

    def _set_dial_hint(self) -> None:
        has_input = self.query_one(ActivityPanel).has_input
        hint = "tab: answer box, then dials" if has_input else "tab: the dials (← → turn them)"
        self.query_one(DialList).set_rest_hint(hint)

    async def _start_sweep(self, step, scenario=None) -> None:
        """The curve view's sweeps of `scenario` (the step's own unless a dial moved): the batch
        sweep (the cost model, instant) at once, the rate sweep (headless runs, a few tenths of
        a second) beside the app, which stays live."""
        from ..simulation import batch_sweep, rate_sweep

        sweep = step.sweep
        scenario = scenario or step.scenario
        self._swept = scenario
        slo = sweep.slo_ttft_p99_ms / 1000 if sweep.slo_ttft_p99_ms else None
        ready = [batch_sweep(scenario, sweep.batch_sizes, sweep.context)] if sweep.batch_sizes else []
        if not sweep.rates:
            self._show_sweeps(step.number, scenario, ready)
            return
        self._show_sweeps(step.number, scenario, ready, pending=True)
        number = step.number
        # A moment after the step is drawn: the sweep's thread holds the GIL for tenths of a
        # second, which would hold back the frame that says "sweeping".
        await self.settings.clock.in_background(
            self, lambda: rate_sweep(scenario, sweep.rates, sweep.num_prompts, slo),
            lambda result: self._show_sweeps(number, scenario, ready + [result]), delay=SWEEP_DELAY,
            group="sweep")

    def _show_sweeps(self, number: int, scenario, results, pending: bool = False) -> None:
        if number == self.step.number and scenario is self._swept:
            for view in self.stack.views("curve"):
                view.update_curves(results, pending)
            self.stack.check_sizes()

    # -- frames from the driver
    def on_simulation_frame(self, frame: SimulationFrame) -> None:
        if frame.origin is not self.sim:
            return  # from a step already left
        # The next frame is posted once this one is drawn (after this refresh), not before.
        self.call_after_refresh(frame.origin.frame_shown)
        frames = {"main": frame.snapshot}
        if frame.compare is not None:
            frames["compare"] = frame.compare
        if self.pinned is not None:
            frames["pinned"] = self.pinned[0]
        self.stack.update_frame(frames)
        panel = self.query_one(ActivityPanel)
        panel.update_snapshot(frame.snapshot, frame.compare)
        self._update_status(frame.snapshot)
        if self.goal is not None:
            if self.goal.observe(frame.snapshot):
                self._update_goal()
        elif panel.view is not None:
            self._update_goal()  # a challenge's goal line says how far the run is

    def _update_status(self, snapshot=None) -> None:
        sim = self.sim
        if sim is None:
            return
        snapshot = snapshot or sim.snapshot()
        g = self.settings.glyphs
        if snapshot.finished:
            state = "finished (r resets)"
        elif sim.behind:
            # The frame's share of time ran out before the simulated clock caught up.
            speed = sim.speed
            state = f"running {speed:.0f}x (CPU busy)" if speed >= 10 else f"running {speed:.2g}x (CPU busy)"
        elif sim.running:
            state = f"running {number(sim.time_scale)}x"
        else:
            state = "paused"
        t = snapshot.time
        clock = f"t {t:.2f} s" if t < 100 else f"t {t:.1f} s" if t < 1000 else f"t {t:,.0f} s"
        n = snapshot.iteration
        short = f"{state}{g.sep}{clock}"
        line = f"{short}{g.sep}iter {n:,}" if n < 10_000 else f"{short}{g.sep}iter {count(n)}"
        self.query_one(SimStatus).show(line, sim.running, short)
        if sim.running != self._keys_say_running:
            self._update_keys()  # run or pause: the footer says what space does now

    # -- dials
    def on_dial_control_changed(self, message: DialControl.Changed) -> None:
        dial, value = message.dial, message.value
        try:
            value = dial.spec.check(value)
        except ValueError as exc:
            self.say(f"Refused: {in_app_words(exc)}", error=True)
            return
        if self.sim is None:
            return
        try:
            self.sim.set_dial(dial.spec.name, value)
        except SimError as exc:
            self.say(f"Refused: {in_app_words(exc)}", error=True)
            return
        dial.set_value(value)
        self.clear_notice()
        self._dials_moved({dial.spec.name: value})

    def _set_dials(self, settings: dict) -> tuple[dict, SimError | None]:
        """Set dials (`sim.dials` paths) on the live run in order, and the step's dial controls
        to the values set; stops at the first one refused. Returns those set and the error."""
        applied = {}
        error = None
        for path, value in settings.items():
            try:
                self.sim.set_dial(path, value)
            except SimError as exc:
                error = exc
                break
            applied[path] = value
        for dial in self.query(DialControl):
            if dial.spec.name in applied:
                dial.set_value(applied[dial.spec.name])
        return applied, error

    def _dials_moved(self, moved: dict) -> None:
        """What follows dials set on the live run: the status, the goal, the "before" table's
        title, the curve (of the dials on show) and the activity."""
        self._update_status()
        if self.goal is not None and any([self.goal.dial_moved(name, value) for name, value in moved.items()]):
            self._update_goal()
        self._configure_before()
        step = self.step
        if "curve" in step.views and step.sweep is not None and any(map(step.sweep.invalidated_by, moved)):
            self.run_worker(partial(self._start_sweep, step, self.sim.scenario), group="sweep-start")
        self.run_worker(partial(self.query_one(ActivityPanel).scenario_changed, self.sim.scenario),
                        group="activity")

    def on_dial_control_leave(self, message: DialControl.Leave) -> None:
        self._focus_lesson()

    def on_answer_box_leave(self, message: AnswerBox.Leave) -> None:
        self._focus_lesson()

    # -- activities
    def on_activity_view_updated(self, message: ActivityView.Updated) -> None:
        """A question arrived, or the activity's state changed: its hints, keys and goal."""
        self._set_hints()
        self._update_goal()
        self._update_keys()

    def on_activity_view_finished(self, message: ActivityView.Finished) -> None:
        self.app.record_answer(self.step.number, message.answer, completed=message.completed)
        # The answer is in: the plain keys (space, +, -, .) go to the simulation again.
        if isinstance(self.focused, Input):
            self._focus_lesson()
        self._update_goal()
        self._update_keys()

    def on_activity_view_run_dials(self, message: ActivityView.RunDials) -> None:
        """Run the traffic an activity asks for (a drill's own numbers; a prediction's run)."""
        if self.sim is None:
            return
        step = self.step
        if message.beside_start and message.dials and step.compare is None and not self.sim.started:
            # A prediction about a setting: run it with the step's start setting beside it, on
            # the same arrivals, so "before" and "now" read side by side (step 13: uncapped
            # against capped). The run has not started yet, so nothing is lost.
            self._start_beside(message.dials)
        settings, back = dict(message.dials), []
        if message.from_start:
            # The step's other dials go back to where it began, first: the settings asked for
            # break it from there.
            for control in self.query(DialControl):
                start = control.spec.value(step.scenario)
                if control.spec.name not in settings and control.value != start:
                    back.append(control.spec.label)
                    settings = {control.spec.name: start, **settings}
        _, error = self._set_dials(settings)
        if error is not None:
            self.say(f"Refused: {in_app_words(error)}", error=True)
        if message.fresh and self.sim.started:
            # From time zero with these settings: a mean over the run is this run's alone.
            scenario = self.sim.scenario
            self._stop_simulation()
            self._start_simulation(scenario)
            if self.sim is None:
                return
        self._configure_before()
        if message.words:
            self.say(message.words + (f" {', '.join(back)} back to the step's start." if back else ""))
        elif message.dials:
            # In the dials' own words where the step has that dial (a drill may also set the
            # GPU and model of its question).
            controls = {d.spec.name: d.spec for d in self.query(DialControl)}
            settings = []
            for path, value in message.dials.items():
                spec = controls.get(path)
                if spec is None:
                    settings.append(f"{path.rsplit('.', 1)[-1].replace('_', ' ')} {number(value)}")
                else:
                    settings.append(f"{spec.label} {number(value)}" + (f" {spec.unit}" if spec.unit else ""))
            self.say(f"Running with {', '.join(settings)}.")
        self.sim.resume()
        self._update_status()
        self._update_goal()
        self._update_keys()

    def _start_beside(self, dials: dict) -> None:
        from ..simulation import LiveSimulation

        start = self.step.scenario
        try:
            sim = LiveSimulation(start, self.post_message, fps=self.settings.fps, compare=start,
                                 compare_keeps=tuple(dials))
        except SimError:
            return
        self._stop_simulation()
        self.sim = sim
        self.settings.clock.start(self, sim, running=False)
        self.beside_start = start
        self.pinned = None
        self._show_views_again()

    def _update_goal(self) -> None:
        """The goal line: the activity's own goal, or the step's (done once it is done)."""
        view = self.query_one(ActivityPanel).view
        goal = view.goal() if view is not None else None
        words = self.app.words
        if goal is not None and goal.ask:
            self.query_one(GoalBar).show(words(goal.ask), goal.state, words(goal.note))
        elif self.goal is not None:
            number = self.step.number
            done = self.goal.done
            if done and number not in self.app.progress.completed:
                self.app.record_answer(number, "done", completed=True)
            before = self.goal.completable and number in self.app.progress.completed
            state = "done" if done or before else "open"
            note = self.goal.note() or ("done before" if before else "")
            self.query_one(GoalBar).show(words(self.goal.ask), state, words(note))
        self._update_reveal()

    def _update_reveal(self) -> None:
        """The lesson's reveal text, once the step's activity has been answered on this visit: a
        step revisited asks again (a prediction says the learner's earlier guess) with its answer
        hidden, so nothing answers a question before it is asked."""
        step = self.step
        view = self.query_one(ActivityPanel).view
        # A plot that answers the prediction (step 7's batch curve) waits for the guess too.
        hidden = step.activity.params.get("hides", ()) if view is not None and not view.answered else ()
        for curve in self.stack.views("curve"):
            curve.hold_back(hidden)
        if self._reveal_shown or not step.reveal_md:
            return
        if view is None or view.answered:
            self._reveal_shown = True
            self.run_worker(partial(self._show_reveal, step), group="reveal")

    async def _show_reveal(self, step) -> None:
        reveal = self.query_one("#reveal", LessonMarkdown)
        await reveal.update(self.app.words(step.reveal_md))
        current = self.step
        if step is not current and step.figures_pending and step.number == current.number:
            await reveal.update(self.app.words(current.reveal_md))  # its figures arrived meanwhile
            step = current
        if step is current:
            reveal.display = True
            self.call_after_refresh(self._reveal_into_view)

    def _reveal_into_view(self) -> None:
        """The reveal's first lines into sight, under the last lines of the answer above it."""
        pane = self.query_one("#lesson-pane", Pane)
        reveal = self.query_one("#reveal")
        pane.scroll_to(y=max(0, reveal.virtual_region.y - REVEAL_CONTEXT), animate=False)

    async def action_give_up(self) -> None:
        async with self._changing:
            await self.query_one(ActivityPanel).give_up()
            if isinstance(self.focused, Input):
                self._focus_lesson()
            self._update_goal()
            self._update_keys()  # a reading answered this way takes no more number keys

    async def action_new_question(self) -> None:
        async with self._changing:
            await self.query_one(ActivityPanel).new_question()
            self._set_hints()
            self._update_goal()
            self._update_keys()  # a new reading question takes number keys again

    def action_save_scenario(self) -> None:
        from ..scenario_files import save_scenario_file
        from .file_prompt import FilePromptScreen

        def chosen(path) -> None:
            if path is not None and self.sim is not None and self.check_action("save_scenario", ()):
                self.scenario_file = path
                self.say(save_scenario_file(self.sim.scenario, path))
                if self.goal is not None and self.goal.key("save_scenario"):
                    self._update_goal()

        if self.sim is not None:
            self.app.push_screen(FilePromptScreen("Save this scenario as", self._suggested_file(), saving=True,
                                                  own_file=self.scenario_file, within=self._files_within()),
                                 chosen)

    def action_load_scenario(self) -> None:
        from ..scenario_files import Unusable, read_scenario
        from .file_prompt import FilePromptScreen

        def chosen(path) -> None:
            if path is None or self.sim is None or not self.check_action("load_scenario", ()):
                return  # cancelled, or the step changed meanwhile
            self.scenario_file = path
            try:
                scenario = read_scenario(path)
            except Unusable as exc:  # (the file by its name: the prompt above showed where)
                self.say(f"Kept the current scenario: {str(exc).replace(str(path), path.name)}", error=True)
                return
            self.say(f"Loaded the scenario from {path}.")
            self.left_traffic = None
            self._stop_simulation()
            for dial in self.query(DialControl):
                dial.set_value(dial.spec.value(scenario))
            self._start_simulation(scenario)
            if self.goal is not None and self.goal.key("load_scenario"):
                self._update_goal()

        if self.sim is not None:
            self.app.push_screen(FilePromptScreen("Open a scenario file", self._suggested_file(), saving=False,
                                                  within=self._files_within()), chosen)

    async def action_helpdesk_traffic(self) -> None:
        """`m` in the playground: the multi-turn helpdesk's traffic set on the dials (hardware,
        model and engine dials stay as they are); again: back to single turns."""
        from steps.activities import helpdesk_switch

        if self.sim is None and self._opening is not None:
            await self._begin(self._opening)  # in the same read as the step change: start it now
        if self.sim is None or not self.check_action("helpdesk_traffic", ()):
            return
        current = self.sim.scenario
        try:
            switch = helpdesk_switch(self.step, current, self.left_traffic)
        except SimError as exc:
            self.say(f"Kept the traffic as it is: {in_app_words(exc)}", error=True)
            return
        applied, error = self._set_dials(switch.settings)
        if error is not None:
            self.say(f"Refused: {in_app_words(error)}", error=True)
        else:
            self.left_traffic = current if switch.multi_turn else None
            self.say(_switch_words(switch, self.step.dials, current, self.sim.scenario))
        if applied:
            self._dials_moved(applied)
        self._update_keys()

    def _files_within(self) -> Path | None:
        """Served in a web page, the file prompts stay in the state folder."""
        return self.app.store.directory if self.settings.served else None

    def _suggested_file(self) -> Path:
        return self.scenario_file or self.settings.scenario_path or self.app.store.directory / "playground.toml"

    # -- before and after
    def action_pin(self) -> None:
        """Pin the run's metrics now as "before", beside the live "now"; again, unpin."""
        if self.sim is None:
            return
        if self.step.compare is not None or self.beside_start is not None:
            self.say("This step already runs a setting beside this one.")
            return
        if self.pinned is not None:
            self.pinned = None
            self.say("Unpinned.")
        else:
            self.pinned = (self.sim.snapshot(), self.sim.scenario)
            self.say("Pinned as before: move a dial and compare.")
        self._show_views_again()
        self._update_keys()

    # -- views
    def action_zoom(self) -> None:
        self._set_zoom(not self.zoomed)
        self.run_worker(self._mount_dials_again, group="dials")
        if self.zoomed and self.focused is self.query_one("#lesson-pane"):
            self.set_focus(None)
        elif not self.zoomed and self.focused is None:
            self._focus_lesson()
        self._update_keys()

    async def _mount_dials_again(self) -> None:
        """The dial list in the shape the new width wants, keeping their values and focus."""
        dials = self.query_one(DialList)
        columns, rows = self._dial_shape(len(dials.dials))
        await dials.set_dials([(d.spec, d.value) for d in dials.dials], rows, columns)

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

    def on_descendant_focus(self) -> None:
        self._update_keys()

    def on_descendant_blur(self) -> None:
        self._update_keys()

    def _update_keys(self) -> None:
        focused = self.focused
        panel = self.query_one(ActivityPanel)
        if isinstance(focused, Input):
            ids = TYPING_KEYS
        elif isinstance(focused, DialControl):
            # A choice dial (GPU, model, policy) is moved with the arrows only: nothing to type.
            ids = tuple(k for k in DIAL_KEYS if k != "dial.type" or focused.spec.is_numeric)
        else:
            ids = list(DEFAULT_KEYS)
            if panel.takes_choices:
                ids.insert(0, "answer.choose")
            if self.step.dials or panel.has_input:
                ids.insert(ids.index("view.zoom"), "dial.reach")
            if self.step.activity.kind == "playground":
                ids.insert(ids.index("view.zoom"), "playground.helpdesk")
            if self.stack.page_count > 1:
                ids.insert(ids.index("view.zoom"), "view.next_page")
            if panel.give_up_label:
                ids.insert(ids.index("view.zoom"), "answer.give_up")
            if self.step.compare is None and self.beside_start is None:
                ids.insert(ids.index("view.zoom") + 1, "sim.pin")
            ids = tuple(ids)
        self._keys_say_running = self.sim is not None and self.sim.running
        labels = {"sim.run_pause": "pause"} if self._keys_say_running else {}
        if panel.has_input:
            labels["dial.reach"] = "answer"  # the answer box comes first in the tab order
        if self.stack.page_count > 1:
            labels["view.next_page"] = f"views {self.stack.page + 1}/{self.stack.page_count}"
        if self.zoomed:
            labels["view.zoom"] = "unzoom"
        if self.pinned is not None:
            labels["sim.pin"] = "unpin"
        scenario = self.sim.scenario if self.sim is not None else self.step.scenario
        if scenario.workload.turns > 1:
            labels["playground.helpdesk"] = "single-turn"
        if panel.give_up_label:
            labels["answer.give_up"] = panel.give_up_label
        choices = panel.choice_count
        key_text = {"answer.choose": f"1-{choices}"} if choices else {}
        self.query_one(KeyBar).show_keys(ids, labels, key_text)

    # -- actions (ids in keys.py)
    async def action_next_step(self) -> None:
        at = self._wanted if self._wanted is not None else self.index
        if at + 1 >= len(self.summaries):
            self.say(f"This is the last step. {self.still_open() or 'Every step is done.'} "
                     "t opens the table of contents.")
            return
        self._go(at + 1)

    def still_open(self) -> str:
        """The steps not completed yet, in a line ("" if none)."""
        return self.app.progress.still_open([s.number for s in self.summaries])

    async def action_previous_step(self) -> None:
        at = self._wanted if self._wanted is not None else self.index
        if at == 0:
            self.say("This is the first step.")
            return
        self._go(at - 1)

    def _go(self, index: int) -> None:
        """Open step `index` soon. Step keys arriving together (twenty n's in one read) coalesce:
        each moves the target, and only the step they end on is drawn after the one already
        being drawn."""
        self._wanted = index
        if not self._navigating:
            self._navigating = True
            self.run_worker(self._navigate, group="navigation")

    async def _navigate(self) -> None:
        try:
            while self._wanted is not None and self._wanted != self.index and self.is_attached:
                wanted = self._wanted
                await self.show_step(wanted)
                if self.index != wanted and self._wanted == wanted:
                    break  # it could not be opened (said so): do not try again
        finally:
            self._wanted = None
            self._navigating = False

    async def action_go_to_step(self, number: int) -> None:
        for i, step in enumerate(self.summaries):
            if step.number == number:
                await self.show_step(i)
                return

    def action_contents(self) -> None:
        from .contents import ContentsScreen

        def chosen(number: int | None) -> None:
            if number is not None:
                self.run_worker(partial(self.action_go_to_step, number), group="navigation")

        self.app.push_screen(ContentsScreen(self.summaries, self.step.number, self.app.progress.completed), chosen)

    def action_hint(self) -> None:
        hints = self.query_one(HintBox)
        if not hints.reveal_next():
            words = "This step has no hints." if not self.step.hints else "No more hints for this step."
            show_me = self.query_one(ActivityPanel).give_up_label
            if show_me:  # after the hints, the key that shows it
                words += f" {keys.display(keys.BY_ID['answer.give_up'].keys, self.settings.ascii_only)}: {show_me}."
            self.say(words)
            return
        if self.zoomed:
            self._set_zoom(False)
            self.run_worker(self._mount_dials_again, group="dials")
        # Once laid out, bring the new hint into sight wherever the text was scrolled to.
        self.call_after_refresh(self._show_hint)

    def _show_hint(self) -> None:
        self.query_one("#lesson-pane", Pane).scroll_to_widget(self.query_one(HintBox), animate=False)

    def action_run_pause(self) -> None:
        if self.sim is None:
            return
        if self.sim.done:
            self.say("The workload is finished: r resets the scenario.")
            return
        self.sim.run_pause()
        self._update_status()
        self._update_keys()

    def action_single_iteration(self) -> None:
        if self.sim is not None:
            self.sim.single_iteration()
            self._update_keys()

    def action_faster(self) -> None:
        if self.sim is not None:
            self.sim.faster()
            self._update_status()

    def action_slower(self) -> None:
        if self.sim is not None:
            self.sim.slower()
            self._update_status()

    async def action_reset_scenario(self) -> None:
        step = self.step
        self._stop_simulation()
        if self.pinned is not None or self.beside_start is not None:
            self.pinned = self.beside_start = None
            self._show_views_again()
        self.left_traffic = None
        for dial in self.query(DialControl):
            dial.set_value(dial.spec.value(step.scenario))
        self._start_simulation(step.scenario)
        if "curve" in step.views and step.sweep is not None:
            await self._start_sweep(step)
        self.say("Scenario reset to the step's start.")
        self._update_keys()

    def action_choose(self, choice: int) -> None:
        self.query_one(ActivityPanel).choose(choice)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":
            return self.query_one(ActivityPanel).takes_choices
        if action in ("save_scenario", "load_scenario", "helpdesk_traffic"):
            return self.step.activity.kind == "playground"
        return True

    def on_resize(self) -> None:
        # Crossing a width breakpoint can change the dials' shape (two columns when wide).
        self.call_after_refresh(self._reshape_dials)
        self.call_after_refresh(self._place_dial_help)

    def on_dial_list_help_changed(self, message: DialList.HelpChanged) -> None:
        self._place_dial_help()

    def _place_dial_help(self) -> None:
        """On a short terminal the help line under the dials is hidden (tutorial.tcss): a
        focused dial's help shows in the status line instead."""
        help_line = self.query_one("#dial-help")
        focused = help_line.has_class("-focused") and self.has_class("-short")
        self.query_one(SimStatus).show_help(help_line.text if focused else None)

    def _reshape_dials(self) -> None:
        dials = self.query_one(DialList)
        rows = self.query_one("#dial-rows")
        columns, _ = self._dial_shape(len(dials.dials))
        if rows.has_class("-grid") != (columns > 1):
            self.run_worker(self._mount_dials_again, group="dials")

    def on_unmount(self) -> None:
        self._stop_simulation()


MODEL_KIND_WORDS = {"encoder": "embedder", "decoder": "chat LLM"}


def _compare_headers(main, beside, label: str) -> tuple[tuple[str, str], str]:
    """Column headers for two runs in the words of what differs between them: the batching
    policy, the kind of model, or the seats; else generic ones and the comparison's label as a
    title line."""
    a, b = main.engine_config(), beside.engine_config()
    if a.batching != b.batching:
        return (a.batching, b.batching), ""
    kinds = main.deployment().model.kind, beside.deployment().model.kind
    if kinds[0] != kinds[1]:
        return (MODEL_KIND_WORDS.get(kinds[0], kinds[0]), MODEL_KIND_WORDS.get(kinds[1], kinds[1])), ""
    if a.max_num_seqs != b.max_num_seqs and a.batching == "continuous":
        return (f"{a.max_num_seqs:,} seats", f"{b.max_num_seqs:,} seats"), ""
    return ("here", "beside"), f"beside: {label}"


def _switch_words(switch, step_dials, before, now) -> str:
    """The notice for `m`: what it loaded and every setting it changed, in the dials' words
    (a setting the step has no dial for in the simulator's); a word if prefix caching is off."""
    from sim import dials as sim_dials

    on_dials = {dial.name for dial in step_dials}
    changes = _setting_changes(step_dials, before, now)
    changes += [f"{sim_dials.find(path).label} {number(sim_dials.get_value(before, path))} → {number(value)}"
                for path, value in switch.settings.items() if path not in on_dials]
    words = f"{switch.name}: {'; '.join(changes)}." if changes else f"Already {switch.name}."
    if switch.multi_turn and not sim_dials.get_value(now, "engine.enable_prefix_caching"):
        words += " Prefix caching is off: each turn computes its whole history again."
    return words[0].upper() + words[1:]


def _setting_changes(dials, before, now) -> list[str]:
    """The step's dials that differ between two scenarios, in their own words: "Seats 256 → 32"."""
    changes = []
    for dial in dials:
        old, new = dial.value(before), dial.value(now)
        if old != new:
            changes.append(f"{dial.label} {number(old)} → {number(new)}")
    return changes
