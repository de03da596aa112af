"""The claim prefix caching makes for a chat deployment, headless: the multi-turn helpdesk
(`sim.workload.MULTI_TURN_HELPDESK`: a shared system prompt, three turns each carrying the
history) at a fixed rate has a lower TTFT p50, and queued all at once a higher saturated rate,
with vLLM's default caching on than off, by about what the hit rate predicts.

What the hit rate predicts:
- TTFT at a light fixed rate is the time to prefill what is not cached: the same requests at the
  same times, with the cached tokens left out of their prompts and caching off, give about the
  same TTFT p50;
- the saturated rate rises by the prefill work the hits save: every cached token saves the
  marginal time of a prefill token in the batch the run keeps (the cost model's own price at
  the run's mean batch and context), out of the run's busy time with caching off.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from sim.cost import CostModel
from sim.engine import run_scenario
from sim.scenario import Scenario
from sim.workload import MULTI_TURN_HELPDESK, WorkloadSpec

CONVERSATIONS = 300


def helpdesk(caching: bool, rate: float | None = None, think: float | None = None) -> Scenario:
    w = replace(MULTI_TURN_HELPDESK, num_prompts=CONVERSATIONS)
    if rate is not None:
        w = replace(w, request_rate=rate)
    if think is not None:
        w = replace(w, think_time=think)
    return Scenario(workload=w, engine={"enable_prefix_caching": caching}, seed=1)


@pytest.fixture(scope="module")
def fixed_rate():
    return {caching: run_scenario(helpdesk(caching), keep_records=True) for caching in (True, False)}


def test_every_conversation_has_its_turns_and_they_share_prefixes(fixed_rate):
    on = fixed_rate[True]
    assert on.metrics["completed"] == 3 * CONVERSATIONS
    hit = on.metrics["prefix_cache_hit_rate"]
    assert 0.4 < hit < 0.9, hit
    assert sum(r.num_cached_tokens for r in on.records) == on.metrics["prefix_cache_hits"]
    assert fixed_rate[False].metrics["prefix_cache_hits"] == 0
    assert all(r.num_cached_tokens == 0 for r in fixed_rate[False].records)


def test_ttft_p50_at_a_fixed_rate_is_the_prefill_of_what_is_not_cached(fixed_rate, tmp_path):
    on, off = fixed_rate[True], fixed_rate[False]
    # the prediction: the same requests at the same times, prompts without their cached tokens
    trace = tmp_path / "uncached.jsonl"
    trace.write_text("".join(json.dumps({"arrival_time": r.arrival_time, "prompt_len": r.prompt_len - r.num_cached_tokens,
                                         "output_len": r.output_len}) + "\n" for r in on.records))
    predicted = run_scenario(Scenario(workload=WorkloadSpec(arrival="trace", trace_path=str(trace)),
                                      engine={"enable_prefix_caching": False}, seed=1)).metrics["median_ttft_ms"]
    ttft_on, ttft_off = on.metrics["median_ttft_ms"], off.metrics["median_ttft_ms"]
    assert ttft_on < 0.7 * ttft_off, (ttft_on, ttft_off)
    assert ttft_on == pytest.approx(predicted, rel=0.15), (ttft_on, predicted)


def test_the_saturated_rate_rises_by_the_prefill_work_the_hits_save():
    on = run_scenario(helpdesk(True, rate=math.inf, think=0.0), keep_records=True)
    off = run_scenario(helpdesk(False, rate=math.inf, think=0.0), keep_records=True)
    gain = on.metrics["request_throughput"] / off.metrics["request_throughput"]
    # the prediction, from the hits and the cost model at the caching-off run's operating point
    sc = helpdesk(False)
    cost = CostModel(sc.deployment())
    records = list(off.records)
    batch = round(off.metrics["mean_running"])
    context = round(batch * sum(r.prompt_len + r.output_len / 2 for r in records) / len(records))
    chunk = 512
    per_token = (cost.iteration_time(batch, context, [(0, chunk)]) - cost.iteration_time(batch, context, [])) / chunk
    busy_off = len(records) / off.metrics["request_throughput"]
    saved = on.metrics["prefix_cache_hits"] * per_token
    predicted = busy_off / (busy_off - saved)
    assert gain > 1.2, gain
    assert gain == pytest.approx(predicted, rel=0.2), (gain, predicted, on.metrics["prefix_cache_hit_rate"])
