"""The lengths a measured run is replayed with when its file holds no per-request lengths.

A result file without `--save-detailed` gives only the token totals, so the mean lengths are
known and their spread is not. Replaying every request at the mean is right for vLLM's random
dataset at its default `--random-range-ratio` 0 (exact lengths), and wrong for a dataset whose
answers vary (ShareGPT, a chat log): a capped run of equal requests replays in lockstep, every
request admitted, prefilled and finished together (TTFT p50 equal to p99), and a batch run has no
tail of long answers. The spread can be read back from the latency percentiles the file does
hold. Each request's end-to-end latency is its TTFT plus (output - 1) x its TPOT, so the part of
E2EL past the first token, divided by the TPOT, is the output length:

    out_50 = 1 + (E2EL p50 - TTFT p50) / TPOT p50
    out_99 = 1 + (E2EL p99 - TTFT p99) / TPOT p99

Taking TTFT's own p99 off E2EL's p99 and dividing by TPOT's p99 credits the TTFT and TPOT spreads
(queueing, load) before the lengths: with equal lengths the two come out alike and nothing is
spread; with a spread they are a lower bound of it. When out_99 exceeds out_50 by more than
`SPREAD_FLOOR`, the outputs are replayed lognormal with that p99-to-median ratio and the file's
mean (what vllm bench serve's ShareGPT-like data look like: right-skewed, never below 1);
otherwise at the mean. Input lengths keep their mean: TTFT mixes a prompt's prefill with its
queueing, which the percentiles cannot split.
"""

from __future__ import annotations

import math

from .workload import LengthSpec

Z99 = 2.3263478740408408
"""The standard normal's 99th percentile: a lognormal's p99 is its median x exp(Z99 x sigma)."""
Z90 = 1.2815515655446004
"""The standard normal's 90th percentile: a lognormal's p10 and p90 are its median x
exp(-+ Z90 x sigma)."""
TAIL_SIGMAS = 4
"""Where an unbounded replayed length is clipped: the median x exp(4 sigma), about the 99.997th
percentile, so a replay stays bounded."""

SPREAD_FLOOR = 0.05
"""Below this relative spread of p99 over the median, the lengths are taken as equal."""

IMPLYING_KEYS = ("median_e2el_ms", "p99_e2el_ms", "median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms")
"""The figures a result file needs (vllm bench serve writes them with `--percentile-metrics`
including e2el, and p99 among `--metric-percentiles`, its default)."""


def lognormal_around(mean: float, ratio_p99_to_p50: float) -> LengthSpec:
    """A lognormal length whose mean is `mean` and whose p99 is `ratio_p99_to_p50` times its
    median; fixed at the mean when the ratio is within `SPREAD_FLOOR` of 1."""
    whole = max(1, round(mean))
    if not ratio_p99_to_p50 > 1 + SPREAD_FLOOR:
        return LengthSpec(mean=whole)
    sigma = math.log(ratio_p99_to_p50) / Z99
    median = mean * math.exp(-sigma * sigma / 2)  # a lognormal's mean is median x e^(s^2/2)
    return lognormal_lengths(median, sigma)


def lognormal_lengths(median: float, sigma: float, low: int = 1, high: int | None = None) -> LengthSpec:
    """Lengths drawn lognormal around `median` with shape `sigma`, within [`low`, `high`]
    (unbounded above: clipped `TAIL_SIGMAS` sigmas out). The one form every replayed spread
    takes, implied by latency percentiles (`output_lengths`) or given by a file's own length
    percentiles (a GuideLLM or aiperf file, `batchtui.cli.loadgens.spread`)."""
    median = max(1, round(median))
    if high is None:
        high = max(1, round(median * math.exp(TAIL_SIGMAS * sigma)))
    return LengthSpec(dist="lognormal", mean=median, sigma=sigma, low=low, high=high)


def implied_output_ratio(metrics: dict) -> float | None:
    """out_99 / out_50 as the file's latency percentiles imply it (module docstring), or None when
    the file lacks one of `IMPLYING_KEYS` or its figures cannot be read that way."""
    values = [metrics.get(k) for k in IMPLYING_KEYS]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) for v in values):
        return None
    e2el_50, e2el_99, ttft_50, ttft_99, tpot_50, tpot_99 = values
    if tpot_50 <= 0 or tpot_99 <= 0:
        return None
    out_50 = 1 + (e2el_50 - ttft_50) / tpot_50
    out_99 = 1 + (e2el_99 - ttft_99) / tpot_99
    if out_50 < 1 or out_99 < 1:
        return None
    return out_99 / out_50


def output_lengths(metrics: dict, mean: float) -> LengthSpec:
    """The output lengths to replay a run of `mean` output tokens a request with: a lognormal
    spread when the file's percentiles imply one, else the mean."""
    ratio = implied_output_ratio(metrics)
    return lognormal_around(mean, ratio) if ratio is not None else LengthSpec(mean=max(1, round(mean)))
