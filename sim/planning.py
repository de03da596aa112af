"""Planning arithmetic: the latency SLO a run is judged by, the rate one replica is planned at
and the replicas a peak needs, the SLO rate read off a rate curve, and the batch an offline job
holds in its KV cache. Step 16's drill and figures and `batchtui plan` all plan with these (one
`Slo`, one headroom, one `replicas_needed`), and `batchtui plan --offline` plans its job with
`offline_plan`; the search for the highest rate meeting an SLO, which runs the simulator, is
`sim.rate_plan`. Standard library only: the lessons import it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HEADROOM", "OfflinePlan", "Slo", "kv_fit_seats", "mean_peak_blocks", "offline_engine", "offline_plan",
           "planned_rate", "quickest", "replicas_needed", "slo_rate"]


# -- the SLO ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slo:
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None

    def misses(self, metrics: dict) -> list[str]:
        """What the run missed, in words; empty when it meets the SLO."""
        out = []
        if self.ttft_p99_ms is not None and metrics["p99_ttft_ms"] > self.ttft_p99_ms:
            out.append(f"p99 TTFT {metrics['p99_ttft_ms']:.1f} ms > {self.ttft_p99_ms:g} ms")
        if self.tpot_p99_ms is not None and metrics["p99_tpot_ms"] > self.tpot_p99_ms:
            out.append(f"p99 TPOT {metrics['p99_tpot_ms']:.2f} ms > {self.tpot_p99_ms:g} ms")
        return out

    def meets(self, point) -> bool:
        """Whether a rate point (`sim.curves.RatePoint`) meets the SLO: a steady state whose
        window is inside every bound."""
        return point.bounded and not self.misses(point.window)

    def excess(self, metrics: dict) -> float:
        """The worst ratio of measured to allowed, at least 1: ranks near misses."""
        return max(1.0, self.share(metrics))

    def share(self, metrics: dict) -> float:
        """The worst ratio of measured to allowed (0 without a bound): how close a run came."""
        ratios = [0.0]
        if self.ttft_p99_ms:
            ratios.append(metrics["p99_ttft_ms"] / self.ttft_p99_ms)
        if self.tpot_p99_ms:
            ratios.append(metrics["p99_tpot_ms"] / self.tpot_p99_ms)
        return max(ratios)

    def text(self) -> str:
        parts = []
        if self.ttft_p99_ms is not None:
            parts.append(f"p99 TTFT <= {self.ttft_p99_ms:g} ms")
        if self.tpot_p99_ms is not None:
            parts.append(f"p99 TPOT <= {self.tpot_p99_ms:g} ms")
        return " and ".join(parts)


# -- replicas for a peak ------------------------------------------------------------------------

HEADROOM = 0.20
"""The share of each replica's SLO rate kept spare (bursts above the planned peak, a replica
lost): a replica is planned at 1 - HEADROOM = 80 % of the highest rate that meets the SLO. This
is the target-utilisation rule the Kubernetes Horizontal Pod Autoscaler sizes replicas by
(desiredReplicas = ceil[currentReplicas x currentMetricValue / desiredMetricValue], so each runs
at the target share of what it can carry); `batchtui plan --headroom` and step 16 both mean it."""


def planned_rate(slo_rate: float, headroom: float = HEADROOM) -> float:
    """The rate one replica is planned to carry: (1 - headroom) x its SLO rate."""
    if not 0 <= headroom < 1:
        raise ValueError(f"headroom is a share of a replica's rate, from 0 up to (not including) 1, got {headroom:g}")
    return (1 - headroom) * slo_rate


def replicas_needed(peak_rate: float, slo_rate: float, headroom: float = HEADROOM) -> int:
    """ceil(peak / ((1 - headroom) x SLO rate)), at least 1."""
    return max(1, math.ceil(peak_rate / planned_rate(slo_rate, headroom) - 1e-9))


def slo_rate(points: Sequence, slo: Slo) -> tuple[object | None, object | None]:
    """On a rate curve (`sim.curves.RatePoint`s by rising rate): the highest point meeting
    `slo` with every lower one meeting it too (None if the first misses), and the first point
    that misses (None if none does)."""
    best = None
    for point in points:
        if not slo.meets(point):
            return best, point
        best = point
    return best, None


# -- offline planning ---------------------------------------------------------------------------

def mean_peak_blocks(block_size: int, lengths: Sequence[tuple[int, int]], max_model_len: int,
                     window_groups: int = 0, window_blocks: int = 0) -> float:
    """KV blocks a request of these (prompt, output) lengths holds at its peak, on average: the
    engine's own counts (`sim.request.peak_tokens`, `sim.kv.blocks_for`: a sliding-window layout's
    `window_groups` groups hold up to `window_blocks` each besides)."""
    from .kv import blocks_for  # (here, not at the top: the tutorial imports this module, not the core)
    from .request import peak_tokens

    if not lengths:
        return 1.0
    total = 0
    for prompt, output in lengths:
        total += blocks_for(peak_tokens(prompt, output, max_model_len), block_size, window_groups, window_blocks)
    return total / len(lengths)


def kv_fit_seats(usable_blocks: int, block_size: int, lengths: Sequence[tuple[int, int]],
                 max_model_len: int, window_groups: int = 0, window_blocks: int = 0) -> int:
    """How many such requests the KV cache holds at their peak at once: the largest batch that
    runs without preemption."""
    peak = mean_peak_blocks(block_size, lengths, max_model_len, window_groups, window_blocks)
    return max(1, math.floor(usable_blocks / peak))


@dataclass(frozen=True)
class OfflinePlan:
    """The batch sizes an offline job (every request queued at once, vLLM's `LLM` class) is run
    with to find its quickest: the largest batch the KV cache holds with every request at its
    peak (`kv_fit`: it never preempts) and, where it differs, vLLM's default seat count (more
    seats than the cache holds preempt, yet may finish sooner); or the seats the user gave."""

    requests: int
    peak_blocks: float
    """KV blocks a request holds at its peak, on average (`mean_peak_blocks`)."""
    kv_fit: int
    """`kv_fit_seats`, at most `requests`."""
    candidates: tuple[tuple[str, int], ...]
    """(why, max_num_seqs) for each run."""


def offline_plan(lengths: Sequence[tuple[int, int]], usable_blocks: int, block_size: int, max_model_len: int,
                 default_seats: int, seats: int | None = None, window_groups: int = 0,
                 window_blocks: int = 0) -> OfflinePlan:
    """The plan for a job of these (prompt, output) lengths: the seats given, else the KV-fit
    batch and vLLM's `default_seats` (only the first when both run alike: at most as many
    requests as seats, each holds one either way). `window_groups`, `window_blocks`: the
    deployment's `KvLayout`'s."""
    requests = len(lengths)
    windows = (window_groups, window_blocks)
    fit = min(requests, kv_fit_seats(usable_blocks, block_size, lengths, max_model_len, *windows))
    if seats is not None:
        candidates: tuple[tuple[str, int], ...] = (("as given", seats),)
    elif min(default_seats, requests) != fit:
        candidates = (("fits the KV cache", fit), ("vLLM default", default_seats))
    else:
        candidates = (("fits the KV cache", fit),)
    return OfflinePlan(requests, mean_peak_blocks(block_size, lengths, max_model_len, *windows), fit, candidates)


def offline_engine(seats: int, token_budget: int, budget_given: bool = False) -> dict[str, int]:
    """The engine dials a run of the plan sets: its seats, and the token budget raised to one token
    a seat where it is smaller and was not given (vLLM refuses a max_num_batched_tokens below
    max_num_seqs; `sim.config` refuses it too)."""
    dials = {"max_num_seqs": seats}
    if not budget_given and token_budget < seats:
        dials["max_num_batched_tokens"] = seats
    return dials


def quickest(runs: Sequence[tuple[int, float]]) -> int:
    """Which of the plan's runs, (max_num_seqs, job time in s) each, to recommend: the shortest
    job, the fewer seats on a tie."""
    return min(range(len(runs)), key=lambda i: (runs[i][1], runs[i][0]))
