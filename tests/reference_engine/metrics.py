"""Serving metrics as `vllm bench serve` defines them, plus what only a simulator can see.

- TTFT: arrival → first output token. TPOT: (E2E − TTFT) ÷ (outputs − 1), per request, leaving
  out one-token requests. ITL: every gap between consecutive tokens of a request, pooled over all
  requests. E2E: arrival → last token. A token's time is the end of the iteration that sampled it.
- Percentiles with numpy's default (linear) interpolation. ITL gaps are stored as (gap, count)
  pairs — many requests share one iteration's gap — and the weighted percentile equals numpy's
  percentile of the expanded list exactly.
- Rolling series for sparklines are ring buffers, so a run left going all day does not grow.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, deque
from itertools import repeat
from dataclasses import dataclass, field

import numpy as np

from .reports import BINDING_LIMITS, MetricsView

PERCENTILES = (50, 90, 99)


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """numpy.percentile(np.repeat(values, weights), q) without building the repeated array."""
    if len(values) == 0:
        return 0.0
    order = np.argsort(values, kind="stable")
    v = values[order]
    cum = np.cumsum(weights[order])
    n = int(cum[-1])
    if n == 0:
        return 0.0
    rank = q / 100.0 * (n - 1)
    lo = int(math.floor(rank))
    hi = min(lo + 1, n - 1)
    v_lo = v[np.searchsorted(cum, lo + 1)]
    v_hi = v[np.searchsorted(cum, hi + 1)]
    return float(v_lo + (v_hi - v_lo) * (rank - lo))


@dataclass
class RequestRecord:
    request_id: str
    pool: str
    arrival_time: float
    prompt_len: int
    output_len: int
    ttft: float
    e2e: float
    tpot: float | None
    num_preemptions: int
    max_itl: float
    finish_reason: str


@dataclass
class MetricsCollector:
    """Accumulates a run's metrics. `keep_records=False` keeps only bounded recent windows (the
    live app); the command line keeps everything."""

    keep_records: bool = True
    window: int = 512  # recent finished requests for live percentiles
    series_len: int = 240
    series_interval: float | None = None  # seconds of simulated time between series points

    records: list[RequestRecord] = field(default_factory=list)
    itl_values: array = field(default_factory=lambda: array("d"))
    itl_counts: array = field(default_factory=lambda: array("q"))
    output_tokens: int = 0
    prompt_tokens: int = 0
    completed: int = 0
    rejected: int = 0
    num_preemptions: int = 0
    running_integral: float = 0.0  # ∫ running dt, for the time-weighted mean batch
    busy_time: float = 0.0
    max_running: int = 0
    peak_kv_used: int = 0
    kv_usable: int = 1
    seat_iterations: int = 0
    padded_seat_iterations: int = 0
    binding_counts: Counter = field(default_factory=Counter)
    first_arrival: float | None = None
    last_token_time: float = 0.0
    max_itl: float = 0.0

    def __post_init__(self) -> None:
        self._recent: deque[RequestRecord] = deque(maxlen=self.window)
        self._recent_tokens: deque[tuple[float, int, int]] = deque(maxlen=4096)  # (t, tokens, done)
        self.series_throughput: deque[float] = deque(maxlen=self.series_len)
        self.series_ttft: deque[float] = deque(maxlen=self.series_len)
        self.series_tpot: deque[float] = deque(maxlen=self.series_len)
        self.series_itl: deque[float] = deque(maxlen=self.series_len)
        self._next_sample = None
        self._sample_tokens = 0
        self._sample_itl_max = 0.0

    # -- recording
    def on_arrival(self, t: float) -> None:
        if self.first_arrival is None or t < self.first_arrival:
            self.first_arrival = t

    def on_gaps(self, gap: float, count: int) -> None:
        """`count` requests got a token `gap` seconds after their previous one."""
        if self.keep_records:
            self.itl_values.append(gap)
            self.itl_counts.append(count)
        if gap > self.max_itl:
            self.max_itl = gap
        if gap > self._sample_itl_max:
            self._sample_itl_max = gap

    def on_iteration(self, start: float, end: float, running: int, kv_used: int, binding: str,
                     tokens: int, completions: int, seats: int = 0, padded: int = 0,
                     repeat: int = 1) -> None:
        """Book `repeat` alike iterations ending at `end` (the fast path batches them)."""
        dt = end - start
        self.running_integral += running * dt
        self.busy_time += dt
        if running > self.max_running:
            self.max_running = running
        if kv_used > self.peak_kv_used:
            self.peak_kv_used = kv_used
        self.binding_counts[binding] += repeat
        self.output_tokens += tokens
        self.seat_iterations += seats
        self.padded_seat_iterations += padded
        self.last_token_time = max(self.last_token_time, end) if tokens else self.last_token_time
        self._recent_tokens.append((end, tokens, completions))
        self._sample_tokens += tokens
        if self.series_interval is not None:
            if self._next_sample is None:
                self._next_sample = start + self.series_interval
            while end >= self._next_sample:
                self._push_series()
                self._next_sample += self.series_interval

    def on_decode_iterations(self, start: float, ends, gaps, running: int, kv_used: int,
                             binding: str) -> None:
        """Book alike decode iterations back to back from `start` (the fast path): iteration j
        ends at ends[j]; in each, `running` requests each got one token `gaps[j]` after their
        previous one and nobody finished; `kv_used` is the highest KV use among them. Books the
        same numbers, to the last bit, as one on_gaps and one on_iteration call per iteration."""
        k = len(ends)
        if isinstance(gaps, np.ndarray):
            if self.series_interval is None and self.keep_records:
                self.itl_values.frombytes(gaps.tobytes())
                self.itl_counts.frombytes(np.full(k, running, dtype=np.int64).tobytes())
                # Sequential sums, as per-iteration booking adds them (cumsum goes left to right).
                self.running_integral = float(np.cumsum(np.concatenate(((self.running_integral,),
                                                                        running * gaps)))[-1])
                self.busy_time = float(np.cumsum(np.concatenate(((self.busy_time,), gaps)))[-1])
                gaps_tail = gaps[-4096:].tolist()
                ends_tail = ends[-4096:].tolist()
                self._book_decode_rest(ends_tail, gaps_tail, float(gaps.max()), k, running, kv_used,
                                       binding)
                return
            ends, gaps = ends.tolist(), gaps.tolist()
        if self.series_interval is not None:
            prev = start
            for end, gap in zip(ends, gaps):
                self.on_gaps(gap, running)
                self.on_iteration(prev, end, running=running, kv_used=kv_used, binding=binding,
                                  tokens=running, completions=0, seats=running)
                prev = end
            return
        if self.keep_records:
            self.itl_values.extend(gaps)
            self.itl_counts.extend(repeat(running, k))
        # The same float additions in the same order as per-iteration booking.
        ri = self.running_integral
        busy = self.busy_time
        for gap in gaps:  # dt = end - start is the gap
            ri += running * gap
            busy += gap
        self.running_integral = ri
        self.busy_time = busy
        self._book_decode_rest(ends if k <= 4096 else ends[k - 4096:],
                               gaps if k <= 4096 else gaps[k - 4096:], max(gaps), k, running,
                               kv_used, binding)

    def _book_decode_rest(self, ends_tail, gaps_tail, top: float, k: int, running: int,
                          kv_used: int, binding: str) -> None:
        if top > self.max_itl:
            self.max_itl = top
        if top > self._sample_itl_max:
            self._sample_itl_max = top
        if running > self.max_running:
            self.max_running = running
        if kv_used > self.peak_kv_used:
            self.peak_kv_used = kv_used
        self.binding_counts[binding] += k
        self.output_tokens += running * k
        self.seat_iterations += running * k
        if running and ends_tail[-1] > self.last_token_time:
            self.last_token_time = ends_tail[-1]
        self._recent_tokens.extend(zip(ends_tail, repeat(running), repeat(0)))
        self._sample_tokens += running * k

    def _push_series(self) -> None:
        self.series_throughput.append(self._sample_tokens / self.series_interval)
        self._sample_tokens = 0
        recent = list(self._recent)[-32:]
        self.series_ttft.append(float(np.median([r.ttft for r in recent])) if recent else 0.0)
        tp = [r.tpot for r in recent if r.tpot is not None]
        self.series_tpot.append(float(np.median(tp)) if tp else 0.0)
        self.series_itl.append(self._sample_itl_max)
        self._sample_itl_max = 0.0

    def on_finish(self, rec: RequestRecord) -> None:
        self.completed += 1
        self.prompt_tokens += rec.prompt_len
        if self.keep_records:
            self.records.append(rec)
        self._recent.append(rec)

    # -- reading
    def summary(self, duration: float) -> dict:
        """The result block, with `vllm bench serve`'s key names where it has them."""
        recs = self.records
        ttft = np.array([r.ttft for r in recs]) * 1000.0
        e2e = np.array([r.e2e for r in recs]) * 1000.0
        tpot = np.array([r.tpot for r in recs if r.tpot is not None]) * 1000.0
        itl_v = np.frombuffer(self.itl_values, dtype=np.float64) * 1000.0 if len(self.itl_values) else np.array([])
        itl_w = np.frombuffer(self.itl_counts, dtype=np.int64) if len(self.itl_counts) else np.array([], dtype=np.int64)
        d: dict = {
            "completed": self.completed,
            "duration": duration,
            "total_input_tokens": self.prompt_tokens,
            "total_output_tokens": self.output_tokens,
            "request_throughput": self.completed / duration if duration > 0 else 0.0,
            "output_throughput": self.output_tokens / duration if duration > 0 else 0.0,
            "total_token_throughput": (self.output_tokens + self.prompt_tokens) / duration if duration > 0 else 0.0,
        }
        for name, arr in (("ttft", ttft), ("tpot", tpot), ("e2el", e2e)):
            d[f"mean_{name}_ms"] = float(arr.mean()) if len(arr) else 0.0
            d[f"median_{name}_ms"] = float(np.median(arr)) if len(arr) else 0.0
            for q in PERCENTILES[1:]:
                d[f"p{q}_{name}_ms"] = float(np.percentile(arr, q)) if len(arr) else 0.0
        total_w = int(itl_w.sum()) if len(itl_w) else 0
        d["mean_itl_ms"] = float((itl_v * itl_w).sum() / total_w) if total_w else 0.0
        d["median_itl_ms"] = weighted_percentile(itl_v, itl_w, 50) if total_w else 0.0
        for q in PERCENTILES[1:]:
            d[f"p{q}_itl_ms"] = weighted_percentile(itl_v, itl_w, q) if total_w else 0.0
        d["max_itl_ms"] = self.max_itl * 1000.0
        d["mean_running"] = self.running_integral / self.busy_time if self.busy_time > 0 else 0.0
        d["max_running"] = self.max_running
        d["peak_kv_usage"] = self.peak_kv_used / self.kv_usable if self.kv_usable else 0.0
        d["num_preemptions"] = self.num_preemptions
        d["padding_share"] = (self.padded_seat_iterations / self.seat_iterations
                              if self.seat_iterations else 0.0)
        d["binding_limit_counts"] = {k: int(self.binding_counts.get(k, 0)) for k in BINDING_LIMITS}
        d["rejected"] = self.rejected
        return d

    def pool_summary(self) -> dict[str, dict]:
        """TTFT and TPOT percentiles per pool (chat, batch, ...)."""
        pools: dict[str, list[RequestRecord]] = {}
        for r in self.records:
            pools.setdefault(r.pool, []).append(r)
        out = {}
        for name, recs in sorted(pools.items()):
            ttft = np.array([r.ttft for r in recs]) * 1000.0
            tpot = np.array([r.tpot for r in recs if r.tpot is not None]) * 1000.0
            out[name] = {
                "completed": len(recs),
                "median_ttft_ms": float(np.median(ttft)) if len(ttft) else 0.0,
                "p99_ttft_ms": float(np.percentile(ttft, 99)) if len(ttft) else 0.0,
                "median_tpot_ms": float(np.median(tpot)) if len(tpot) else 0.0,
                "p99_tpot_ms": float(np.percentile(tpot, 99)) if len(tpot) else 0.0,
            }
        return out

    def view(self, now: float, window_s: float = 10.0) -> MetricsView:
        """Headline numbers over the recent past, for the live view."""
        recent = list(self._recent)
        lo = now - window_s
        toks = sum(t for (end, t, _) in self._recent_tokens if end > lo)
        done = sum(c for (end, _, c) in self._recent_tokens if end > lo)
        span = min(window_s, max(now - (self.first_arrival or 0.0), 1e-9))
        ttft = [r.ttft for r in recent]
        tpot = [r.tpot for r in recent if r.tpot is not None]
        e2e = [r.e2e for r in recent]
        return MetricsView(
            output_tokens_per_s=toks / span if span > 0 else 0.0,
            requests_per_s=done / span if span > 0 else 0.0,
            ttft_p50=float(np.median(ttft)) if ttft else 0.0,
            ttft_p99=float(np.percentile(ttft, 99)) if ttft else 0.0,
            tpot_p50=float(np.median(tpot)) if tpot else 0.0,
            tpot_p99=float(np.percentile(tpot, 99)) if tpot else 0.0,
            itl_max=self.max_itl,
            e2e_p50=float(np.median(e2e)) if e2e else 0.0,
            mean_running=self.running_integral / self.busy_time if self.busy_time > 0 else 0.0,
            completed=self.completed,
            padding_share=(self.padded_seat_iterations / self.seat_iterations if self.seat_iterations else 0.0),
            num_preemptions=self.num_preemptions,
        )
