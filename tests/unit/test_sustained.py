"""The sweep's steady/unbounded call against long runs (issue 36).

`batchtui sweep` runs each rate with the requests asked for (1,000 by default) and calls a point
unbounded when its rate is above the saturated rate (`sim.curves.saturation`: the highest rate a
run of 20,000 requests keeps up with). Whether a rate keeps up is the property of long runs:
here 20,000-request runs of the same traffic on seeds the sweep did not use say it
(`sim.curves.keeps_up`: their latency does not climb). Drawn workloads (GPU, model, seats,
length distributions, means) must get from the sweep, at its default run length, the call the
long runs make at every rate from half the sweep's knee to 1.3 times saturation. Where long runs
on two seeds disagree the rate is on the edge of what the replica sustains and either call is
right (the thorough variant; the default one checks the hardest rates outside that edge, 5 %
below and above saturation, on one seed).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from batchtui.cli import cmd_sweep
from batchtui.cli.args import DEFAULT_NUM_PROMPTS
from sim.curves import SUSTAIN_REQUESTS, at_rate, find_knee, keeps_up
from sim.engine import run_scenario
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec
from tests.examples import examples

FRACTIONS = (0.3, 0.5, 0.7, 0.85, 0.95, 1.05, 1.15, 1.3)
"""The sweep's rates, as fractions of its saturated rate."""


def chat(gpu: str, model: str, seats: int, dist: str, prompt: int, output: int) -> Scenario:
    workload = WorkloadSpec(arrival="gamma", request_rate=1.0, num_prompts=DEFAULT_NUM_PROMPTS, burstiness=1.0,
                            input=LengthSpec(mean=prompt, dist=dist), output=LengthSpec(mean=output, dist=dist))
    return Scenario(gpu=gpu, model=model, workload=workload, seed=0).with_engine(max_num_seqs=seats,
                                                                                 max_model_len=8192)


@st.composite
def workloads(draw, longest_output: int) -> Scenario:
    return chat(draw(st.sampled_from(["h100-sxm", "a100-80gb", "l40s"])),
                draw(st.sampled_from(["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b"])),
                draw(st.sampled_from([32, 64, 128, 256, 1024])),
                draw(st.sampled_from(["fixed", "uniform", "lognormal"])),
                draw(st.sampled_from([64, 128, 256, 512, 1024])),
                draw(st.sampled_from([o for o in (16, 32, 64, 128, 256) if o <= longest_output])))


_SWEPT: dict[str, tuple] = {}
"""`sweep`'s answers by scenario (its repr): Hypothesis draws as its first example the simplest
workload, which is FRONTEND_BOUND, also given as an explicit one; the simulator gives the same
answer for the same scenario, so the second is not run again."""


def sweep(scenario: Scenario):
    """`batchtui sweep` over FRACTIONS of the saturated rate, at its default run length, as the
    command runs it: (saturated rate, rates, each point's call, the knee's rate)."""
    key = repr(scenario)
    if key not in _SWEPT:
        _SWEPT[key] = _sweep(scenario)
    return _SWEPT[key]


def _sweep(scenario: Scenario):
    n = DEFAULT_NUM_PROMPTS
    sat = cmd_sweep.saturation_task((scenario, n)).rate
    rates = [f * sat for f in FRACTIONS]
    points = [cmd_sweep.point_task((scenario, "request_rate", r, sat, n)) for r in rates]
    knee = find_knee(rates, [p.metrics["output_throughput"] for p in points], [p.metrics["p99_ttft_ms"] for p in points],
                     bounded=[p.bounded for p in points])
    assert knee.index is not None  # a point above saturation bends the curve at the latest
    return sat, rates, [p.bounded for p in points], rates[knee.index]


_KEPT_UP: dict[tuple[str, float, int], bool] = {}
"""`long_runs_keep_up`'s answers by (scenario's repr, rate, seed), as `_SWEPT`."""


def long_runs_keep_up(scenario: Scenario, rate: float, seeds) -> list[bool]:
    """Whether 20,000-request runs at `rate` keep up, one a seed."""
    out = []
    for seed in seeds:
        key = (repr(scenario), rate, seed)
        if key not in _KEPT_UP:
            _KEPT_UP[key] = keeps_up(run_scenario(at_rate(replace(scenario, seed=seed), rate, SUSTAIN_REQUESTS),
                                                  keep_records=True, keep_requests=False, api_server=True))[0]
        out.append(_KEPT_UP[key])
    return out


ISSUE = Scenario(workload=chat("h100-sxm", "llama-3.1-8b", 1024, "fixed", 512, 256).workload)
"""The issue's sweep (`batchtui sweep --request-rates 24,...,42 --input-len 512 --output-len
256`: the command's defaults, vLLM's 1,024 seats), whose full queue thrashes the KV cache: the
saturated rate is searched on long runs. It called 32 req/s unbounded."""


FRONTEND_BOUND = chat("h100-sxm", "llama-3.2-1b", 32, "fixed", 64, 16)
"""A replica whose API server binds (0.5 ms a request and 50 us a token on one server: about 770
requests/s): overloaded, the server takes requests in ahead of the tokens it streams, so the full
queue serves 726 req/s while 20,000 requests at 762 keep up (`Saturation.degraded`)."""


SHORT_AND_MANY = chat("h100-sxm", "llama-3.2-3b", 1024, "lognormal", 128, 32).with_workload(arrival="poisson")
"""Short requests at 400+ req/s whose API server binds first (434 req/s at 0.5 ms a request and
50 us a token), while a full queue, its API server taking requests in ahead of the tokens it
streams, completes 468: the sweep called 446 req/s steady, which 20,000 requests do not keep up
with (seeds 1 and 2)."""


def test_the_saturated_rate_is_what_the_api_server_sustains_when_it_binds():
    sat = cmd_sweep.saturation_task((SHORT_AND_MANY, DEFAULT_NUM_PROMPTS))
    assert sat.rate == sat.api_server_rate and sat.full_queue_rate > 1.05 * sat.rate and not sat.searched
    assert long_runs_keep_up(SHORT_AND_MANY, 0.95 * sat.rate, [1]) == [True]
    assert long_runs_keep_up(SHORT_AND_MANY, 1.05 * sat.rate, [1]) == [False]


@pytest.mark.thorough
def test_the_search_runs_when_the_api_server_binds_a_thrashing_queue():
    """With its KV cache cut to 3,000 blocks, SHORT_AND_MANY's full queue preempts and completes
    more than the API server's ceiling, which caps the rate the overloaded run gives: the long-run
    search still decides the rate (2 % below the ceiling: thrashing, the replica falls behind at
    the ceiling), so it is not skipped when the ceiling binds."""
    scenario = replace(SHORT_AND_MANY, num_gpu_blocks_override=3000)
    sat = cmd_sweep.saturation_task((scenario, DEFAULT_NUM_PROMPTS))
    assert sat.thrashes and sat.full_queue_rate > sat.api_server_rate and sat.searched
    assert sat.searched[0][0] == sat.api_server_rate and not sat.searched[0][1]
    assert sat.rate < 0.99 * sat.api_server_rate


@pytest.mark.thorough
def test_the_search_stops_at_the_api_servers_ceiling():
    """Llama 3.2 1B, 32 seats, 64/24: the full queue serves 563 req/s, less than the burst
    (degraded), and the API server sustains 588.2. 20,000 requests at 588.6 climb 0.0097 s a
    second, within SUSTAIN_SLOPE: the search once settled there, above the ceiling. No rate above
    it is tried, and the rate is the ceiling."""
    sat = cmd_sweep.saturation_task((chat("h100-sxm", "llama-3.2-1b", 32, "fixed", 64, 24), DEFAULT_NUM_PROMPTS))
    assert sat.degraded and sat.searched and max(r for r, _, _ in sat.searched) <= sat.api_server_rate
    assert sat.rate == sat.api_server_rate


WAVES = chat("h100-sxm", "llama-3.1-8b", 64, "fixed", 64, 16)
"""Fixed lengths, the seats binding: all queued at once the requests start and end in waves (330
req/s). Offered 1.25 times that (412), the middle half of the completions reads 387, too near
the offer, so `saturation` offers twice as much: that deeper queue refills every seat the step it
frees, locks into waves and reads 358, while 20,000 requests at 376 keep up (at 394 they fall
behind). The two overloaded runs disagree (`Saturation.lockstep`), so the rate is searched on
long runs (391)."""


@pytest.mark.heavy
@settings(max_examples=examples(5), suppress_health_check=list(HealthCheck))
@given(workloads(longest_output=64))
@example(ISSUE)
@example(FRONTEND_BOUND)
@example(WAVES)
def test_the_sweeps_call_agrees_with_long_runs(scenario):
    """The long runs at the two hardest rates, 5 % below and above saturation, vouch for every
    rate the claim covers (from half the knee to 1.3 times saturation): a replica that keeps up
    with traffic keeps up with lighter traffic, and one that falls behind falls further behind
    under heavier. So the sweep must call steady every claimed rate up to the first, unbounded
    every one from the second, and the long runs must agree at both."""
    sat, rates, calls, knee = sweep(scenario)
    below, above = FRACTIONS.index(0.95), FRACTIONS.index(1.05)
    assert long_runs_keep_up(scenario, rates[above], [1]) == [False], (rates[above], sat)
    assert long_runs_keep_up(scenario, rates[below], [1]) == [True], (rates[below], sat)
    claimed = [i for i, rate in enumerate(rates) if knee / 2 <= rate <= 1.3 * sat * (1 + 1e-12)]
    assert [calls[i] for i in claimed] == [i <= below for i in claimed], (list(zip(rates, calls)), knee, sat)


@pytest.mark.thorough
@settings(max_examples=examples(5), suppress_health_check=list(HealthCheck))
@given(workloads(longest_output=256))
def test_the_sweeps_call_agrees_with_long_runs_at_every_rate(scenario):
    sat, rates, calls, knee = sweep(scenario)
    checked = 0
    for rate, call in zip(rates, calls):
        if rate < knee / 2:
            continue
        truth = long_runs_keep_up(scenario, rate, [1, 2])
        if len(set(truth)) == 1:  # the long runs agree: the rate is not on the edge
            assert truth[0] == call, (rate, sat, truth)
            checked += 1
    assert checked >= len(rates) - 3
