"""The step's live run on the tutorial screen, held in one place: `StepRun.sim`.

The screen makes one `StepRun` and tells it when a step's run starts (at once, or a moment
after the first frame: `opening`, `begin_now`), stops or starts again; the simulation pane, its
dials, the body, the playground and the real server read the run from here, so no copy of it can
fall behind. The keys that act on the run (space, `.`, `+`, `-`, `b`, `r`; `keys.HANDLERS` names
them) and the runs an activity asks for (`ActivityView.RunDials`: a drill's numbers, a
prediction's setting beside the step's start, a break-it's) are done here. Each run posts its
frames to the screen (`post`), which draws them; what a key changed is shown through
`refresh(status=, goal=, keys=)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sim.errors import SimError

from ..formatting import in_app_words
from ..keys import shown

if TYPE_CHECKING:
    from ..simulation import LiveSimulation


class StepRun:
    """The live run of the step on show and the learner's speed for it.

    `post(message)` takes the run's frames (the screen's); `pace(run, running)` drives a run
    (the app's clock, `Clock.start`, for the screen); `stack` is the simulation pane's
    `ViewStack`; `step()` is the step on show and `dials()` its `DialList`; `before` and `sweeps`
    the screen's `BeforeAfter` and `Sweeps`; `say(words, error=)`; `draw(frame)` draws a frame at
    once; `refresh(status=, goal=, keys=)` shows what changed (the status line, the goal line,
    the footer)."""

    def __init__(self, app, post: Callable, pace: Callable[[object, bool], None], stack,
                 step: Callable[[], object], dials: Callable[[], object], before, sweeps,
                 say: Callable[..., None], draw: Callable[[object], None], refresh: Callable[..., None]) -> None:
        self.app = app
        self.post = post
        self.pace = pace
        self.stack = stack
        self.step = step
        self.dials = dials
        self.before = before
        self.sweeps = sweeps
        self.say = say
        self.draw = draw
        self.refresh = refresh
        self.sim: LiveSimulation | None = None
        """The run (None: none runs, or the step's scenario cannot run)."""
        self.speed = 1.0
        """The speed the learner chose (`+`, `-`) on this step: a run started again on it (a dial
        that restarts, `r`, a guess) keeps it; the next step starts at 1x."""
        self.held = False
        """The first launch's orientation is up: a run starts paused until it closes."""
        self.opening: object | None = None
        """The step whose run starts a moment after the first frame (`TutorialScreen.show_step`)."""
        self.hidden = False
        """The terminal is too small to show the run (`BatchApp`'s too-small screen is up): the
        run waits where it is, and a run started meanwhile starts paused."""
        self.resume_when_shown = False
        """The run was running (or a run started meanwhile would have run) when hidden."""

    async def begin(self, opening: object | None, draw_now: bool = False) -> None:
        """Start the step's run and sweep, unless another step was opened meanwhile (`opening`
        is not the one to start); `draw_now`: its first state drawn at once."""
        if opening is not self.opening:
            return
        self.opening = None
        step = self.step()
        self.start(step.scenario, draw_now=draw_now)
        self.refresh()
        if self.sweeps.wanted(step):
            await self.sweeps.start(step)

    async def begin_now(self) -> None:
        """Start the first step's run now if it is still to start (a moment after the first
        frame): a key acts on it (`BatchApp.run_action`)."""
        if self.sim is None and self.opening is not None:
            await self.begin(self.opening)

    def start(self, scenario, draw_now: bool = False) -> None:
        """A run of `scenario`; its first state posted as a frame, or drawn now (`draw_now`)."""
        step = self.step()
        try:
            self.sim = self.new_run(scenario, compare=step.compare.scenario if step.compare else None)
        except SimError as exc:
            self.sim = None
            self.say(f"This scenario cannot run: {exc}", error=True)
            return
        for view in self.stack.views("kv", make="kv" in step.views):  # for snapshots without a block size
            view.block_size = scenario.block_size
        running = step.starts_running and not self.held
        if self.hidden:
            self.resume_when_shown, running = running, False
        self.pace(self.sim, running)
        self.draw(self.sim.frame()) if draw_now else self.sim.publish()

    def new_run(self, scenario, compare=None, compare_keeps: tuple[str, ...] = ()) -> LiveSimulation:
        """A run of `scenario` at the app's frame rate and the learner's speed. Raises SimError."""
        from ..simulation import LiveSimulation, keys_read

        return LiveSimulation(scenario, self.post, fps=self.app.settings.fps, compare=compare,
                              compare_keeps=compare_keeps, time_scale=self.speed, keys=keys_read(self.app))

    def stop(self) -> None:
        if self.sim is not None:
            self.sim.stop()
            self.sim = None

    def release(self) -> None:
        """The orientation closed: the step's run starts, as it would have."""
        self.held = False
        if self.sim is not None and self.step().starts_running:
            self.sim.resume()
            self.refresh(status=True)

    def hide(self) -> None:
        """The terminal became too small to show the run: it pauses where it is (nothing the
        learner cannot see goes by), to go on as it was once `show` is called."""
        if self.hidden:
            return
        self.hidden = True
        self.resume_when_shown = self.sim is not None and self.sim.running
        if self.resume_when_shown:
            self.sim.pause()

    def show(self) -> None:
        """The terminal is big enough again: a run paused by `hide` goes on from where it was."""
        if not self.hidden:
            return
        self.hidden = False
        if self.resume_when_shown and self.sim is not None:
            self.sim.resume()
            self.refresh(status=True)
        self.resume_when_shown = False

    def restart_with(self, scenario, speed: float | None = None) -> None:
        """A fresh run of `scenario` (the step's start, a file opened), its values on the dials;
        at `speed` if given (a real server's pace, `LiveServer`)."""
        self.speed = self.speed if speed is None else speed
        self.stop()
        self.dials().show_values(scenario)
        self.start(scenario)

    # -- keys
    async def reset(self) -> str:
        """`r`: the step's run from its start again, nothing pinned or beside, its curve swept
        again. Returns what to say."""
        step = self.step()
        self.stop()
        if self.before.active:
            self.before.forget()
            self.before.show_again(step, None)
        self.restart_with(step.scenario)
        if self.sweeps.wanted(step):
            await self.sweeps.start(step)
        return "Scenario reset to the step's start."

    def run_pause(self) -> None:
        if self.sim is not None and self.sim.done:
            self.say(f"The workload is finished: {shown('sim.reset')} resets the scenario.")
        elif self.sim is not None:
            self.sim.run_pause()
            self.refresh(status=True)

    def single_iteration(self) -> None:
        if self.sim is not None:
            self.sim.single_iteration()
            self.refresh()

    def faster(self, faster: bool = True) -> None:
        if self.sim is not None:
            self.speed = self.sim.faster() if faster else self.sim.slower()
            self.refresh(status=True, keys=False)

    def pin(self) -> None:
        if self.sim is not None:
            self.say(self.before.pin(self.step(), self.sim))
            self.refresh()

    # -- what an activity asks for
    def run_asked(self, asked) -> dict:
        """Run what an activity asks for (`ActivityView.RunDials`); returns the dial settings
        made (the body has the curve and the activity follow them, as after a dial move)."""
        if self.sim is None:
            return {}
        step, dials = self.step(), self.dials()
        if asked.beside_start and asked.dials and step.compare is None and not self.sim.started:
            # A prediction about a setting: run it with the step's start setting beside it, on
            # the same arrivals, so "before" and "now" read side by side (step 13: uncapped
            # against capped). The run has not started yet, so nothing is lost.
            self._beside_start(step, tuple(asked.dials))
        settings, words = dials.asked(asked.dials, asked.from_start, step.scenario, asked.words)
        applied, error = dials.set(settings)
        if error is not None:
            self.say(f"Refused: {in_app_words(error)}", error=True)
        if asked.fresh and self.sim.started:
            # From time zero with these settings: a mean over the run is this run's alone.
            scenario = self.sim.scenario
            self.stop()
            self.start(scenario)
            if self.sim is None:
                return {}
        self.before.configure(step, self.sim)
        if words:
            self.say(words)
        self.sim.resume()
        self.refresh(status=True, goal=True)
        return applied

    def _beside_start(self, step, keeps: tuple[str, ...]) -> None:
        try:
            run = self.new_run(step.scenario, compare=step.scenario, compare_keeps=keeps)
        except SimError:
            return
        self.stop()
        self.sim = run  # paused until the activity resumes it
        self.pace(run, False)
        self.before.beside(step.scenario)
        self.before.show_again(step, run)
