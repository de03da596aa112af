"""The curve view's sweeps on the tutorial screen: the batch sweep (the cost model, instant) at
once, the rate sweep (headless runs, a few tenths of a second) in a thread beside the app, which
stays live; a sweep of a scenario no longer on show is dropped when it arrives."""

from __future__ import annotations

SWEEP_DELAY = 0.15
"""Seconds between a step's first frame and the start of its rate sweep."""


class Sweeps:
    """The sweeps of one tutorial screen's curve view."""

    def __init__(self, screen) -> None:
        self.screen = screen
        self.swept = None
        """The scenario the curve view's latest sweep is of (an older one arriving late is dropped)."""

    @staticmethod
    def wanted(step) -> bool:
        """The step shows a curve and says what to sweep."""
        return "curve" in step.views and step.sweep is not None

    async def start(self, step, scenario=None) -> None:
        """Sweep `scenario` (the step's own unless a dial moved) for the curve view."""
        from ..simulation import batch_sweep, rate_sweep

        screen = self.screen
        sweep = step.sweep
        scenario = scenario or step.scenario
        self.swept = scenario
        slo = sweep.slo_ttft_p99_ms / 1000 if sweep.slo_ttft_p99_ms else None
        ready = [batch_sweep(scenario, sweep.batch_sizes, sweep.context)] if sweep.batch_sizes else []
        if not sweep.rates:
            self.show(step.number, scenario, ready)
            return
        self.show(step.number, scenario, ready, pending=True)
        number = step.number
        # A moment after the step is drawn: the sweep's thread holds the GIL for tenths of a
        # second, which would hold back the frame that says "sweeping".
        await screen.settings.clock.in_background(
            screen, lambda: rate_sweep(scenario, sweep.rates, sweep.num_prompts, slo),
            lambda result: self.show(number, scenario, ready + [result]), delay=SWEEP_DELAY,
            group="sweep")

    def show(self, number: int, scenario, results, pending: bool = False) -> None:
        screen = self.screen
        if number == screen.step.number and scenario is self.swept:
            for view in screen.stack.views("curve"):
                view.update_curves(results, pending)
            screen.stack.check_sizes()
