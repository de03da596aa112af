"""Step 3's challenge: static batches at peak."""

from __future__ import annotations

from sim.reports import EngineSnapshot

from ..figures import fmt
from .base import BreakIt, Kind, ShowMe, Verdict


class StaticPeakChallenge(BreakIt):
    """Step 3: static batches pushed to peak; TTFT p99 passes a goal."""

    name = "static_peak"

    def __init__(self, ttft_p99_goal_s: float = 10.0) -> None:
        super().__init__()
        self.goal = ttft_p99_goal_s
        self.goal_md = (f"Raise the traffic until **TTFT p99 passes {fmt(self.goal)} s** with static "
                        "batches.")

    def reached(self, s: EngineSnapshot) -> bool:
        return s.metrics.completed >= 20 and s.metrics.ttft_p99 >= self.goal

    def breaking(self, lab) -> ShowMe:
        return self.push_traffic(lab, "push_rate", f"TTFT p99 climbs past {fmt(self.goal)} s.")

    def explain(self, s: EngineSnapshot) -> Verdict:
        m = s.metrics
        return Verdict("Broken: newcomers wait for whole batches", (
            f"At t {fmt(s.time)} s TTFT p99 had reached **{fmt(m.ttft_p99)} s**, with {s.queue_len} "
            f"requests queued and {fmt(m.requests_per_s)} requests/s finished; "
            f"**{fmt(m.padding_share * 100)}%** of seat-iterations were padding, computing tokens "
            "nobody reads. A newcomer waits for the batch in progress, then for every batch ahead "
            "of it."))


KIND = Kind("break_it", "static_peak", frozenset({"ttft_p99_goal_s", "min_queue", "gap_ratio_goal"}),
            lambda step: StaticPeakChallenge(step.activity.params.get("ttft_p99_goal_s", 10.0)))
