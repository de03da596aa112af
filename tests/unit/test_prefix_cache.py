"""Prefix caching (issue 13): the pool's invariants on random shared-prefix workloads, hits that
respect vLLM's rules, caching that changes nothing when nothing is shared, and the engine's
counting (queries and hits in tokens, num_cached_tokens, the snapshot's cached blocks)."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import EngineConfig
from sim.engine import Engine
from sim.errors import RequestRejected
from sim.kv import BlockPool, prompt_block_hashes
from sim.request import Request, check_segments
from sim.scenario import Scenario
from sim.schedulers.continuous import ContinuousScheduler
from sim.trace import compare, run_case
from sim.workload import MULTI_TURN_HELPDESK, RequestSpec, WorkloadSpec, answer_segment, next_turn
from tests.examples import examples

PREFIXES = ("sys", "doc", "tools")
QUIET = WorkloadSpec(request_rate=1e-6, num_prompts=1)  # one unique request, long after the submitted ones


@st.composite
def shared_prefix_requests(draw, block_size: int, max_len: int):
    """Requests whose prompts start with some of a few shared segments, then their own."""
    requests = []
    for i in range(draw(st.integers(1, 8))):
        segments = []
        for name in draw(st.lists(st.sampled_from(PREFIXES), max_size=2)):
            segments.append((name, draw(st.integers(1, 3 * block_size))))
        # Its own tail, or one others may send too (whole prompts cached, block-aligned or not).
        if draw(st.booleans()):
            segments.append((f"own{i}", draw(st.integers(1, 2 * block_size))))
        else:
            segments.append(("common", draw(st.sampled_from([block_size, 2 * block_size, 3]))))
        prompt_len = sum(n for _, n in segments)
        output_len = draw(st.integers(1, 2 * block_size))
        if prompt_len + output_len >= max_len:
            continue
        requests.append((f"r{i}", draw(st.integers(1, 6)), tuple(segments), output_len))
    return requests


@st.composite
def scheduler_cases(draw, num_blocks=st.integers(12, 40), async_scheduling=st.booleans()):
    """(config, num_blocks, block_size, requests) with caching on."""
    config, num_blocks, block_size = draw(engine_configs(num_blocks, async_scheduling))
    return config, num_blocks, block_size, draw(shared_prefix_requests(block_size, config.max_model_len))


@st.composite
def engine_configs(draw, num_blocks=st.integers(12, 40), async_scheduling=st.booleans()):
    block_size = draw(st.sampled_from([4, 8, 16]))
    num_blocks = draw(num_blocks)
    max_model_len = (num_blocks - 1) * block_size
    budget = draw(st.integers(16, 128))
    config = EngineConfig(
        max_num_seqs=draw(st.integers(1, 6)), max_num_batched_tokens=budget, max_model_len=max_model_len,
        long_prefill_token_threshold=draw(st.sampled_from([0, 0, 8, 24])),
        scheduling_policy=draw(st.sampled_from(["fcfs", "priority"])),
        scheduler_reserve_full_isl=draw(st.booleans()), watermark=draw(st.sampled_from([0.0, 0.0, 0.1])),
        async_scheduling=draw(async_scheduling), enable_prefix_caching=True)
    return config, num_blocks, block_size


def drive(config, num_blocks, block_size, requests, each_call=None, follow=None):
    """Run requests — (id, arrival step, segments, output_len[, output segment]) — through the
    continuous scheduler, one engine call a step (as the traces do), calling `each_call(sched,
    pool, admitted hits)` after every schedule and update; `follow(request, step)` gives the
    requests that arrive because `request` finished in `step` (a conversation's next turn)."""
    pool = BlockPool(num_blocks, block_size, caching=config.enable_prefix_caching)
    sched = ContinuousScheduler(config, pool)
    pending = sorted(requests, key=lambda r: r[1])
    arrived = []
    in_flight = None
    step = 0
    while pending or sched.has_work() or in_flight is not None:
        step += 1
        assert step < 5000
        while pending and pending[0][1] <= step:
            rid, _, segments, output_len, *named = pending.pop(0)
            req = Request(rid, float(step), sum(n for _, n in segments), output_len,
                          priority=len(arrived) % 3, seq=len(arrived), prompt_segments=segments,
                          output_segment=named[0] if named else None)
            sched.add_request(req)
            arrived.append(req)
        out = sched.schedule()
        hits = sched.prefix_hits(out)
        sched.sync()
        if each_call:
            each_call(sched, pool, hits)
        result = None
        if config.async_scheduling:
            processed, in_flight = in_flight, (out if not out.is_empty else None)
            if processed is not None:
                result = sched.update_from_output(processed)
        else:
            result = sched.update_from_output(out)
        sched.sync()
        if each_call:
            each_call(sched, pool, {})
        if follow and result is not None:
            for req in result.finished:
                pending.extend(follow(req, step))
            pending.sort(key=lambda r: r[1])
    return arrived, pool


@st.composite
def conversations(draw, block_size: int):
    """Conversations: (id, arrival step, shared head segments, turns as (question, answer)
    lengths, think steps between an answer and the next question)."""
    out = []
    for i in range(draw(st.integers(1, 5))):
        head = tuple((name, draw(st.integers(1, 3 * block_size)))
                     for name in draw(st.lists(st.sampled_from(PREFIXES), max_size=1)))
        turns = draw(st.lists(st.tuples(st.integers(1, 2 * block_size), st.integers(1, 3 * block_size)),
                              min_size=1, max_size=4))
        out.append((f"c{i}", draw(st.integers(1, 6)), head, tuple(turns), draw(st.integers(0, 3))))
    return out


def conversation_traffic(convs, max_len: int):
    """The first turns of `convs` as `drive` requests, and the `follow` that sends each next
    turn as the engine's client does: the previous prompt, the answer as generated (a named
    output segment) and a new question, `think` steps after the answer (a turn that would not
    fit `max_len` ends its conversation)."""
    by_id = {cid: (head, turns, think) for cid, _, head, turns, think in convs}

    def turn_request(cid, turn, before, step):
        head, turns, _ = by_id[cid]
        question, answer = turns[turn - 1]
        segments = before + ((f"{cid}/q{turn}", question),)
        if sum(n for _, n in segments) + answer >= max_len:
            return []
        return [(f"{cid}.{turn}", step, segments, answer, answer_segment(cid, turn))]

    def follow(req, step):
        cid, turn = req.request_id.split(".")
        turn = int(turn)
        if turn == len(by_id[cid][1]):
            return []
        before = req.prompt_segments + ((req.output_segment, req.num_output_tokens),)
        return turn_request(cid, turn + 1, before, step + 1 + by_id[cid][2])

    first = [r for cid, step, head, _, _ in convs for r in turn_request(cid, 1, head, step)]
    return first, follow


@settings(max_examples=examples(80))
@given(scheduler_cases())
def test_pool_invariants_on_random_shared_prefix_workloads(case):
    """After every schedule and every update: reference counts are never negative and equal the
    number of holders, no free block is referenced, blocks are conserved (a shared block counted
    once), cached = held with a hash + evictable; every hit is whole blocks and at most the
    request's tokens minus one."""
    config, num_blocks, block_size, requests = case
    arrived, pool = drive(config, num_blocks, block_size, requests, _check_hits(block_size, {}))
    assert pool.free == pool.usable and pool.unattributed == 0  # all blocks came back
    assert pool.cached == pool.evictable
    for req in arrived:
        assert req.num_output_tokens == req.output_len or req.prompt_len + req.num_output_tokens >= config.max_model_len
        assert 0 <= req.num_cached_tokens <= req.prompt_len - 1


def _check_hits(block_size, by_id):
    """A call's checks: the pool's invariants; every hit whole blocks, at most the request's
    tokens minus one, and where its computed tokens start."""
    def check(sched, pool, hits):
        pool.check()
        for req in list(sched.running) + list(sched.waiting):
            by_id[req.request_id] = req
        for rid, hit in hits.items():
            req = by_id[rid]
            assert hit % block_size == 0
            assert hit <= req.num_tokens - 1
            assert req.num_computed_tokens >= hit
    return check


@settings(max_examples=examples(80))
@given(st.data())
def test_pool_invariants_on_random_multi_turn_workloads(data):
    """Conversations whose next turn repeats the previous prompt and its answer as generated
    (the answer's blocks are named, shared and reference-counted like prompt blocks): the pool's
    invariants hold after every call, every hit is whole blocks and at most the request's
    tokens minus one (its prompt minus one at first admission), and every block comes back."""
    config, num_blocks, block_size = data.draw(engine_configs())
    first, follow = conversation_traffic(data.draw(conversations(block_size)), config.max_model_len)
    arrived, pool = drive(config, num_blocks, block_size, first, _check_hits(block_size, {}), follow)
    assert pool.free == pool.usable and pool.unattributed == 0
    assert pool.cached == pool.evictable
    for req in arrived:
        assert req.num_output_tokens == req.output_len or req.prompt_len + req.num_output_tokens >= config.max_model_len
        assert 0 <= req.num_cached_tokens <= req.prompt_len - 1


@settings(max_examples=examples(60))
@given(st.data())
def test_a_next_turn_hits_its_history_answer_included(data):
    """With blocks enough that nothing is evicted (nor preempted) and synchronous scheduling, a
    next turn finds every full block of what its previous turn computed — the previous prompt
    and the answer but its last token (sampled, never fed back) — in the cache: vLLM's hits for
    a conversation."""
    convs = data.draw(conversations(16))
    config, num_blocks, block_size = data.draw(engine_configs(num_blocks=st.just(4000),
                                                              async_scheduling=st.just(False)))
    first, follow = conversation_traffic(convs, config.max_model_len)
    arrived, pool = drive(config, num_blocks, block_size, first, None, follow)
    by_id = {req.request_id: req for req in arrived}
    later = [req for req in arrived if not req.request_id.endswith(".1")]
    for req in later:
        cid, turn = req.request_id.split(".")
        previous = by_id[f"{cid}.{int(turn) - 1}"]
        history = previous.prompt_len + previous.num_output_tokens - 1
        assert req.num_preemptions == previous.num_preemptions == 0
        assert req.num_cached_tokens == history // block_size * block_size, (req, previous)
    assert all(r.num_output_tokens == r.output_len for r in arrived)


def _no_two_share_a_block(requests, block_size):
    seen = set()
    for _, _, segments, _ in requests:
        hashes = prompt_block_hashes(segments, block_size)
        if seen & set(hashes):
            return False
        seen |= set(hashes)
    return True


@settings(max_examples=examples(80))
@given(scheduler_cases())
def test_caching_changes_nothing_when_nothing_is_shared(case):
    """Requests that share no full block of tokens, no preemption: every step of the trace is
    the same with caching on and off (only the cache's own fields are added)."""
    config, num_blocks, block_size, requests = case
    requests = [r for r in requests if _no_two_share_a_block([r], block_size)]
    kept, seen = [], set()
    for r in requests:
        hashes = set(prompt_block_hashes(r[2], block_size))
        if not hashes & seen:
            kept.append(r)
            seen |= hashes
    traces = []
    for caching in (True, False):
        case_dict = {"config": _case_config(config, num_blocks, block_size, caching),
                     "requests": [{"id": rid, "arrival_step": step, "prompt_len": sum(n for _, n in segs),
                                   "prompt": [{"seg": s, "len": n} for s, n in segs], "output_len": out}
                                  for rid, step, segs, out in kept]}
        try:
            traces.append(run_case(case_dict))
        except RequestRejected:
            return
    on, off = traces
    if any(off["num_preemptions"].values()):
        return  # a preempted request resumes from its own cached blocks: that is the cache's point
    assert compare(off, on) == []
    assert set(on["num_cached_tokens"].values()) <= {0}


@settings(max_examples=examples(60))
@given(scheduler_cases())
def test_named_outputs_nobody_repeats_change_nothing(case):
    """Requests sharing no block of tokens whose outputs are named (their blocks join the index
    as a conversation's answers do) but repeated by no prompt, no preemption: every request's
    state and the free blocks after every call are the same with caching on and off."""
    config, num_blocks, block_size, requests = case
    kept, seen = [], set()
    for rid, step, segments, output_len in requests:
        hashes = set(prompt_block_hashes(segments + ((f"{rid}/out", output_len),), block_size))
        if not hashes & seen:
            kept.append((rid, step, segments, output_len, f"{rid}/out"))
            seen |= hashes
    runs = []
    for caching in (True, False):
        states = []

        def record(sched, pool, hits):
            states.append((pool.free, sorted((r.request_id, r.num_computed_tokens, r.num_output_tokens, r.status)
                                             for r in list(sched.running) + list(sched.waiting))))
        arrived, pool = drive(dataclasses.replace(config, enable_prefix_caching=caching), num_blocks, block_size,
                              kept, record)
        if any(r.num_preemptions for r in arrived):
            return  # a preempted request resumes from its own cached blocks: that is the cache's point
        runs.append((states, [(r.request_id, r.num_output_tokens, r.num_cached_tokens) for r in arrived]))
        if caching:
            assert all(r.num_cached_tokens == 0 for r in arrived)
            assert pool.cached == pool.evictable
    on, off = runs
    assert on[0] == off[0]
    assert [r[:2] for r in on[1]] == [r[:2] for r in off[1]]


def _case_config(config: EngineConfig, num_blocks: int, block_size: int, caching: bool) -> dict:
    return {"block_size": block_size, "num_blocks": num_blocks, "max_num_batched_tokens": config.max_num_batched_tokens,
            "max_num_seqs": config.max_num_seqs, "enable_chunked_prefill": True,
            "long_prefill_token_threshold": config.long_prefill_token_threshold, "policy": config.scheduling_policy,
            "watermark": config.watermark, "scheduler_reserve_full_isl": config.scheduler_reserve_full_isl,
            "enable_prefix_caching": caching, "async_scheduling": config.async_scheduling,
            "max_model_len": config.max_model_len}


def test_equal_tokens_hash_equal_and_partial_blocks_are_not_hashed():
    a = prompt_block_hashes((("sys", 40), ("doc", 30), ("A", 6)), 32)
    c = prompt_block_hashes((("sys", 40), ("doc", 30), ("C", 4)), 32)
    b = prompt_block_hashes((("sys", 40), ("B", 10)), 32)
    assert len(a) == 2 and a == c  # block 1 is sys[32:40] + doc[0:24] in both
    assert b[0] == a[0] and b[1:] == []  # only whole blocks: 50 tokens make one
    assert prompt_block_hashes((("sys", 32),), 32) != prompt_block_hashes((("other", 32),), 32)
    assert prompt_block_hashes((("x", 16), ("y", 16)), 16)[1] != prompt_block_hashes((("z", 16), ("y", 16)), 16)[1]


def test_segments_must_add_up():
    assert check_segments("r", None, 10) is None
    assert check_segments("r", [("a", 4), ("b", 6)], 10) == (("a", 4), ("b", 6))
    for bad in ([("a", 4)], [("a", 0), ("b", 10)], [("a", 4.5), ("b", 5.5)], [3]):
        try:
            check_segments("r", bad, 10)
        except RequestRejected as exc:
            assert "r" in str(exc)
        else:
            raise AssertionError(bad)


@dataclasses.dataclass(frozen=True, slots=True)
class SegmentedSpec(RequestSpec):
    prompt_segments: tuple | None = None


def test_engine_counts_queries_and_hits_as_vllm():
    """Three requests share a 256-token system prompt: the first misses, the others hit its 16
    blocks once it has been scheduled. Queries are the admitted requests' tokens, hits their
    cached tokens; the snapshot shows the cached blocks."""
    engine = Engine(Scenario(workload=QUIET, seed=0))
    assert engine.config.enable_prefix_caching
    for i in range(3):
        engine.submit(SegmentedSpec(f"q{i}", 0.01 * i, 300, 8, prompt_segments=(("sys", 256), (f"q{i}", 44))))
    engine.step()
    snap = engine.snapshot()
    assert snap.cached_blocks >= 18 and snap.evictable_blocks == 0
    summary = engine.run()
    reqs = [engine.requests[f"q{i}"] for i in range(3)]
    assert [r.num_cached_tokens for r in reqs] == [0, 256, 256]
    queries = sum(r.prompt_len for r in engine.requests.values())  # (the workload's own one included)
    assert queries > 900
    assert summary["prefix_cache_queries"] == queries
    assert summary["prefix_cache_hits"] == 512
    assert abs(summary["prefix_cache_hit_rate"] - 512 / queries) < 1e-12
    snap = engine.snapshot()
    assert snap.evictable_blocks == snap.cached_blocks > 0
    assert snap.kv_blocks_used == 0


def test_engine_without_caching_hits_nothing():
    engine = Engine(Scenario(engine={"enable_prefix_caching": False}, workload=QUIET, seed=0))
    for i in range(3):
        engine.submit(SegmentedSpec(f"q{i}", 0.01 * i, 300, 8, prompt_segments=(("sys", 256), (f"q{i}", 44))))
    summary = engine.run()
    assert summary["prefix_cache_hits"] == 0 and summary["prefix_cache_queries"] == 0
    assert engine.snapshot().cached_blocks == 0


def test_segments_that_do_not_add_up_are_refused():
    engine = Engine(Scenario(workload=QUIET, seed=0))
    try:
        engine.submit(SegmentedSpec("bad", 0.0, 300, 8, prompt_segments=(("sys", 256),)))
    except RequestRejected as exc:
        assert "add up to 256" in str(exc)
    else:
        raise AssertionError("accepted")


def test_scenario_round_trip_keeps_the_dial():
    sc = Scenario(engine={"enable_prefix_caching": False})
    again = Scenario.from_dict(json.loads(json.dumps(sc.to_dict())))
    assert again.engine_config().enable_prefix_caching is False
    assert Scenario().engine_config().enable_prefix_caching is True


def test_a_next_turn_repeats_the_answer_as_generated():
    """A turn's output is named (`<conversation>/a<turn>`) and the next prompt repeats the tokens
    really generated: an answer cut short comes back short."""
    w = dataclasses.replace(MULTI_TURN_HELPDESK, num_prompts=1)
    first = RequestSpec("7", 0.0, 256, 300, prompt_segments=(("prefix-0", 192), ("7/q1", 64)), conversation="7")
    assert first.output_segment == answer_segment("7", 1) and RequestSpec("8", 0.0, 10, 5).output_segment is None
    whole = next_turn(w, first, 10.0, seed=3)
    short = next_turn(w, first, 10.0, seed=3, answered=120)
    assert whole.prompt_segments[:3] == first.prompt_segments + ((answer_segment("7", 1), 300),)
    assert short.prompt_segments[:3] == first.prompt_segments + ((answer_segment("7", 1), 120),)
    assert whole.prompt_len - short.prompt_len == 180
    assert short.output_segment == answer_segment("7", 2) and short.output_len == whole.output_len
