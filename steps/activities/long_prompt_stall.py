"""Step 10's challenge: a long prompt stalls the decodes."""

from __future__ import annotations

from sim.reports import EngineSnapshot

from ..figures import fmt, ms
from .base import BreakIt, Kind, ShowMe, Verdict


class LongPromptStallChallenge(BreakIt):
    """Step 10: one long prefill stalls every decoding user."""

    name = "long_prompt_stall"

    def __init__(self, gap_ratio_goal: float = 20.0) -> None:
        super().__init__()
        self.ratio = gap_ratio_goal
        self.goal_md = (f"Make the **worst gap between two tokens** more than {fmt(self.ratio)} times "
                        "the typical time per token (TPOT p50).")

    def reached(self, s: EngineSnapshot) -> bool:
        m = s.metrics
        return m.completed >= 20 and m.tpot_p50 > 0 and m.itl_max >= self.ratio * m.tpot_p50

    def breaking(self, lab) -> ShowMe:
        """The long prompts at the dial's longest: the longest stall the step can make. Its
        prefill alone in one iteration, against TPOT p50 at the step's traffic (its steady
        state, `sim.curves.measure_rate`), must pass the goal's ratio."""
        from ..figures import FIGURES

        dial = lab.dials["workload.input.long_len"]
        length = dial.max
        stall = FIGURES["long_prefill_s"].compute(lab)  # the dial's longest, prefilled alone
        point = lab.steady(lab.scenario.workload.request_rate)
        if not point.bounded:
            raise ValueError("the step's traffic has no steady state to measure TPOT at")
        tpot = point.window["median_tpot_ms"] / 1000
        if stall < self.ratio * tpot:
            raise ValueError(f"a prompt of {fmt(length)} tokens stalls {ms(stall)}, less than "
                             f"{fmt(self.ratio)} times TPOT p50 ({ms(tpot)})")
        stall_text = FIGURES["long_prefill_s"].text(lab)  # as the lesson writes it
        return ShowMe({dial.name: length}, (
            f"Show me: long prompts of {fmt(length)} tokens, the dial's longest: each stalls every "
            f"stream {stall_text} s. Wait for one."))

    def explain(self, s: EngineSnapshot) -> Verdict:
        m = s.metrics
        return Verdict("Broken: a long prompt stalled the stream", (
            f"At t {fmt(s.time)} s the worst gap between two tokens was **{ms(m.itl_max)}**, "
            f"{fmt(m.itl_max / m.tpot_p50)} times the typical {ms(m.tpot_p50)}, while TPOT p99 was only "
            f"{ms(m.tpot_p99)}: that iteration carried a long prefill, and every user mid-answer "
            "waited for it."))


KIND = Kind("break_it", "long_prompt_stall", frozenset({"ttft_p99_goal_s", "min_queue", "gap_ratio_goal"}),
            lambda step: LongPromptStallChallenge(step.activity.params.get("gap_ratio_goal", 20.0)))
