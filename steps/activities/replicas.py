"""Step 16's drill: replicas for a chat SLO."""

from __future__ import annotations

import math

from sim import planning
from sim.scenario import Scenario

from ..figures import fmt
from .base import DRILL_TOLERANCE, Drill, Kind, Question, Slip, seeded_rng


class ReplicasDrill(Drill):
    """Step 16: read the SLO rate off the step's rate curve, then
    replicas = ⌈peak ÷ (planned share × SLO rate)⌉ (`sim.planning.replicas_needed`, as
    `batchtui plan` counts them). The curve is swept exactly as the app sweeps it
    (`SweepSpec.rate_curve`), so the learner's reading and the check agree; any reading of the
    SLO rate within the tolerance below the curve's answer, up to the saturated rate, counts."""

    name = "replicas"
    title = "Replicas for a chat SLO"
    PEAKS = (60.0, 100.0, 150.0, 200.0, 250.0, 300.0, 400.0)
    SEATS = (256, 128, 64)

    def __init__(self, scenario: Scenario, sweep, tolerance: float = 0.1) -> None:
        super().__init__(tolerance)
        if sweep is None or not sweep.rates or sweep.slo_ttft_p99_ms is None:
            raise ValueError("the replicas drill needs a rate sweep with an SLO")
        self.scenario = scenario
        self.sweep = sweep
        self._curves: dict[int, tuple[float, list]] = {}

    def curve(self, seats: int) -> tuple[float, list]:
        """(saturated rate, the rate points) of the step's curve at `seats` seats."""
        if seats not in self._curves:
            self._curves[seats] = self.sweep.rate_curve(self.scenario, seats)
        return self._curves[seats]

    def slo_rate(self, seats: int):
        """The highest rate of the curve that meets the SLO, every lower one meeting it too, and
        the first that misses (None if none does): (point, next point)."""
        _, points = self.curve(seats)
        return planning.slo_rate(points, self.sweep.slo)

    def new_question(self, seed: int) -> Question:
        rng = seeded_rng(seed)
        peak = float(rng.choice(self.PEAKS))
        seats = int(rng.choice(self.SEATS))
        saturated, _ = self.curve(seats)
        best, miss = self.slo_rate(seats)
        if best is None:
            raise ValueError(f"no rate of the sweep meets the SLO with {seats} seats")
        per_replica = planning.planned_rate(best.rate)
        answer = planning.replicas_needed(peak, best.rate)
        low = (1 - self.tolerance) * best.rate
        high = min(saturated, miss.rate) if miss is not None else saturated
        accepted = tuple(range(planning.replicas_needed(peak, high), planning.replicas_needed(peak, low) + 1))
        share = planning.planned_rate(1.0)
        headroom = fmt(share * 100)
        dial = "" if seats == self.scenario.engine_config().max_num_seqs else \
            " (set the seats dial first)"
        prompt = (f"Peak: **{fmt(peak)} requests/s**, **{seats} seats** a replica{dial}. How many "
                  "**replicas**?")
        hints = (f"The SLO rate is the last point below the {fmt(self.sweep.slo_ttft_p99_ms)} ms line before "
                 "the curve leaves it or the queue runs away (the arrows).",
                 f"replicas = ⌈peak ÷ ({share:g} × SLO rate)⌉: round up, a replica is whole.")
        w = best.window
        after = ""
        if miss is not None:
            after = "; at " + fmt(miss.rate) + " req/s " + (
                "the queue runs away" if not miss.bounded else f"TTFT p99 is {fmt(miss.window['p99_ttft_ms'])} ms")
        lines = [f"- The curve meets the SLO up to **{fmt(best.rate)} req/s** (TTFT p99 "
                 f"{fmt(w['p99_ttft_ms'])} ms){after}.",
                 f"- Each replica: {share:g} × {fmt(best.rate)} = {fmt(per_replica)} req/s.",
                 f"- replicas = ⌈{fmt(peak)} ÷ {fmt(per_replica)}⌉ = ⌈{fmt(peak / per_replica)}⌉ = **{answer}**."]
        slips = (
            Slip(math.ceil(peak / best.rate), f"Leave headroom: plan each replica at {headroom}% of its SLO rate."),
            Slip(peak / per_replica, "Round up: a replica is a whole GPU."),
            Slip(per_replica, "That is one replica's planned rate; divide the peak by it."),
            Slip(best.rate, "That is the SLO rate itself; the question asks for replicas."),
        )
        return Question(prompt, float(answer), "replicas", self.tolerance, hints, "\n".join(lines),
                        tuple(s for s in slips if s.value not in accepted), whole_number=True,
                        run_dials={"engine.max_num_seqs": seats},
                        facts={"peak": peak, "seats": seats, "slo_rate": best.rate, "saturated": saturated,
                               "reading_low": low, "reading_high": high},
                        accepted=tuple(float(a) for a in accepted))


def _check(step) -> None:
    if step.sweep is None or step.sweep.slo_ttft_p99_ms is None:
        raise ValueError("the replicas drill reads a rate curve with an SLO: add [sweep] rates and slo_ttft_p99_ms")


def _build(step) -> ReplicasDrill:
    return ReplicasDrill(step.scenario, step.sweep, step.activity.params.get("tolerance", DRILL_TOLERANCE))


KIND = Kind("drill", "replicas", frozenset({"tolerance", "rates", "outputs"}), _build, _check)
