"""The tutorial: lesson text and activity on the left, the live simulation on the right."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, Static

if TYPE_CHECKING:
    from ..simulation import LiveSimulation, SimulationFrame

from sim.errors import SimError

from .. import keys
from ..formatting import count, number
from ..step_list import summaries_of
from ..widgets.activities.base import ActivityView
from ..widgets.activity_panel import ActivityPanel
from ..widgets.curve import CurveView
from ..widgets.dial import DialControl
from ..widgets.gauges import GaugesView
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

VIEW_CLASSES = (SeatsView, KVCacheView, IterationView, GaugesView, MetricsView, SparklinesView, CurveView)
"""Every view, one widget each; a step shows those its `views` list names, in that order."""
COMPARE_VIEWS = ("seats", "metrics")

FIRST_START_DELAY = 0.1
"""Seconds between the first frame and the start of the first step's simulation."""

DEFAULT_KEYS = ("step.next", "step.previous", "sim.run_pause", "sim.single_iteration", "step.contents",
                "step.hint", "app.help", "app.quit")
DIAL_KEYS = ("dial.adjust", "dial.move", "dial.type", "sim.run_pause", "step.next", "app.help")
TYPING_KEYS = ("answer.submit", "answer.leave", "chord.hint", "answer.give_up", "chord.next",
               "chord.previous", "chord.contents", "chord.help", "chord.quit")


class TutorialScreen(Screen):
    """One step at a time. Owns the live simulation of the step on show."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = keys.bindings() + [
        Binding(str(n), f"choose({n})", show=False) for n in range(1, 10)
    ]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (160, "-wide")]

    def __init__(self, steps, start_index: int = 0) -> None:
        super().__init__()
        self.steps = steps
        """A `steps.Lessons` (each step built when first shown) or a plain list of steps."""
        self.summaries = summaries_of(steps)
        """Number, title, section and minutes of every step, without building them."""
        self.index = start_index
        self.sim: LiveSimulation | None = None
        self._views: dict[str, object] = {}
        self._opening: object | None = None
        """The step whose simulation starts after the next refresh (see `show_step`)."""
        self._first_opening = True
        self._swept = None
        """The scenario the curve view's latest sweep is of (an older one arriving late is dropped)."""
        self.scenario_file: Path | None = None
        """The playground's file last saved or opened (the prompts suggest it)."""
        self._changing = asyncio.Lock()
        """Held while a step opens or its activity changes: keys and a table-of-contents choice
        arriving together take turns, so none works on widgets another is replacing."""

    @property
    def step(self):
        return self.steps[self.index]

    @property
    def settings(self):
        return self.app.settings

    # -- layout
    def compose(self) -> ComposeResult:
        yield StepHeader(id="header")
        with Horizontal(id="body"):
            with Pane(id="lesson-pane"):
                yield LessonMarkdown(id="lesson", ascii_only=self.settings.ascii_only)
                yield HintBox(id="hints")
                yield ActivityPanel(id="activity")
            # Dials stay in sight above the views, so Tab reaches them before the views' pane.
            with Vertical(id="sim-column"):
                yield SimStatus(id="sim-status")
                yield Vertical(id="dials")
                with Pane(id="sim-pane"):
                    for view_class in VIEW_CLASSES:
                        yield view_class(id=f"view-{view_class.view_name}", classes="view")
                    with Vertical(id="compare"):
                        yield Static(id="compare-label", markup=False)
                        yield SeatsView(id="compare-seats", classes="view")
                        yield MetricsView(id="compare-metrics", classes="view")
        with Vertical(id="bottom"):
            yield NoticeLine(id="notice")
            yield KeyBar(id="keys")

    async def on_mount(self) -> None:
        self._views = {cls.view_name: self.query_one(f"#view-{cls.view_name}") for cls in VIEW_CLASSES}
        self.query_one(KeyBar).ascii_only = self.settings.ascii_only
        self.query_one(StepHeader).separator = self.settings.glyphs.sep
        await self.show_step(self.index)
        if self.app.startup_notice:
            self.say(self.app.startup_notice)

    async def learner_gpu_known(self, gpu, changed: set) -> None:
        """`--gpu` answered: the header names the GPU, the notice says what was found, and the
        step on show opens again if it is one that starts on that GPU."""
        self.query_one(StepHeader).show_gpu(self.app.words(gpu.label))
        if self.index in changed:
            await self.show_step(self.index)
        if gpu.notice:
            self.say(gpu.notice)

    def say(self, message: str, error: bool = False) -> None:
        """Put a line in front of the learner until the next one (or the next step)."""
        self.query_one(NoticeLine).say(self.app.words(message), error)

    # -- steps
    async def show_step(self, index: int) -> None:
        """Open step `index` (0-based): its text, dials, views and a fresh simulation."""
        async with self._changing:
            if self.is_attached:  # not while the app is closing
                await self._show_step(index)

    async def _show_step(self, index: int) -> None:
        index = max(0, min(len(self.summaries) - 1, index))
        try:
            step = self.steps[index]
        except SimError as exc:  # a lesson file broken since the app started
            self.say(f"Step {self.summaries[index].number} cannot be opened: {exc}", error=True)
            return
        self.index = index
        self._stop_simulation()
        self.query_one(NoticeLine).clear()
        minutes_left = sum(s.minutes for s in self.summaries[self.index:])
        words = self.app.words
        self.query_one(StepHeader).show_step(words(step.section), step.number, len(self.summaries),
                                             words(step.title), minutes_left)
        await self.query_one(LessonMarkdown).update(words(step.body_md))
        self.query_one("#lesson-pane").scroll_home(animate=False)
        self.query_one("#sim-pane").scroll_home(animate=False)
        await self._mount_dials(step)
        progress = self.app.progress
        panel = self.query_one(ActivityPanel)
        await panel.show_activity(step, progress.answers.get(step.number), step.number in progress.completed,
                                  seed=step.number)
        self._set_hints()

        self._arrange_views(step.views)
        self._views["kv"].block_size = step.scenario.block_size
        self.query_one("#compare").display = step.compare is not None
        if step.compare is not None:
            self.query_one("#compare-label", Static).update(f"beside it: {words(step.compare.label)}")
        curve = self._views["curve"]
        curve.update_curves((), pending="curve" in step.views and step.sweep is not None)
        self.app.remember_step(step.number)
        self._update_keys()
        if self.settings.autorun:
            # The simulation and the sweep start once this step is on screen: the first frame
            # (and every step change) does not wait for the engine to be imported and built.
            self._opening = opening = object()
            if self._first_opening:
                # At launch, also give Textual's writer thread a moment to put that frame on
                # the terminal: importing the engine (numpy) holds the GIL and held the first
                # frame back by about 0.1 s (benchmarks/app_benchmark.py).
                self._first_opening = False
                self.call_after_refresh(self.set_timer, FIRST_START_DELAY, lambda: self._begin(opening))
            else:
                self.call_after_refresh(self._begin, opening)
        else:  # tests: everything now, so a screenshot taken next has it
            self._begin(None)

    def _begin(self, opening: object | None) -> None:
        """Start the step's simulation and sweep, unless another step was opened meanwhile."""
        if opening is not self._opening:
            return
        self._opening = None
        step = self.step
        if "curve" in step.views and step.sweep is not None:
            self._start_sweep(step)
        self._start_simulation(step.scenario)
        self._update_keys()

    def _arrange_views(self, names) -> None:
        """Show the step's views, and only those, in the order its lesson lists them."""
        for name, view in self._views.items():
            view.display = name in names
        pane = self.query_one("#sim-pane")
        wanted = [self._views[name] for name in names]
        current = [child for child in pane.children if child in wanted]
        if current != wanted:
            compare = self.query_one("#compare")
            for view in wanted:
                pane.move_child(view, before=compare)

    def _set_hints(self) -> None:
        # A drill question's own hints (with its numbers) come before the step's general ones.
        hints = self.query_one(ActivityPanel).hints + tuple(self.step.hints)
        self.query_one(HintBox).set_hints(tuple(self.app.words(h) for h in hints))

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
        if self.settings.autorun:
            self.run_worker(self.sim.run(), name="driver", group="driver", exclusive=True)
            if step.activity.kind != "predict":  # a prediction is made before the run starts
                self.sim.resume()
        self.sim.publish()

    def _stop_simulation(self) -> None:
        if self.sim is not None:
            self.sim.stop()
            self.sim = None

    async def _mount_dials(self, step) -> None:
        container = self.query_one("#dials")
        await container.remove_children()
        controls = [DialControl(spec, spec.value(step.scenario)) for spec in step.dials]
        if controls:
            await container.mount_all(controls)
        container.display = bool(controls)

    def _start_sweep(self, step, scenario=None) -> None:
        """The curve view's sweeps of `scenario` (the step's own unless a dial moved): the batch
        sweep (the cost model, instant) at once, the rate sweep (headless runs, a few tenths of
        a second) in a thread so the app stays live."""
        from ..simulation import batch_sweep, rate_sweep

        sweep = step.sweep
        scenario = scenario or step.scenario
        self._swept = scenario
        slo = sweep.slo_ttft_p99_ms / 1000 if sweep.slo_ttft_p99_ms else None
        ready = [batch_sweep(scenario, sweep.batch_sizes, sweep.context)] if sweep.batch_sizes else []
        if not sweep.rates:
            self._show_sweeps(step.number, scenario, ready)
        elif self.settings.autorun:
            self._show_sweeps(step.number, scenario, ready, pending=True)
            self._rate_sweep_worker(step.number, scenario, sweep, slo, ready)
        else:  # tests: the same points, computed now, so the screenshot has them
            self._show_sweeps(step.number, scenario, ready + [rate_sweep(scenario, sweep.rates, sweep.num_prompts, slo)])

    @work(thread=True, exclusive=True, group="sweep")
    def _rate_sweep_worker(self, number: int, scenario, sweep, slo, ready: list) -> None:
        from ..simulation import rate_sweep

        result = rate_sweep(scenario, sweep.rates, sweep.num_prompts, slo)
        self.app.call_from_thread(self._show_sweeps, number, scenario, ready + [result])

    def _show_sweeps(self, number: int, scenario, results, pending: bool = False) -> None:
        if number == self.step.number and scenario is self._swept:
            self._views["curve"].update_curves(results, pending)

    # -- frames from the driver
    def on_simulation_frame(self, frame: SimulationFrame) -> None:
        if frame.origin is not self.sim:
            return  # from a step already left
        for view in self._views.values():
            if view.display:
                view.update_snapshot(frame.snapshot)
        if frame.compare is not None:
            self.query_one("#compare-seats", SeatsView).update_snapshot(frame.compare)
            self.query_one("#compare-metrics", MetricsView).update_snapshot(frame.compare)
        self.query_one(ActivityPanel).update_snapshot(frame.snapshot, frame.compare)
        self._update_status(frame.snapshot)

    def _update_status(self, snapshot=None) -> None:
        sim = self.sim
        if sim is None:
            return
        snapshot = snapshot or sim.engine.snapshot()
        g = self.settings.glyphs
        if snapshot.finished:
            state = "finished (r resets)"
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

    # -- dials
    def on_dial_control_changed(self, message: DialControl.Changed) -> None:
        dial, value = message.dial, message.value
        notice = self.query_one(NoticeLine)
        try:
            value = dial.spec.check(value)
        except ValueError as exc:
            self.say(f"Refused: {exc}", error=True)
            return
        if self.sim is None:
            return
        try:
            self.sim.set_dial(dial.spec.name, value)
        except SimError as exc:
            self.say(f"Refused: {exc}", error=True)
            return
        dial.set_value(value)
        notice.clear()
        self._update_status()
        step = self.step
        if "curve" in step.views and step.sweep is not None and step.sweep.invalidated_by(dial.spec.name):
            self._start_sweep(step, self.sim.engine.scenario)  # the curve is of the dials on show
        self.run_worker(self.query_one(ActivityPanel).scenario_changed(self.sim.engine.scenario),
                        group="activity")

    # -- activities
    def on_activity_view_updated(self, message: ActivityView.Updated) -> None:
        """A question arrived: its hints and the keys it takes."""
        self._set_hints()
        self._update_keys()

    def on_activity_view_finished(self, message: ActivityView.Finished) -> None:
        self.app.record_answer(self.step.number, message.answer, completed=True)
        self._update_keys()

    def on_activity_view_run_dials(self, message: ActivityView.RunDials) -> None:
        """Run the traffic an activity asks for (a drill's own numbers; a prediction's run)."""
        if self.sim is None:
            return
        try:
            for path, value in message.dials.items():
                self.sim.set_dial(path, value)
        except SimError as exc:
            self.say(f"Refused: {exc}", error=True)
        for dial in self.query(DialControl):
            if dial.spec.name in message.dials:
                dial.set_value(message.dials[dial.spec.name])
        if message.dials:
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
        self._update_keys()

    async def action_give_up(self) -> None:
        async with self._changing:
            await self.query_one(ActivityPanel).give_up()
            self._update_keys()  # a reading answered this way takes no more number keys

    async def action_new_question(self) -> None:
        async with self._changing:
            await self.query_one(ActivityPanel).new_question()
            self._set_hints()
            self._update_keys()  # a new reading question takes number keys again

    def action_save_scenario(self) -> None:
        from ..scenario_files import save_scenario_file
        from .file_prompt import FilePromptScreen

        def chosen(path) -> None:
            if path is not None and self.sim is not None and self.check_action("save_scenario", ()):
                self.scenario_file = path
                self.say(save_scenario_file(self.sim.engine.scenario, path))

        if self.sim is not None:
            self.app.push_screen(FilePromptScreen("Save this scenario as", self._suggested_file(), saving=True,
                                                  own_file=self.scenario_file), chosen)

    def action_load_scenario(self) -> None:
        from ..scenario_files import Unusable, read_scenario
        from .file_prompt import FilePromptScreen

        def chosen(path) -> None:
            if path is None or self.sim is None or not self.check_action("load_scenario", ()):
                return  # cancelled, or the step changed meanwhile
            self.scenario_file = path
            try:
                scenario = read_scenario(path)
            except Unusable as exc:
                self.say(f"Kept the current scenario: {exc}", error=True)
                return
            self.say(f"Loaded the scenario from {path}.")
            self._stop_simulation()
            for dial in self.query(DialControl):
                dial.set_value(dial.spec.value(scenario))
            self._start_simulation(scenario)

        if self.sim is not None:
            self.app.push_screen(FilePromptScreen("Open a scenario file", self._suggested_file(), saving=False), chosen)

    def _suggested_file(self) -> Path:
        return self.scenario_file or self.settings.scenario_path or self.app.store.directory / "playground.toml"

    # -- keys and focus
    def on_descendant_focus(self) -> None:
        self._update_keys()

    def on_descendant_blur(self) -> None:
        self._update_keys()

    def _update_keys(self) -> None:
        focused = self.focused
        if isinstance(focused, Input):
            ids = TYPING_KEYS
        elif isinstance(focused, DialControl):
            # A choice dial (GPU, model, policy) is moved with the arrows only: nothing to type.
            ids = tuple(k for k in DIAL_KEYS if k != "dial.type" or focused.spec.is_numeric)
        else:
            ids = list(DEFAULT_KEYS)
            if self.query_one(ActivityPanel).takes_choices:
                ids.insert(0, "answer.choose")
            if self.step.dials or self.query_one(ActivityPanel).has_input:
                ids.insert(3, "dial.reach")
            ids = tuple(ids)
        labels = {"sim.run_pause": "pause"} if self.sim is not None and self.sim.running else {}
        if self.query_one(ActivityPanel).has_input:
            labels["dial.reach"] = "answer"  # the answer box comes first in the tab order
        choices = self.query_one(ActivityPanel).choice_count
        key_text = {"answer.choose": f"1-{choices}"} if choices else {}
        self.query_one(KeyBar).show_keys(ids, labels, key_text)

    # -- actions (ids in keys.py)
    async def action_next_step(self) -> None:
        if self.index + 1 >= len(self.summaries):
            self.say("This is the last step. t opens the table of contents.")
            return
        await self.show_step(self.index + 1)

    async def action_previous_step(self) -> None:
        if self.index == 0:
            self.say("This is the first step.")
            return
        await self.show_step(self.index - 1)

    async def action_go_to_step(self, number: int) -> None:
        for i, step in enumerate(self.summaries):
            if step.number == number:
                await self.show_step(i)
                return

    def action_contents(self) -> None:
        from .contents import ContentsScreen

        def chosen(number: int | None) -> None:
            if number is not None:
                self.run_worker(self.action_go_to_step(number), group="navigation")

        self.app.push_screen(ContentsScreen(self.summaries, self.step.number, self.app.progress.completed), chosen)

    def action_hint(self) -> None:
        if not self.query_one(HintBox).reveal_next():
            words = "This step has no hints." if not self.step.hints else "No more hints for this step."
            self.say(words)
        else:
            self.query_one("#lesson-pane").scroll_end(animate=False)

    def action_run_pause(self) -> None:
        if self.sim is None:
            return
        if self.sim.engine.done:
            self.say("The workload is finished: r resets the scenario.")
            return
        self.sim.run_pause()  # without autorun (tests) no driver loop runs, so nothing moves
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
        for dial in self.query(DialControl):
            dial.set_value(dial.spec.value(step.scenario))
        self._start_simulation(step.scenario)
        if "curve" in step.views and step.sweep is not None:
            self._start_sweep(step)
        self.say("Scenario reset to the step's start.")
        self._update_keys()

    def action_choose(self, choice: int) -> None:
        self.query_one(ActivityPanel).choose(choice)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":
            return self.query_one(ActivityPanel).takes_choices
        if action in ("save_scenario", "load_scenario"):
            return self.step.activity.kind == "playground"
        return True

    def on_unmount(self) -> None:
        self._stop_simulation()
