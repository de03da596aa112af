"""The engine against the reference implementation kept under `tests/reference_engine/` (the
scheduler, engine loop and fast path as they were before issue 10).

Both run the same random scenarios; every number must come out the same, float for float:
per-request first-token and finish times and iterations, preemptions, largest gaps, every summary
metric, the report of the last iteration and the live snapshot, also when runs are cut into
slices, dials move and requests are submitted between them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
import json
import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sim.engine import Engine
from sim.errors import ConfigError, RequestRejected
from sim.scenario import Scenario
from sim.schedulers import continuous
from sim.workload import LengthSpec, RequestSpec, WorkloadSpec
from tests.reference_engine import Engine as ReferenceEngine


def scaled_examples(ci_count: int) -> int:
    """`ci_count` under the default profile (100 examples), proportionally more under `dev`."""
    return max(5, ci_count * settings.default.max_examples // 100)


def _recomputed(key: str) -> bool:
    """Summary figures the command line's issue recomputes from the same gaps in another order
    (ITL statistics over columns, a weighted selection for percentiles): equal to the last bit
    or two, not to the bit."""
    return key.endswith("_itl_ms")


def _common(a: dict, b: dict) -> tuple[dict, dict]:
    """The fields both have, at every depth (the reference predates fields added since, such as
    a report's `linear` or a live view's `pools`)."""
    keys = set(a) & set(b)
    x, y = {}, {}
    for k in keys:
        va, vb = a[k], b[k]
        if isinstance(va, dict) and isinstance(vb, dict):
            va, vb = _common(va, vb)
        elif _recomputed(k) and isinstance(va, float) and isinstance(vb, float) and math.isclose(va, vb, rel_tol=1e-12):
            vb = va
        x[k], y[k] = va, vb
    return x, y


def _as_dict(obj) -> dict | None:
    return None if obj is None else dataclasses.asdict(obj)


def request_states(engine) -> list:
    """Every request the engine holds, but those waiting that never ran (the live engine keeps
    an endless workload's in compact form; the queue's order is compared apart)."""
    return sorted(
        (r.request_id, r.arrival_time, r.first_token_time, r.finish_time, r.first_token_iteration,
         r.finish_iteration, r.num_output_tokens, r.num_computed_tokens, r.num_preemptions, r.max_gap,
         r.finish_reason, r.last_token_time, r.status)
        for r in engine.requests.values() if r.status != "waiting")


def records(engine) -> list[dict]:
    return [dataclasses.asdict(r) for r in engine.metrics.records]


def assert_same(new: Engine, ref: ReferenceEngine) -> None:
    """Everything a user of the engine can read is the same in both."""
    snap_new, snap_ref = new.snapshot(), ref.snapshot()  # the snapshot brings fields up to date
    assert new.iteration == ref.iteration
    assert new.time == ref.time
    assert new.done == ref.done
    assert request_states(new) == request_states(ref)
    assert records(new) == records(ref)
    assert new.pool.free == ref.pool.free
    assert new.pool.holdings() == ref.pool.holdings()
    assert [r.request_id for r in new.scheduler.running] == [r.request_id for r in ref.scheduler.running]
    assert [r.request_id for r in new.scheduler.waiting] == [r.request_id for r in ref.scheduler.waiting]
    assert new.metrics.running_integral == ref.metrics.running_integral
    assert new.metrics.busy_time == ref.metrics.busy_time
    assert new.metrics.num_preemptions == ref.metrics.num_preemptions
    assert new.metrics.rejected == ref.metrics.rejected
    a, b = _common(new.summary().metrics, ref.summary().metrics)
    assert a == b
    a, b = _common(_as_dict(new.last) or {}, _as_dict(ref.last) or {})
    assert a == b
    a, b = _common(dataclasses.asdict(snap_new), dataclasses.asdict(snap_ref))
    assert a == b


def run_both(scenario: Scenario, live: bool, keep_records: bool = True) -> tuple[Engine, ReferenceEngine]:
    # The reference predates prefix caching: with it on, a preempted request resumes from its
    # own cached blocks (tests/unit/test_prefix_*.py compare caching on and off).
    return (Engine(scenario.with_engine(enable_prefix_caching=False), live=live, keep_records=keep_records),
            ReferenceEngine(scenario, live=live, keep_records=keep_records))


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


def servable(scenario: Scenario, live: bool) -> bool:
    """False for a scenario the engine refuses, or (headless) one holding an unservable request."""
    try:
        ReferenceEngine(scenario, live=live).run(max_iterations=0)
        if not live:
            ReferenceEngine(scenario).run()
    except (ConfigError, RequestRejected):
        return False
    return True


@settings(max_examples=scaled_examples(100))
@given(scenarios(), st.booleans())
def test_whole_runs_agree(scenario, live):
    assume(servable(scenario, live))
    new, ref = run_both(scenario, live)
    new.run()
    ref.run()
    assert_same(new, ref)


@settings(max_examples=scaled_examples(20))
@given(scenarios(), st.booleans())
def test_step_by_step_agrees(scenario, live):
    """step() (a full report every iteration) against the reference stepped the same way."""
    assume(servable(scenario, live))
    new, ref = run_both(scenario, live)
    while True:
        a, b = new.step(), ref.step()
        assert (a is None) == (b is None)
        if a is None:
            break
        x, y = _common(dataclasses.asdict(a), dataclasses.asdict(b))
        assert x == y
    assert_same(new, ref)


@settings(max_examples=scaled_examples(40))
@given(scenarios(), st.booleans(), st.sampled_from([2, 5, 40]))
def test_stretches_timed_with_numpy_agree(scenario, live, numpy_from):
    """Long decode stretches are timed with numpy arrays; force that on short ones too."""
    assume(servable(scenario, live))
    saved = continuous.NUMPY_STRETCH
    continuous.NUMPY_STRETCH = numpy_from
    try:
        new, ref = run_both(scenario, live)
        new.run()
    finally:
        continuous.NUMPY_STRETCH = saved
    ref.run()
    assert_same(new, ref)


DIALS = [("engine.max_num_seqs", 1), ("engine.max_num_seqs", 3), ("engine.max_num_seqs", 1024),
         ("engine.max_num_batched_tokens", 8192), ("engine.long_prefill_token_threshold", 0),
         ("engine.long_prefill_token_threshold", 32), ("engine.scheduling_policy", "priority"),
         ("engine.scheduling_policy", "fcfs"), ("engine.watermark", 0.02),
         ("workload.request_rate", 7.0), ("workload.request_rate", 400)]


@settings(max_examples=scaled_examples(60))
@given(scenarios(), st.lists(st.tuples(st.sampled_from(["iterations", "time", "step", "dial", "submit"]),
                                       st.integers(1, 400)), min_size=1, max_size=12),
       st.booleans())
def test_runs_in_slices_with_dials_and_submits_agree(scenario, slices, keep_records):
    """run(max_iterations=), advance_until(), single steps, live dial changes and submitted
    requests, in any order: the state after every slice is the reference's."""
    assume(servable(scenario, True))
    new, ref = run_both(scenario, True, keep_records)
    for kind, amount in slices:
        if kind == "iterations":
            new.run(max_iterations=amount)
            ref.run(max_iterations=amount)
        elif kind == "time":
            horizon = new.time + amount / 100.0
            assert new.advance_until(horizon) == ref.advance_until(horizon)
        elif kind == "dial":
            path, value = DIALS[amount % len(DIALS)]
            outcomes = []
            for engine in (new, ref):
                try:
                    engine.set_dial(path, value)
                    outcomes.append("ok")
                except ConfigError as exc:
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1]
        elif kind == "submit":
            spec = RequestSpec(f"extra-{amount}-{new.iteration}", new.time, 1 + amount % 97, 1 + amount % 13,
                               priority=amount % 3)
            new.submit(spec)
            ref.submit(spec)
        else:
            a, b = new.step(), ref.step()
            assert (a is None) == (b is None)
        assert_same(new, ref)
    new.run()
    ref.run()
    assert_same(new, ref)


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_priorities_and_preemption_from_a_trace(policy, tmp_path):
    """A trace with priorities into a cache small enough to preempt often."""
    rng = np.random.default_rng(7)
    t = 0.0
    lines = []
    for _ in range(300):
        t += float(rng.exponential(0.02))
        lines.append(json.dumps({"arrival_time": t, "prompt_len": int(rng.integers(1, 400)),
                                 "output_len": int(rng.integers(1, 300)), "priority": int(rng.integers(0, 3))}))
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines))
    scenario = Scenario(engine={"scheduling_policy": policy, "max_num_seqs": 64, "max_model_len": 1024},
                        workload=WorkloadSpec(arrival="trace", trace_path=str(path)),
                        num_gpu_blocks_override=120)
    new, ref = run_both(scenario, False)
    new.run()
    ref.run()
    assert new.metrics.num_preemptions > 10
    assert_same(new, ref)


def small_trace_scenario(seed: int, path: str) -> Scenario:
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


def test_small_traces_in_tight_corners(tmp_path):
    for seed in list(range(40)) + [265]:
        try:
            scenario = small_trace_scenario(seed, str(tmp_path / f"{seed}.jsonl"))
            new, ref = run_both(scenario, True)
        except ConfigError:
            continue
        new.run()
        ref.run()
        assert_same(new, ref)


@pytest.mark.parametrize("rate", [2.0, 24.0, 48.0, math.inf])
def test_default_profile_sweep_points(rate):
    """The §8 sweep's traffic (512 in / 256 out, default dials), shortened."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=rate, num_prompts=600), seed=1)
    new, ref = run_both(scenario, False)
    new.run()
    ref.run()
    assert_same(new, ref)


@pytest.mark.parametrize("deployment", [
    {"tensor_parallel_size": 2}, {"kv_cache_dtype": "fp8", "gpu": "a100-80gb"},
    {"model": "llama-3.1-70b", "tensor_parallel_size": 4}, {"block_size": 32, "gpu": "l40s"},
])
def test_other_deployments(deployment):
    """All-reduce terms, other GPUs, other block sizes."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=15.0, num_prompts=300,
                                              input=LengthSpec("uniform", 700, 1, 3000)), seed=2,
                        **deployment)
    new, ref = run_both(scenario, False)
    new.run()
    ref.run()
    assert_same(new, ref)


@pytest.mark.parametrize("keep_records", [True, False])
def test_endless_live_workload_in_slices(keep_records):
    scenario = Scenario(engine={"max_model_len": 4096}, workload=WorkloadSpec(request_rate=30, num_prompts=0),
                        num_gpu_blocks_override=2000)
    new, ref = run_both(scenario, True, keep_records)
    for _ in range(20):
        horizon = new.time + 0.7
        new.advance_until(horizon)
        ref.advance_until(horizon)
        assert_same(new, ref)


@pytest.mark.parametrize("batching", ["sequential", "static", "dynamic"])
def test_other_policies_agree(batching):
    scenario = Scenario(engine={"batching": batching, "max_batch_size": 16, "max_queue_delay": 0.02},
                        workload=WorkloadSpec(request_rate=25.0, num_prompts=120,
                                              output=LengthSpec("uniform", 64, 1, 200)), seed=5)
    new, ref = run_both(scenario, False)
    new.run()
    ref.run()
    assert_same(new, ref)


def test_an_encoder_under_dynamic_batching_agrees():
    scenario = Scenario(model="bge-large-embedder",
                        engine={"batching": "dynamic", "max_batch_size": 32, "max_queue_delay": 0.005},
                        workload=WorkloadSpec(request_rate=300.0, num_prompts=0, input=LengthSpec(mean=256),
                                              output=LengthSpec(mean=1)), seed=4)
    new, ref = run_both(scenario, True)
    for _ in range(12):
        new.advance_until(new.time + 0.3)
        ref.advance_until(ref.time + 0.3)
        assert_same(new, ref)
    a, b = new.step(), ref.step()
    x, y = _common(dataclasses.asdict(a), dataclasses.asdict(b))
    assert x == y


def test_the_comparison_notices_a_difference():
    """The safety net can fail: one request's length changed on one side only."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=20.0, num_prompts=50), seed=3)
    new, ref = run_both(scenario, False)
    new.submit(RequestSpec("odd", 0.5, 100, 10))
    ref.submit(RequestSpec("odd", 0.5, 100, 11))
    new.run()
    ref.run()
    with pytest.raises(AssertionError):
        assert_same(new, ref)


@settings(max_examples=scaled_examples(30))
@given(scenarios(), st.lists(st.tuples(st.sampled_from(["iterations", "time", "step", "dial", "submit"]),
                                       st.integers(1, 300)), min_size=1, max_size=8))
def test_endless_live_workloads_held_in_compact_form_agree(scenario, slices):
    """The live engine holds an endless workload's waiting requests as runs of its generator's
    stream (drawn again at the head of the queue); everything it shows is the reference's, also
    across traffic changes, other dials and submitted requests."""
    workload = replace(scenario.workload, num_prompts=0, arrival="poisson",
                       request_rate=min(scenario.workload.request_rate, 60.0))
    scenario = replace(scenario, workload=workload)
    try:
        ReferenceEngine(scenario, live=True).run(max_iterations=0)
    except (ConfigError, RequestRejected):
        assume(False)
    new, ref = run_both(scenario, True, keep_records=False)
    for kind, amount in slices:
        if kind == "iterations":
            new.run(max_iterations=amount)
            ref.run(max_iterations=amount)
        elif kind == "time":
            horizon = new.time + amount / 200.0
            assert new.advance_until(horizon, 5000) == ref.advance_until(horizon, 5000)
        elif kind == "dial":
            path, value = DIALS[amount % len(DIALS)]
            outcomes = []
            for engine in (new, ref):
                try:
                    engine.set_dial(path, value)
                    outcomes.append("ok")
                except ConfigError as exc:
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1]
        elif kind == "submit":
            spec = RequestSpec(f"extra-{amount}-{new.iteration}", new.time, 1 + amount % 97, 1 + amount % 13,
                               priority=amount % 3)
            new.submit(spec)
            ref.submit(spec)
        else:
            new.step()
            ref.step()
        assert_same(new, ref)
