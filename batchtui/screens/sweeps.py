"""The curve view's sweeps on the tutorial screen: the batch sweep (the cost model, instant) at
once, the rate sweep (headless runs, a few tenths of a second) in a thread beside the app, which
stays live; a sweep of a scenario no longer on show is dropped when it arrives."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..widgets.view_stack import ViewStack

SWEEP_DELAY = 0.15
"""Seconds between a step's first frame and the start of its rate sweep."""


class Sweeps:
    """The sweeps drawn by the curve views of `stack`. `background(work, done, delay=, group=)`
    runs `done(work())` beside the app (the screen's clock, `Clock.in_background`)."""

    def __init__(self, stack: ViewStack, background: Callable[..., Awaitable[None]]) -> None:
        self.stack = stack
        self.background = background
        self.swept = None
        """The scenario the curve views' latest sweep is of (an older one arriving late is
        dropped); None once the step it was of is left."""

    @staticmethod
    def wanted(step) -> bool:
        """The step shows a curve and says what to sweep."""
        return "curve" in step.views and step.sweep is not None

    def forget(self) -> None:
        """A step opens: a sweep still to arrive is of a step left."""
        self.swept = None

    async def start(self, step, scenario=None) -> None:
        """Sweep `scenario` (the step's own unless a dial moved) for the curve view."""
        from ..simulation import batch_sweep, rate_sweep

        sweep = step.sweep
        scenario = scenario or step.scenario
        self.swept = scenario
        slo = sweep.slo_ttft_p99_ms / 1000 if sweep.slo_ttft_p99_ms else None
        ready = [batch_sweep(scenario, sweep.batch_sizes, sweep.context)] if sweep.batch_sizes else []
        if not sweep.rates:
            self.show(scenario, ready)
            return
        self.show(scenario, ready, pending=True)
        # A moment after the step is drawn: the sweep's thread holds the GIL for tenths of a
        # second, which would hold back the frame that says "sweeping".
        await self.background(lambda: rate_sweep(scenario, sweep.rates, sweep.num_prompts, slo),
                              lambda result: self.show(scenario, ready + [result]), delay=SWEEP_DELAY,
                              group="sweep")

    def show(self, scenario, results, pending: bool = False) -> None:
        if scenario is self.swept:
            for view in self.stack.views("curve"):
                view.update_curves(results, pending)
            self.stack.check_sizes()
