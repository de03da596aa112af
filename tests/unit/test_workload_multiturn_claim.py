"""The claim prefix caching makes for a chat deployment, headless: the multi-turn helpdesk
(`sim.workload.MULTI_TURN_HELPDESK`: a shared system prompt, three turns each carrying the
history) at a fixed rate has a lower TTFT p50, and queued all at once a higher saturated rate,
with vLLM's default caching on than off, by about what the hit rate predicts.

The hit rate itself is what vLLM's reuse gives on this traffic: every full block of the system
prompt (from the second conversation on), and for a later turn every full block of the previous
turn's prompt and answer (its last token sampled, never fed back, so not cached), nothing evicted
at this rate.

What the hit rate predicts:
- TTFT at a light fixed rate is the time to prefill what is not cached: the same requests at the
  same times, with the cached tokens left out of their prompts and caching off, give about the
  same TTFT p50 (once the API server's tokenizing of the cached tokens, which caching does not
  save, is put back);
- the saturated rate rises by the prefill work the hits save: every cached token saves the
  marginal time of a prefill token in the batch the run keeps (the cost model's own price at
  the run's mean batch and context), out of the run's busy time with caching off.
"""

from __future__ import annotations

import json
import math
import statistics
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


def reused(records, scenario: Scenario) -> dict[str, int]:
    """Each request's tokens vLLM finds cached when every block computed before it is still
    there: the shared system prompt's full blocks for a first turn (but the very first), the
    previous turn's prompt and answer (its last token never fed back) for a later one."""
    block = scenario.deployment().block_size
    records = list(records)  # (a record table makes a record each time one is read)
    by_id = {r.request_id: r for r in records}
    first = min(records, key=lambda r: r.arrival_time).request_id
    hits = {}
    for r in records:
        conversation, _, turn = r.request_id.partition(".")
        if turn:
            previous = by_id[conversation if turn == "2" else f"{conversation}.{int(turn) - 1}"]
            hits[r.request_id] = (previous.prompt_len + previous.output_len - 1) // block * block
        else:
            hits[r.request_id] = 0 if r.request_id == first else scenario.workload.prefix_len // block * block
    return hits


def test_every_conversation_has_its_turns_and_they_share_prefixes(fixed_rate):
    """The hits are vLLM's reuse of the system prompt and of each turn's history, answers
    included, request by request."""
    on = fixed_rate[True]
    assert on.metrics["completed"] == CONVERSATIONS * MULTI_TURN_HELPDESK.turns
    predicted = reused(on.records, helpdesk(True))
    assert {r.request_id: r.num_cached_tokens for r in on.records} == predicted
    assert on.metrics["prefix_cache_hits"] == sum(predicted.values())
    assert on.metrics["prefix_cache_queries"] == sum(r.prompt_len for r in on.records)
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
    # The API server tokenizes the whole prompt, cached or not (sim/frontend.py): the shortened
    # prompts leave that out of the prediction, so it is put back (the typical request's).
    d = helpdesk(True).deployment()
    predicted += statistics.median(r.num_cached_tokens for r in on.records) * d.frontend_prompt_token_s * 1000
    ttft_on, ttft_off = on.metrics["median_ttft_ms"], off.metrics["median_ttft_ms"]
    assert ttft_on < ttft_off
    assert ttft_off - ttft_on == pytest.approx(ttft_off - predicted, rel=0.15), (ttft_on, predicted, ttft_off)


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
    assert gain > 1
    assert gain == pytest.approx(predicted, rel=0.2), (gain, predicted, on.metrics["prefix_cache_hit_rate"])
