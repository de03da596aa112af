"""The fast path (sim/fastpath.py) against the engine run one step() at a time.

Whatever run() or advance_until() skip over in bulk must leave every number exactly as step()
would: per-request first-token and finish times, iteration counts, preemptions, ITL gaps, every
summary metric, the report of the last iteration, and the live snapshot at every stopping point.
"""

import json
import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.engine import Engine
from sim.errors import ConfigError, RequestRejected
from sim.fastpath import FastPath
from sim.scenario import Scenario
from sim.workload import LengthSpec, RequestSpec, WorkloadSpec


def request_states(engine):
    return sorted(
        (r.request_id, r.first_token_time, r.finish_time, r.first_token_iteration, r.finish_iteration,
         r.num_output_tokens, r.num_computed_tokens, r.num_preemptions, r.max_gap, r.finish_reason,
         r.last_token_time, r.status)
        for r in engine.requests.values())


def metric_state(engine):
    m = engine.metrics
    return (m.running_integral, m.busy_time, m.max_running, m.peak_kv_used, dict(m.binding_counts),
            m.output_tokens, m.prompt_tokens, m.completed, m.num_preemptions, m.max_itl,
            m.last_token_time, list(m.itl_values), list(m.itl_counts), m.seat_iterations,
            list(m._recent_tokens), list(m.series_throughput), list(m.series_ttft),
            list(m.series_tpot), list(m.series_itl), [r.__dict__ for r in m.records])


def assert_same(fast, slow):
    assert fast.iteration == slow.iteration
    assert fast.time == slow.time
    assert fast.done == slow.done
    assert request_states(fast) == request_states(slow)
    assert metric_state(fast) == metric_state(slow)
    assert fast.pool.free == slow.pool.free
    assert fast.pool.holdings() == slow.pool.holdings()
    assert [r.request_id for r in fast.scheduler.running] == [r.request_id for r in slow.scheduler.running]
    assert [r.request_id for r in fast.scheduler.waiting] == [r.request_id for r in slow.scheduler.waiting]
    assert fast.last == slow.last
    assert fast.snapshot() == slow.snapshot()


def step_to(engine, iteration):
    while engine.iteration < iteration:
        assert engine.step() is not None


@st.composite
def scenarios(draw):
    block_size = draw(st.sampled_from([1, 4, 16, 32]))
    max_num_seqs = draw(st.sampled_from([1, 2, 3, 8, 64, 1024]))
    chunked = draw(st.booleans())
    max_model_len = draw(st.sampled_from([300, 1200, 4096]))
    low = max(max_num_seqs, max_model_len if not chunked else 1)
    budget = draw(st.sampled_from([low, max(low, 64), max(low, 600), max(low, 2048), max(low, 8192)]))
    engine = {
        "max_num_seqs": max_num_seqs, "max_num_batched_tokens": budget,
        "enable_chunked_prefill": chunked, "max_model_len": max_model_len,
        "long_prefill_token_threshold": draw(st.sampled_from([0, 0, 16, 256])),
        "scheduling_policy": draw(st.sampled_from(["fcfs", "fcfs", "priority"])),
        "watermark": draw(st.sampled_from([0.0, 0.0, 0.01, 0.05])),
        "scheduler_reserve_full_isl": draw(st.booleans()),
    }
    blocks = draw(st.sampled_from([None, None, 12, 40, 120, 600]))
    length = st.sampled_from(["fixed", "uniform", "lognormal", "mixed"])
    workload = WorkloadSpec(
        arrival=draw(st.sampled_from(["poisson", "poisson", "constant", "bursts"])),
        request_rate=draw(st.sampled_from([0.5, 3.0, 20.0, 150.0, math.inf])),
        num_prompts=draw(st.integers(1, 120)),
        burst_size=draw(st.sampled_from([2, 16])),
        input=LengthSpec(dist=draw(length), mean=draw(st.sampled_from([1, 7, 64, 200, 512])), high=1000,
                         long_len=900, long_share=0.1),
        output=LengthSpec(dist=draw(length), mean=draw(st.sampled_from([1, 2, 17, 100, 256])), high=700,
                          long_len=600, long_share=0.1),
    )
    return Scenario(engine=engine, workload=workload, block_size=block_size,
                    num_gpu_blocks_override=blocks, seed=draw(st.integers(0, 1000)))


def make(scenario, fast, live):
    engine = Engine(scenario, live=live, keep_records=True)
    engine.fast_path_enabled = fast
    return engine


def build_or_skip(scenario, live=True):
    try:
        Engine(scenario, live=live).run(max_iterations=0)
    except (ConfigError, RequestRejected):
        assume(False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans())
def test_run_equals_step_by_step(scenario, live):
    build_or_skip(scenario, live)
    if not live:
        try:
            Engine(scenario).run()
        except RequestRejected:
            assume(False)
    fast = make(scenario, True, live)
    fast.run()
    slow = make(scenario, False, live)
    while slow.step() is not None:
        pass
    assert_same(fast, slow)
    assert fast.summary().metrics == slow.summary().metrics


DIALS = [("engine.max_num_seqs", 1), ("engine.max_num_seqs", 3), ("engine.max_num_seqs", 1024),
         ("engine.max_num_batched_tokens", 8192), ("engine.long_prefill_token_threshold", 0),
         ("engine.long_prefill_token_threshold", 32), ("engine.scheduling_policy", "priority"),
         ("engine.scheduling_policy", "fcfs"), ("engine.watermark", 0.02)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans(), st.sampled_from([2, 5, 40]))
def test_numpy_stretches_equal_step_by_step(scenario, live, numpy_min):
    """Long decode stretches are computed with numpy arrays; force that path on short ones."""
    build_or_skip(scenario, live)
    if not live:
        try:
            Engine(scenario).run()
        except RequestRejected:
            assume(False)
    saved = FastPath.NUMPY_MIN
    FastPath.NUMPY_MIN = numpy_min
    try:
        fast = make(scenario, True, live)
        fast.run()
    finally:
        FastPath.NUMPY_MIN = saved
    slow = make(scenario, False, live)
    while slow.step() is not None:
        pass
    assert_same(fast, slow)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.lists(st.tuples(st.sampled_from(["iterations", "time", "step", "dial", "submit"]),
                                       st.integers(1, 400)), min_size=1, max_size=12),
       st.booleans())
def test_runs_in_slices_equal_step_by_step(scenario, slices, keep_records):
    """run(max_iterations=), advance_until() and single steps, interleaved with live dial
    changes and submitted requests: the state after every slice is the state step() reaches
    after as many iterations."""
    build_or_skip(scenario)
    fast = Engine(scenario, live=True, keep_records=keep_records)
    slow = Engine(scenario, live=True, keep_records=keep_records)
    slow.fast_path_enabled = False
    for kind, amount in slices:
        if kind == "iterations":
            fast.run(max_iterations=amount)
        elif kind == "time":
            # A paced run idles its clock to the horizon when nothing is left to run before it;
            # stepping never does, so the reference makes the same paced call, one iteration at
            # a time (its fast path is off).
            horizon = fast.time + amount / 100.0
            ran = fast.advance_until(horizon)
            assert slow.advance_until(horizon) == ran
        elif kind == "dial":
            path, value = DIALS[amount % len(DIALS)]
            for engine in (fast, slow):
                try:
                    engine.set_dial(path, value)
                except ConfigError:
                    pass
            continue
        elif kind == "submit":
            spec = RequestSpec(f"extra-{amount}-{fast.iteration}", fast.time, 1 + amount % 97, 1 + amount % 13,
                               priority=amount % 3)
            fast.submit(spec)
            slow.submit(spec)
            continue
        else:
            fast.step()
        if fast.done:
            while slow.step() is not None:
                pass
        else:
            step_to(slow, fast.iteration)
        assert_same(fast, slow)
    fast.run()
    while slow.step() is not None:
        pass
    assert_same(fast, slow)


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_priorities_and_preemption_from_a_trace(policy):
    """A trace with priorities into a cache small enough to preempt often."""
    rng = np.random.default_rng(7)
    t = 0.0
    lines = []
    for i in range(300):
        t += float(rng.exponential(0.02))
        lines.append(json.dumps({"arrival_time": t, "prompt_len": int(rng.integers(1, 400)),
                                 "output_len": int(rng.integers(1, 300)), "priority": int(rng.integers(0, 3))}))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        fh.write("\n".join(lines))
    try:
        scenario = Scenario(engine={"scheduling_policy": policy, "max_num_seqs": 64, "max_model_len": 1024},
                            workload=WorkloadSpec(arrival="trace", trace_path=fh.name),
                            num_gpu_blocks_override=120)
        fast = make(scenario, True, False)
        fast.run()
        slow = make(scenario, False, False)
        while slow.step() is not None:
            pass
        assert fast.metrics.num_preemptions > 10
        assert_same(fast, slow)
    finally:
        os.unlink(fh.name)


def small_trace_scenario(seed, path):
    """Tight corners: a few dozen short requests, tiny budgets, long-prefill caps, caches of a
    handful of blocks (preemption, recompute chunks that end one token short, a first token that
    reaches max_model_len)."""
    rng = np.random.default_rng(seed)
    t = 0.0
    with open(path, "w") as fh:
        for _ in range(40):
            t += float(rng.exponential(0.01))
            fh.write(json.dumps({"arrival_time": t, "prompt_len": int(rng.integers(1, 60)),
                                 "output_len": int(rng.integers(1, 40))}) + "\n")
    return Scenario(
        engine={"max_num_seqs": 8, "max_num_batched_tokens": int(rng.choice([16, 32, 64, 100])),
                "max_model_len": int(rng.choice([64, 100])),
                "long_prefill_token_threshold": int(rng.choice([4, 8, 16]))},
        workload=WorkloadSpec(arrival="trace", trace_path=path), block_size=int(rng.choice([1, 4, 16])),
        num_gpu_blocks_override=int(rng.choice([8, 12, 20])))


def test_small_traces_in_tight_corners():
    with tempfile.TemporaryDirectory() as tmp:
        for seed in list(range(40)) + [265]:
            try:
                scenario = small_trace_scenario(seed, os.path.join(tmp, f"{seed}.jsonl"))
                fast = make(scenario, True, True)
            except ConfigError:
                continue
            fast.run()
            slow = make(scenario, False, True)
            while slow.step() is not None:
                pass
            assert_same(fast, slow)


@pytest.mark.parametrize("rate", [2.0, 24.0, 48.0, math.inf])
def test_default_profile_sweep_points(rate):
    """The §8 sweep's traffic (512 in / 256 out, default dials), shortened."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=rate, num_prompts=600), seed=1)
    fast = make(scenario, True, False)
    fast.run()
    slow = make(scenario, False, False)
    while slow.step() is not None:
        pass
    assert_same(fast, slow)


@pytest.mark.parametrize("deployment", [
    {"tensor_parallel_size": 2}, {"kv_cache_dtype": "fp8", "gpu": "a100-80gb"},
    {"model": "llama-3.1-70b", "tensor_parallel_size": 4}, {"block_size": 32, "gpu": "l40s"},
])
def test_other_deployments(deployment):
    """All-reduce terms, other GPUs, other block sizes: the inlined iteration time must stay
    the cost model's."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=15.0, num_prompts=300,
                                              input=LengthSpec("uniform", 700, 1, 3000)), seed=2,
                        **deployment)
    fast = make(scenario, True, False)
    fast.run()
    slow = make(scenario, False, False)
    while slow.step() is not None:
        pass
    assert_same(fast, slow)


@pytest.mark.parametrize("keep_records", [True, False])
def test_endless_live_workload_in_slices(keep_records):
    scenario = Scenario(engine={"max_model_len": 4096}, workload=WorkloadSpec(request_rate=30, num_prompts=0),
                        num_gpu_blocks_override=2000)
    fast = Engine(scenario, live=True, keep_records=keep_records)
    slow = Engine(scenario, live=True, keep_records=keep_records)
    slow.fast_path_enabled = False
    for _ in range(20):
        horizon = fast.time + 0.7
        fast.advance_until(horizon)
        slow.advance_until(horizon)
        assert_same(fast, slow)


def test_a_second_live_request_under_one_id_is_refused():
    """Engine bug found by the slice test: two live requests sharing an id shared one entry of
    the block pool (a finished one's id may be used again)."""
    scenario = Scenario(engine={"max_model_len": 4096}, workload=WorkloadSpec(request_rate=1, num_prompts=1),
                        num_gpu_blocks_override=500)
    live = Engine(scenario, live=True)
    live.submit(RequestSpec("x", 0.0, 100, 50))
    live.submit(RequestSpec("x", 0.0, 100, 50))
    assert live.metrics.rejected == 1 and "already used" in live.notices[-1]
    live.run()
    assert live.done
    live.submit(RequestSpec("x", 0.0, 100, 50))  # "x" has finished: its id is free again
    assert not live.done  # (engine bug: a finished run stayed "finished" after a submit)
    live.run()
    assert live.done and live.metrics.completed == 3 and live.pool.free == live.pool.usable
    headless = Engine(scenario)
    headless.submit(RequestSpec("y", 0.0, 100, 50))
    with pytest.raises(RequestRejected, match="already used"):
        headless.submit(RequestSpec("y", 0.0, 100, 50))


def test_a_request_submitted_for_later_arrives_then():
    """Engine bug: submit() queued a request at once even when its arrival time was later, so
    it could be served before it arrived (negative TTFT)."""
    scenario = Scenario(engine={"max_model_len": 4096}, workload=WorkloadSpec(request_rate=2, num_prompts=4),
                        num_gpu_blocks_override=500)
    for fast_path in (True, False):
        engine = Engine(scenario)
        engine.fast_path_enabled = fast_path
        engine.submit(RequestSpec("later", 5.0, 64, 8))
        engine.submit(RequestSpec("now", 0.0, 64, 8))
        engine.run()
        later = engine.requests["later"]
        assert later.arrival_time == 5.0 and later.first_token_time > 5.0
        assert engine.metrics.completed == 6
        assert min(r.ttft for r in engine.metrics.records) > 0
