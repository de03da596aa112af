"""Step 8's challenge: past the knee."""

from __future__ import annotations

from sim.reports import EngineSnapshot

from ..figures import fmt, ms
from .base import BreakIt, Kind, ShowMe, Verdict


class PastKneeChallenge(BreakIt):
    """Step 8: past saturation, TTFT explodes while tokens/s and TPOT hold still."""

    name = "past_knee"

    def __init__(self, ttft_p99_goal_s: float = 2.0, min_queue: int = 50) -> None:
        super().__init__()
        self.goal = ttft_p99_goal_s
        self.min_queue = min_queue
        self.full_tokens_per_s = 0.0
        self.full_tpot = 0.0
        self.full_time = 0.0
        """When "before" was read (simulated s)."""
        self.goal_md = (f"Push the traffic past saturation until **TTFT p99 passes {fmt(self.goal)} s** "
                        f"and at least {min_queue} requests wait.")

    def reset(self) -> None:
        super().reset()
        self.full_tokens_per_s = self.full_tpot = self.full_time = 0.0

    def breaking(self, lab) -> ShowMe:
        return self.push_traffic(lab, "far_rate", "only the queue grows.")

    def observe(self, s: EngineSnapshot) -> None:
        # "Before" is taken where the claim is about: the seats already full (saturated), the
        # queue still short; not at the calm rate below the knee.
        if s.running >= s.max_num_seqs - 2 and 0 < s.queue_len < self.min_queue // 2 and s.metrics.completed >= 20:
            self.full_tokens_per_s = s.metrics.output_tokens_per_s
            self.full_tpot = s.metrics.tpot_p50
            self.full_time = s.time

    def reached(self, s: EngineSnapshot) -> bool:
        return s.metrics.ttft_p99 >= self.goal and s.queue_len >= self.min_queue

    def explain(self, s: EngineSnapshot) -> Verdict:
        # Readings of one moment each, dated: the live panes go on moving after them.
        m = s.metrics
        before = ""
        if self.full_tokens_per_s:
            before = (f" At t {fmt(self.full_time)} s, the seats just full, it made "
                      f"{fmt(self.full_tokens_per_s)} tokens/s at a TPOT p50 of {ms(self.full_tpot)}.")
        return Verdict("Broken: past the knee only the queue grows", (
            f"At t {fmt(s.time)} s TTFT p99 was **{fmt(m.ttft_p99)} s** with **{s.queue_len} requests "
            f"waiting**, while the engine made {fmt(m.output_tokens_per_s)} tokens/s at a TPOT p50 of "
            f"{ms(m.tpot_p50)}, {s.running} of {s.max_num_seqs} seats busy.{before} More traffic adds only waiting, and the wait grows every second."))


KIND = Kind("break_it", "past_knee", frozenset({"ttft_p99_goal_s", "min_queue", "gap_ratio_goal"}),
            lambda step: PastKneeChallenge(step.activity.params.get("ttft_p99_goal_s", 2.0),
                                           step.activity.params.get("min_queue", 50)))
