"""Step 14's challenge: the cache caps the batch."""

from __future__ import annotations

from sim.reports import EngineSnapshot

from ..figures import fmt
from .base import BreakIt, Kind, ShowMe, Verdict


class CacheCapChallenge(BreakIt):
    """Step 14: the KV cache, not the seats, caps the batch; preemptions happen."""

    name = "cache_cap"

    def __init__(self, block_size: int = 16, prompt_len: int = 8192, output_len: int = 1024) -> None:
        super().__init__()
        self.block_size = block_size
        self.prompt_len = prompt_len
        self.output_len = output_len
        self.goal_md = ("Raise the traffic until the **KV cache is full** and the engine **preempts** a "
                        "sequence while seats are still free.")

    def reached(self, s: EngineSnapshot) -> bool:
        return s.metrics.num_preemptions > 0 and s.running < s.max_num_seqs

    def breaking(self, lab) -> ShowMe:
        return self.push_traffic(lab, "cache_push_rate", "the KV bar fills.")

    def explain(self, s: EngineSnapshot) -> Verdict:
        cache_tokens = s.kv_blocks_usable * self.block_size
        used = s.kv_blocks_used / s.kv_blocks_usable if s.kv_blocks_usable else 0.0
        upper = cache_tokens / self.prompt_len
        lower = cache_tokens / (self.prompt_len + self.output_len)
        preempted = s.metrics.num_preemptions
        return Verdict("Broken: the cache caps the batch", (
            f"At t {fmt(s.time)} s: **{preempted} preemption{'' if preempted == 1 else 's'}**, "
            f"**{s.running} sequences running** of {s.max_num_seqs} seats, the cache "
            f"({fmt(cache_tokens)} tokens) {fmt(used * 100)}% full. The batch sits between the "
            f"{fmt(lower)} sequences that fit at full length and the {fmt(upper)} prompts admitted: "
            "the seats never bind."))


def _build(step) -> CacheCapChallenge:
    w = step.scenario.workload
    return CacheCapChallenge(step.scenario.block_size, w.input.mean, w.output.mean)


KIND = Kind("break_it", "cache_cap", frozenset({"ttft_p99_goal_s", "min_queue", "gap_ratio_goal"}), _build)
