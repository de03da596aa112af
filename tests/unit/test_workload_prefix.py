"""Traffic that shares prefixes (issue 13): a shared system prompt, conversations whose next
turn carries the history, and Mooncake traces' hash_ids, all as `prompt_segments` (never token
lists), and the engine hitting them."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from sim.engine import Engine, run_scenario
from sim.errors import ConfigError, WorkloadError
from sim.scenario import Scenario
from sim.workload import (LengthSpec, RequestQueue, WorkloadSpec, generate, generate_queue, load_trace, next_turn,
                          trace_requests)


def draw(**fields):
    return generate(WorkloadSpec(num_prompts=300, input=LengthSpec(dist="uniform", mean=100, low=50, high=150),
                                 **fields), np.random.default_rng(7))


def test_a_shared_prefix_comes_before_every_prompt_and_changes_no_other_draw():
    plain = draw()
    shared = draw(prefix_len=200)
    assert all(s.prompt_segments is None for s in plain)
    for a, b in zip(plain, shared):
        assert b.prompt_len == a.prompt_len + 200 and b.arrival_time == a.arrival_time
        assert b.prompt_segments == (("prefix-0", 200), (b.request_id, a.prompt_len))


def test_several_prefixes_are_drawn_one_per_request():
    specs = draw(prefix_len=64, num_prefixes=4)
    names = [s.prompt_segments[0][0] for s in specs]
    assert set(names) == {"prefix-0", "prefix-1", "prefix-2", "prefix-3"}
    assert all(sum(n for _, n in s.prompt_segments) == s.prompt_len for s in specs)


def test_a_million_requests_are_held_as_arrays_not_segments():
    queue = generate_queue(WorkloadSpec(num_prompts=1_000_000, prefix_len=512, num_prefixes=8),
                           np.random.default_rng(0))
    assert isinstance(queue, RequestQueue) and len(queue) == 1_000_000
    assert queue[0].prompt_segments[0][1] == 512  # made when taken, one at a time


def test_the_next_turn_is_the_previous_prompt_its_answer_and_a_new_question():
    w = WorkloadSpec(input=LengthSpec(dist="uniform", mean=64, low=32, high=96), output=LengthSpec(mean=100),
                     prefix_len=128, turns=3)
    first = generate(replace(w, num_prompts=1), np.random.default_rng(1))[0]
    assert first.conversation == "0" and first.prompt_segments[-1][0] == "0/q1"
    second = next_turn(w, first, 10.0, seed=5)
    assert second.request_id == "0.2" and second.turn == 2 and second.arrival_time == 10.0
    assert second.prompt_segments[:2] == first.prompt_segments
    assert second.prompt_segments[2] == ("0/a1", first.output_len)
    assert second.prompt_len == first.prompt_len + first.output_len + second.prompt_segments[3][1]
    assert next_turn(w, first, 99.0, seed=5).prompt_len == second.prompt_len  # not the time it is sent


def conversation_run(**fields) -> tuple:
    w = WorkloadSpec(arrival="poisson", request_rate=2.0, num_prompts=40, input=LengthSpec(mean=64),
                     output=LengthSpec(mean=32), prefix_len=96, turns=3, think_time=2.0)
    w = replace(w, **fields)
    summary = run_scenario(Scenario(workload=w, seed=3), keep_records=True)
    return summary, {r.request_id: r for r in summary.records}


def test_each_turn_is_sent_think_time_after_the_previous_answer():
    summary, by_id = conversation_run()
    assert summary.metrics["completed"] == 120
    for i in range(40):
        first, second, third = by_id[str(i)], by_id[f"{i}.2"], by_id[f"{i}.3"]
        assert second.arrival_time == pytest.approx(first.arrival_time + first.e2e + 2.0)
        assert third.arrival_time == pytest.approx(second.arrival_time + second.e2e + 2.0)
        assert third.prompt_len == second.prompt_len + 32 + 64
        # the history is cached: the previous prompt's full blocks (16 tokens a block)
        assert third.num_cached_tokens >= second.prompt_len // 16 * 16
    assert summary.metrics["prefix_cache_hits"] == sum(r.num_cached_tokens for r in by_id.values())


def test_under_a_concurrency_cap_a_conversation_keeps_its_slot_to_the_end():
    summary, by_id = conversation_run(max_concurrency=2, request_rate=math.inf, think_time=0.5)
    assert summary.metrics["completed"] == 120
    spans = {}
    for rid, r in by_id.items():
        conv = rid.split(".")[0]
        start, end = spans.get(conv, (math.inf, 0.0))
        spans[conv] = (min(start, r.arrival_time), max(end, r.arrival_time + r.e2e))
    for t in sorted(s for s, _ in spans.values()):
        assert sum(1 for s, e in spans.values() if s <= t < e) <= 2  # conversations open at once


def test_a_refused_turn_ends_its_conversation():
    w = WorkloadSpec(arrival="poisson", request_rate=2.0, num_prompts=10, input=LengthSpec(mean=300),
                     output=LengthSpec(mean=200), turns=4)
    engine = Engine(Scenario(workload=w, engine={"max_model_len": 1400}), api_server=True)
    summary = engine.run()
    # turn 1: 500 tokens, turn 2: 1000, turn 3: 1500 > 1400 is refused, and no turn 4 is sent
    assert summary.metrics["completed"] == 20 and summary.metrics["failed"] == 10
    assert not any(r.request_id.endswith(".4") for r in summary.records)


def test_a_live_endless_workload_keeps_its_conversations_going():
    w = WorkloadSpec(arrival="poisson", request_rate=5.0, num_prompts=0, input=LengthSpec(mean=64),
                     output=LengthSpec(mean=16), prefix_len=64, turns=2, think_time=0.2)
    done = {}
    for turns in (1, 2):
        engine = Engine(Scenario(workload=replace(w, turns=turns)), live=True)
        engine.advance_until(20.0)
        done[turns] = engine.metrics.completed
    assert 1.8 * done[1] < done[2] < 2.1 * done[1]  # the same conversations, two turns each
    assert engine.prefix_cache_stats()["prefix_cache_hit_rate"] > 0.5


def test_a_scenario_file_keeps_the_sharing_settings():
    w = WorkloadSpec(prefix_len=100, num_prefixes=3, turns=2, think_time=1.5, hash_block_size=256)
    assert Scenario.from_dict(Scenario(workload=w).to_dict()).workload == w


@pytest.mark.parametrize("field, value", [("prefix_len", -1), ("num_prefixes", 0), ("turns", 0),
                                          ("think_time", -1.0), ("think_time", math.inf), ("hash_block_size", 0)])
def test_bad_sharing_settings_are_refused(field, value):
    with pytest.raises(ConfigError, match=field):
        replace(WorkloadSpec(), **{field: value}).validate()


def mooncake(tmp_path, lines) -> str:
    path = tmp_path / "mooncake.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def test_timed_trace_prompts_are_built_from_their_hash_ids_as_vllm_builds_them(tmp_path):
    """vLLM's TimedTrace (vllm/benchmarks/datasets/datasets.py): a block of tokens per hash id, the
    same for the same id, until input_length; a last, partial block has tokens of its own (vLLM
    draws them apart from the full block's), ids past input_length are not read, and tokens past
    the ids are not sent. (This test pinned our own rule before: input_length tokens, those past
    the ids the prompt's own, in 512-token blocks.)"""
    path = mooncake(tmp_path, [
        {"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [7, 8, 9]},
        {"timestamp": 5, "input_length": 1300, "output_length": 10, "hash_ids": [7, 8]},  # ids run out: 1024
        {"timestamp": 9, "input_length": 100, "output_length": 10, "hash_ids": [1, 2, 3]}])  # one is enough
    a, b, c = load_trace(path, hash_block_size=512)
    assert a.prompt_segments == (("h7", 512), ("h8", 512), ("h9:76", 76)) and a.prompt_len == 1100
    assert b.prompt_segments == (("h7", 512), ("h8", 512)) and b.prompt_len == 1024
    assert c.prompt_segments == (("h1:100", 100),)
    assert [s.arrival_time for s in (a, b, c)] == [0, 5, 9]  # seconds, vLLM's default
    default = load_trace(path)[0]  # vLLM's 16-token blocks
    assert default.prompt_segments == (("h7", 16), ("h8", 16), ("h9", 16)) and default.prompt_len == 48
    repeated = trace_requests(WorkloadSpec(arrival="trace", trace_path=path, trace_requests=6, hash_block_size=512))
    assert repeated[4].prompt_segments == b.prompt_segments  # a copy shares the ids


def test_a_timed_trace_line_without_hash_ids_is_refused(tmp_path):
    """Its prompt would be empty in vLLM (the server refuses it): the line is named instead."""
    path = mooncake(tmp_path, [{"timestamp": 0, "input_length": 100, "output_length": 5}])
    with pytest.raises(WorkloadError, match=r"jsonl:1: no hash_ids: vLLM's timed_trace builds a prompt from its"):
        load_trace(path)


def test_a_timed_trace_is_sent_in_its_order_at_its_times(tmp_path):
    """vllm bench serve sends the lines in order, each at its timestamp x the multiplier from the
    start (not from the first line), or right after the line before when that is later."""
    path = mooncake(tmp_path, [{"timestamp": t, "input_length": 32, "output_length": 5, "hash_ids": [i]}
                               for i, t in enumerate((2000, 3000, 2500, 4000))])
    specs = load_trace(path, sec_multiplier=0.001)
    assert [s.arrival_time for s in specs] == [2.0, 3.0, 3.0, 4.0]
    assert [s.hash_ids for s in specs] == [(0,), (1,), (2,), (3,)]
    assert [s.arrival_time for s in trace_requests(WorkloadSpec(arrival="trace", trace_path=path,
                                                                trace_sec_multiplier=0.001, trace_requests=2))] == [2.0, 3.0]


def test_too_many_hash_ids_for_the_block_size_are_refused_in_our_layout(tmp_path):
    path = mooncake(tmp_path, [{"arrival_time": 0, "prompt_len": 100, "output_len": 5, "hash_ids": [1, 2, 3]}])
    with pytest.raises(WorkloadError, match="is the hash block size right"):
        load_trace(path, hash_block_size=100)
    assert load_trace(path, hash_block_size=40)[0].prompt_segments == (("h1", 40), ("h2", 40), ("h3", 20))
    path = mooncake(tmp_path, [{"arrival_time": 0, "prompt_len": 100, "output_len": 5, "hash_ids": [1]}])
    assert load_trace(path, hash_block_size=40)[0].prompt_segments == (("h1", 40), ("0", 60))  # the rest its own


def test_requests_sharing_hash_ids_hit_the_cache(tmp_path):
    """A Mooncake trace: 512-token blocks, milliseconds."""
    lines = [{"timestamp": 1000 * i, "input_length": 1100, "output_length": 8, "hash_ids": [1, 2, 100 + i]}
             for i in range(5)]
    w = WorkloadSpec(arrival="trace", trace_path=mooncake(tmp_path, lines), hash_block_size=512,
                     trace_sec_multiplier=0.001)
    summary = run_scenario(Scenario(workload=w), keep_records=True)
    cached = {r.request_id: r.num_cached_tokens for r in summary.records}
    assert cached["0"] == 0 and all(cached[str(i)] == 1024 for i in range(1, 5))


def test_the_queue_s_positional_fields_are_checked_against_the_dataclass():
    """RequestQueue._make builds each RequestSpec by position (one per request, keywords cost more);
    a field inserted or moved in RequestSpec must stop the import, not fill the wrong field."""
    from dataclasses import dataclass

    from sim.workload import RequestSpec, check_positional_fields

    check_positional_fields(RequestSpec)

    @dataclass
    class Reordered:
        request_id: str
        prompt_len: int
        arrival_time: float

    with pytest.raises(TypeError, match="by position"):
        check_positional_fields(Reordered)
    # and every field the queue fills keyword-free lands where a keyword would put it
    spec = generate(WorkloadSpec(num_prompts=3), np.random.default_rng(1))[1]
    assert spec == RequestSpec(request_id=spec.request_id, arrival_time=spec.arrival_time,
                               prompt_len=spec.prompt_len, output_len=spec.output_len)
