"""The engine agrees with itself on every kind of traffic and dial (issue 20).

One scenario, three ways through the same engine: the fast path (`Engine.run`, decode stretches
in bulk), the step-by-step path (`Engine.step()` in a loop, a full report every iteration) and
a run cut into random slices (`advance_until` at random times, single steps, `run` with an
iteration limit). Dial changes in the middle of the run are made at the same iteration on every
path. Every per-request record (all fields) and every summary figure must come out the same, to
the float. Scenarios are drawn across everything the project models: Poisson, bursty (gamma) and
constant arrivals, bursts, rate inf, client caps, conversations with turns and think times,
traces with priorities and hash ids, shared prefixes, wide (ShareGPT-like) length spreads, a
small KV cache that preempts, over-long requests the API server fails, prefix caching and async
scheduling on and off, and the static, dynamic and sequential policies.

A second property keeps what the reference engine under tests/ guarded before issue 20: the
live engine, which holds an endless workload's waiting requests in compact form (a lazy queue),
shows exactly what a headless engine holding them as Request objects shows, across slices, dial
changes and submitted requests.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from sim.engine import Engine
from sim.errors import ConfigError, RequestRejected
from sim.kv import blocks_for
from sim.scenario import Scenario
from sim.schedulers import continuous
from sim.workload import LengthSpec, RequestSpec, WorkloadSpec
from tests.examples import examples


TRACES = Path(tempfile.mkdtemp(prefix="batchtui-agree-"))


def _trace(seed: int, n: int, hash_ids: bool, priorities: bool) -> str:
    """A small trace (vLLM's timed layout when `hash_ids`, in seconds as vLLM reads it by default:
    its prompts share blocks)."""
    path = TRACES / f"{seed}-{n}-{hash_ids}-{priorities}.jsonl"
    if not path.exists():
        rng = np.random.default_rng(seed)
        t = 0.0
        lines = []
        for _ in range(n):
            t += float(rng.exponential(0.02))
            prompt = int(rng.integers(1, 300))
            line = {"arrival_time": t, "prompt_len": prompt, "output_len": int(rng.integers(1, 60))}
            if hash_ids:
                blocks = -(-prompt // 16)
                line = {"timestamp": t, "input_length": prompt, "output_length": line["output_len"],
                        "hash_ids": [int(h) for h in rng.integers(0, 6, size=blocks)]}
            if priorities:
                line["priority"] = int(rng.integers(0, 3))
            lines.append(json.dumps(line))
        path.write_text("\n".join(lines) + "\n")
    return str(path)


# The API server in front of the engine (sim.frontend): the profile's costs, none, or a server so
# slow that its jobs queue behind each other (output jobs longer than the iterations, requests
# sent while it is busy), each with one or several API server processes.
FRONTENDS = {
    "profile": None,
    "off": (0.0, 0.0, 0.0),
    "slow": (0.002, 2e-5, 4e-4),
    "uneven": (0.0, 1e-4, 3e-5),
}


def _frontend_profile(name: str) -> str:
    """A profile file setting the API server's costs ("" for the built-in profile's)."""
    costs = FRONTENDS[name]
    if costs is None:
        return ""
    path = TRACES / f"frontend-{name}.toml"
    if not path.exists():
        request, prompt, output = costs
        lines = [f"[gpus.{gpu}]\nfrontend_request_s = {request!r}\nfrontend_prompt_token_s = {prompt!r}\n"
                 f"frontend_output_token_s = {output!r}\n" for gpu in ("h100-sxm",)]
        path.write_text("".join(lines))
    return str(path)


LENGTHS = {
    "short": lambda mean: LengthSpec("fixed", mean),
    "uniform": lambda mean: LengthSpec("uniform", mean, 1, 2 * mean),
    # ShareGPT-like: a wide spread, most short, a few many times the median
    "sharegpt": lambda mean: LengthSpec("lognormal", mean, 1, 12 * mean, sigma=1.1),
    "mixed": lambda mean: LengthSpec("mixed", mean, long_len=6 * mean, long_share=0.15),
}


# A client with work of its own (sim.frontend): none (vllm bench serve's, taken as free), or one
# slow enough that its jobs queue (a request's longer than an iteration, a token's a share of one).
CLIENTS = [(0.0, 0.0), (0.0, 0.0), (0.002, 3e-4), (0.0, 1e-4)]


@st.composite
def workloads(draw) -> WorkloadSpec:
    kind = draw(st.sampled_from(["poisson", "gamma", "constant", "bursts", "inf", "trace", "hash-trace"]))
    n = draw(st.integers(1, 20))
    client_request_s, client_token_s = draw(st.sampled_from(CLIENTS))
    client = {"client_request_s": client_request_s, "client_token_s": client_token_s}
    if kind in ("trace", "hash-trace"):
        path = _trace(draw(st.integers(0, 5)), n, kind == "hash-trace", draw(st.booleans()))
        return WorkloadSpec(arrival="trace", trace_path=path, hash_block_size=16,
                            max_concurrency=draw(st.sampled_from([0, 0, 1, 3])), **client)
    arrival = "poisson" if kind == "inf" else kind
    rate = math.inf if kind == "inf" else draw(st.sampled_from([2.0, 20.0, 200.0]))
    turns = draw(st.sampled_from([1, 1, 2, 3]))
    prefix = draw(st.sampled_from([0, 0, 16, 40]))
    return WorkloadSpec(
        arrival=arrival, request_rate=rate, num_prompts=n,
        burstiness=draw(st.sampled_from([0.3, 1.0, 4.0])) if kind == "gamma" else 1.0,
        burst_size=draw(st.sampled_from([2, 5])),
        input=LENGTHS[draw(st.sampled_from(sorted(LENGTHS)))](draw(st.sampled_from([3, 24, 90]))),
        output=LENGTHS[draw(st.sampled_from(sorted(LENGTHS)))](draw(st.sampled_from([1, 6, 30]))),
        max_concurrency=draw(st.sampled_from([0, 0, 1, 2, 5])),
        turns=turns, think_time=draw(st.sampled_from([0.0, 0.01, 0.3])) if turns > 1 else 0.0,
        prefix_len=prefix, num_prefixes=draw(st.sampled_from([1, 3])) if prefix else 1, **client)


@st.composite
def scenarios(draw) -> tuple[Scenario, bool]:
    """A scenario and whether the API server fails over-long requests."""
    batching = draw(st.sampled_from(["continuous"] * 5 + ["static", "dynamic", "sequential"]))
    chunked = draw(st.booleans())
    max_model_len = draw(st.sampled_from([120, 400, 2048]))
    max_num_seqs = draw(st.sampled_from([1, 3, 8, 64]))
    low = max(max_num_seqs, 1 if chunked else max_model_len)
    engine = {
        "batching": batching, "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": draw(st.sampled_from([max(low, 16), max(low, 64), max(low, 512), max(low, 4096)])),
        "enable_chunked_prefill": chunked, "max_model_len": max_model_len,
        "long_prefill_token_threshold": draw(st.sampled_from([0, 0, 16])),
        "scheduling_policy": draw(st.sampled_from(["fcfs", "priority"])),
        "watermark": draw(st.sampled_from([0.0, 0.0, 0.02])),
        "scheduler_reserve_full_isl": draw(st.booleans()),
        "enable_prefix_caching": draw(st.booleans()),
        "async_scheduling": draw(st.booleans()),
        "api_server_count": draw(st.sampled_from([1, 1, 2, 3])),
        "max_batch_size": draw(st.sampled_from([1, 4, 16])),
        "max_queue_delay": draw(st.sampled_from([0.0, 0.005, 0.05])),
    }
    block_size = draw(st.sampled_from([1, 4, 16]))
    # The lessons' dense model, or a mixture of experts: gpt-oss's sliding-window layers hold their
    # own blocks (a request's at most its window's), Qwen3-30B-A3B reads experts by tokens.
    model = draw(st.sampled_from(["llama-3.1-8b"] * 4 + ["gpt-oss-20b", "qwen3-30b-a3b"]))
    # A cache of a few requests' worth preempts often; None is the profile's (large) cache.
    blocks = draw(st.sampled_from([None, None, "tight", "small"]))
    if blocks is not None:
        layout = Scenario(model=model, block_size=block_size).deployment().kv_layout
        per_seq = blocks_for(max_model_len, block_size, layout.window_groups, layout.window_blocks) + 1
        blocks = per_seq + (1 if blocks == "tight" else 4 * per_seq)
    spec = draw(st.sampled_from([None] * 5 + SPECULATIVE)) if batching == "continuous" else None
    scenario = Scenario(model=model, engine=engine, workload=draw(workloads()), block_size=block_size,
                        num_gpu_blocks_override=blocks, seed=draw(st.integers(0, 1000)), speculative_config=spec,
                        profiles_path=_frontend_profile(draw(st.sampled_from(sorted(FRONTENDS)))))
    return scenario, draw(st.booleans())


# Speculative decoding (one iteration at a time: the fast path is the stepped one, cut anywhere).
SPECULATIVE = [
    '{"method": "ngram", "num_speculative_tokens": 2}',
    '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}',
    '{"method": "eagle", "model": "e", "num_speculative_tokens": 4, "rejection_sample_method": "synthetic", '
    '"synthetic_acceptance_rates": [0.9, 0.6, 0.3, 0.1]}',
    '{"method": "draft_model", "model": "llama-3.2-1b", "num_speculative_tokens": 2, '
    '"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}',
]


# Dials that apply from the next iteration (the others restart the run or redraw arrivals).
DIALS = [("engine.max_num_seqs", 1), ("engine.max_num_seqs", 5), ("engine.max_num_seqs", 256),
         ("engine.max_num_batched_tokens", 8192), ("engine.long_prefill_token_threshold", 0),
         ("engine.long_prefill_token_threshold", 8), ("engine.scheduling_policy", "priority"),
         ("engine.scheduling_policy", "fcfs"), ("engine.watermark", 0.05), ("engine.max_batch_size", 2),
         ("engine.max_queue_delay", 0.02), ("engine.enable_chunked_prefill", True),
         ("engine.scheduler_reserve_full_isl", True)]


def _set_dial(engine: Engine, dial: tuple[str, object]) -> str:
    try:
        engine.set_dial(*dial)
    except ConfigError as exc:
        return str(exc)
    return "ok"


def _same(a, b) -> bool:
    """Equal, NaN included (a summary of no request holds NaNs)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def outcome(engine: Engine) -> dict:
    """Everything a run reports: each request's record (every field), the summary, the pools',
    the clock, the iteration count, the last iteration's report."""
    summary = engine.summary()
    return {
        "records": [dataclasses.astuple(r) for r in engine.metrics.records],
        "summary": summary.metrics,
        "pools": summary.pools,
        "iterations": engine.iteration,
        "time": engine.time,
        "done": engine.done,
        "failed": engine.metrics.failed,
        "preemptions": engine.metrics.num_preemptions,
        "last": None if engine.last is None else dataclasses.asdict(engine.last),
    }


def assert_agree(a: dict, b: dict, what: str) -> None:
    for key in a:
        if key == "records":
            assert len(a[key]) == len(b[key]), f"{what}: {len(a[key])} records against {len(b[key])}"
            for x, y in zip(a[key], b[key]):
                assert _same(x, y), f"{what}: record {x} against {y}"
        else:
            assert _same(a[key], b[key]), f"{what}: {key} differs: {a[key]!r} against {b[key]!r}"


def servable(scenario: Scenario, api_server: bool, run) -> dict | None:
    """`run(engine)`'s outcome, or None when the engine refuses the scenario or (without the
    API server's check) meets a request it cannot serve."""
    try:
        return run(Engine(scenario, api_server=api_server))
    except (ConfigError, RequestRejected):
        return None


def fast(engine: Engine, dials: list[tuple[int, tuple]]) -> tuple[dict, list[str]]:
    said = []
    for at, dial in dials:
        before = engine.iteration
        engine.run(max_iterations=at - before)
        assert engine.iteration <= max(at, before), f"the fast path ran past iteration {at}"
        said.append(_set_dial(engine, dial))
    engine.run()
    return outcome(engine), said


def stepwise(engine: Engine, dials: list[tuple[int, tuple]], reports: list | None = None) -> tuple[dict, list[str]]:
    """`engine` run step by step (`reports`: each iteration's report appended to it)."""
    said = []
    pending = list(dials)
    while True:
        while pending and engine.iteration >= pending[0][0]:
            said.append(_set_dial(engine, pending.pop(0)[1]))
        report = engine.step()
        if report is None:
            break
        if reports is not None:
            reports.append(report)
    for _, dial in pending:  # the run ended before: the fast path sets them at its end too
        said.append(_set_dial(engine, dial))
    return outcome(engine), said


def sliced(engine: Engine, dials: list[tuple[int, tuple]], cuts: list[tuple[str, float]]) -> tuple[dict, list[str]]:
    """The run cut at random: `advance_until` a random time ahead, single steps and iteration
    limits, never past the iteration where a dial changes."""
    said = []
    pending = list(dials)
    cuts = list(cuts)
    while True:
        while pending and engine.iteration >= pending[0][0]:
            said.append(_set_dial(engine, pending.pop(0)[1]))
        left = pending[0][0] - engine.iteration if pending else None
        if cuts:
            kind, amount = cuts.pop(0)
            if kind == "time":
                engine.advance_until(engine.time + amount, left)
            elif kind == "iterations":
                engine.run(max_iterations=max(1, int(amount * 40)) if left is None else min(left, max(1, int(amount * 40))))
            elif left is None or left > 0:
                engine.step()
            continue
        if pending:
            before = engine.iteration
            engine.run(max_iterations=left)
            if engine.iteration == before:  # the run is over
                for _, dial in pending:
                    said.append(_set_dial(engine, dial))
                pending = []
            continue
        engine.run()
        return outcome(engine), said


@settings(max_examples=examples(150))
@given(scenarios(), st.lists(st.tuples(st.integers(1, 200), st.sampled_from(DIALS)), max_size=3),
       st.lists(st.tuples(st.sampled_from(["time", "time", "iterations", "step"]),
                          st.floats(0.0005, 0.5)), max_size=8))
# Speculative decoding every run (async, a small cache that preempts, seats cut mid-run).
@example((Scenario(engine={"max_num_seqs": 8, "max_num_batched_tokens": 64, "max_model_len": 400,
                           "async_scheduling": True},
                   workload=WorkloadSpec(request_rate=200.0, num_prompts=12, input=LengthSpec("uniform", 90, 1, 180),
                                         output=LengthSpec("uniform", 30, 1, 60)),
                   block_size=4, num_gpu_blocks_override=3 * 101, seed=7, speculative_config=SPECULATIVE[1]), False),
         [(20, ("engine.max_num_seqs", 1))], [("time", 0.01), ("step", 0.1), ("iterations", 0.2)])
# A client with work of its own under Poisson arrivals: decode stretches stop where its requests,
# sent and built, reach the engine (sim.frontend's horizon), synchronous and async.
@example((Scenario(workload=WorkloadSpec(request_rate=20.0, num_prompts=20, input=LengthSpec("fixed", 24),
                                         output=LengthSpec("fixed", 30), client_request_s=0.002,
                                         client_token_s=3e-4)), False), [], [])
@example((Scenario(engine={"async_scheduling": True},
                   workload=WorkloadSpec(request_rate=20.0, num_prompts=20, input=LengthSpec("fixed", 24),
                                         output=LengthSpec("fixed", 30), client_request_s=0.002,
                                         client_token_s=3e-4)), False), [], [])
def test_fast_step_by_step_and_sliced_runs_agree(drawn, dials, cuts):
    scenario, api_server = drawn
    dials = sorted(dials, key=lambda d: d[0])
    first = servable(scenario, api_server, lambda engine: fast(engine, dials))
    assume(first is not None)
    a, said_a = first
    b, said_b = stepwise(Engine(scenario, api_server=api_server), dials)
    c, said_c = sliced(Engine(scenario, api_server=api_server), dials, cuts)
    assert said_a == said_b == said_c
    assert_agree(a, b, "fast against step by step")
    assert_agree(a, c, "fast against sliced")


@st.composite
def async_decoding(draw) -> Scenario:
    """Async scheduling with long decodes (the fast path's calls in bulk), a cache that may run
    short, and a queue the seats keep waiting."""
    max_model_len = draw(st.sampled_from([400, 2048]))
    block_size = draw(st.sampled_from([1, 4, 16]))
    blocks = draw(st.sampled_from([None, None, "small"]))
    if blocks is not None:
        blocks = 3 * (-(-max_model_len // block_size) + 1)
    rate = draw(st.sampled_from([math.inf, 30.0, 300.0]))
    workload = WorkloadSpec(
        request_rate=rate, num_prompts=draw(st.integers(2, 40)),
        input=LENGTHS[draw(st.sampled_from(["short", "uniform"]))](draw(st.sampled_from([8, 60, 200]))),
        output=LENGTHS[draw(st.sampled_from(sorted(LENGTHS)))](draw(st.sampled_from([20, 60, 120]))),
        max_concurrency=draw(st.sampled_from([0, 0, 3])),
        turns=draw(st.sampled_from([1, 1, 2])), think_time=draw(st.sampled_from([0.0, 0.05])),
        **dict(zip(("client_request_s", "client_token_s"), draw(st.sampled_from(CLIENTS)))))
    engine = {"async_scheduling": True, "max_num_seqs": draw(st.sampled_from([2, 4, 8, 64])),
              "max_num_batched_tokens": draw(st.sampled_from([64, 512, 8192])), "max_model_len": max_model_len,
              "enable_prefix_caching": draw(st.booleans()),
              "scheduling_policy": draw(st.sampled_from(["fcfs", "priority"])),
              "api_server_count": draw(st.sampled_from([1, 1, 2]))}
    return Scenario(engine=engine, workload=workload, block_size=block_size, num_gpu_blocks_override=blocks,
                    seed=draw(st.integers(0, 1000)),
                    profiles_path=_frontend_profile(draw(st.sampled_from(sorted(FRONTENDS)))))


@settings(max_examples=examples(30))
@given(async_decoding(), st.lists(st.tuples(st.integers(1, 600), st.sampled_from(DIALS)), max_size=3),
       st.lists(st.tuples(st.sampled_from(["time", "iterations", "step"]), st.floats(0.0005, 0.5)), max_size=8))
def test_async_calls_in_bulk_agree_with_dials_moved_mid_run(scenario, dials, cuts):
    """Async scheduling's fast path runs engine calls in bulk; every call leaves a batch in flight,
    so a dial moved between two calls applies to the same batch on every path."""
    dials = sorted(dials, key=lambda d: d[0])
    first = servable(scenario, False, lambda engine: fast(engine, dials))
    assume(first is not None)
    a, said_a = first
    b, said_b = stepwise(Engine(scenario), dials)
    c, said_c = sliced(Engine(scenario), dials, cuts)
    assert said_a == said_b == said_c
    assert_agree(a, b, "fast against step by step")
    assert_agree(a, c, "fast against sliced")


@settings(max_examples=examples(30))
@given(scenarios(), st.sampled_from([2, 5, 40]))
def test_stretches_timed_with_numpy_agree(drawn, numpy_from):
    """Long decode stretches are timed with numpy arrays; force that on short ones too."""
    scenario, api_server = drawn
    saved = continuous.NUMPY_STRETCH
    continuous.NUMPY_STRETCH = numpy_from
    try:
        first = servable(scenario, api_server, lambda engine: fast(engine, []))
    finally:
        continuous.NUMPY_STRETCH = saved
    assume(first is not None)
    b, _ = stepwise(Engine(scenario, api_server=api_server), [])
    a = first[0]
    assert_agree(a, b, "numpy-timed stretches against step by step")


@pytest.mark.parametrize("api_server", [False, True])
def test_first_decode_calls_run_alone_report_as_one_step(api_server):
    """Async: a request's first decode call run in bulk on its own (an iteration limit of one,
    as the driver asks) reports what step() reports for it, iteration by iteration."""
    scenario = Scenario(engine={"async_scheduling": True},
                        workload=WorkloadSpec(request_rate=40.0, num_prompts=8, input=LengthSpec("fixed", 24),
                                              output=LengthSpec("fixed", 30)))
    fast, slow = Engine(scenario, api_server=api_server), Engine(scenario, api_server=api_server)
    firsts = 0
    while (report := slow.step()) is not None:
        assert fast.advance_until(math.inf, max_iterations=1) == 1
        assert fast.last == report
        firsts += len(report.first_tokens)
    assert firsts == 8


def test_the_issue_table_agrees():
    """Issue 20's table: eight requests in flight, rate inf (the fast path gave TTFT p50 647 ms,
    step by step 14.9 ms)."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=math.inf, num_prompts=60, max_concurrency=8,
                                              input=LengthSpec("uniform", 512, 256, 768),
                                              output=LengthSpec("uniform", 256, 128, 384)), seed=0)
    a, _ = fast(Engine(scenario), [])
    b, _ = stepwise(Engine(scenario), [])
    assert_agree(a, b, "fast against step by step")
    assert a["summary"]["median_ttft_ms"] < 40


def test_the_comparison_notices_a_difference():
    """The net can fail: one request's length differs on one side only."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=20.0, num_prompts=20), seed=3)
    one, other = Engine(scenario), Engine(scenario)
    one.submit(RequestSpec("odd", 0.5, 100, 10))
    other.submit(RequestSpec("odd", 0.5, 100, 11))
    with pytest.raises(AssertionError):
        assert_agree(fast(one, [])[0], stepwise(other, [])[0], "")


# -- the live engine's lazy queue against a headless engine's eager one

def live_state(engine: Engine) -> dict:
    """What a user of the live engine can read, the queue's order and contents included."""
    snap = dataclasses.asdict(engine.snapshot())
    queue = [(r.request_id, r.arrival_time, r.prompt_len, r.output_len, r.priority, r.num_computed_tokens)
             for r in engine.scheduler.waiting]
    running = [r.request_id for r in engine.scheduler.running]
    state = outcome(engine)
    state.update(snapshot=snap, queue=queue, running=running, free=engine.pool.free,
                 holdings=engine.pool.holdings(), rejected=engine.metrics.rejected)
    return state


def endless(scenario: Scenario) -> Scenario:
    """`scenario` with an endless workload (its traffic, up to 60 req/s) that a live engine holds
    in its lazy queue, every request servable: a live engine whose every arrival is refused never
    runs an iteration, and step() would wait for one forever."""
    workload = dataclasses.replace(scenario.workload, num_prompts=0, max_concurrency=0, turns=1,
                                   arrival="poisson" if scenario.workload.arrival == "trace"
                                   else scenario.workload.arrival,
                                   request_rate=min(scenario.workload.request_rate, 60.0))
    blocks = scenario.num_gpu_blocks_override
    if blocks is not None:
        blocks = max(blocks, -(-2048 // scenario.block_size) + 2)
    return dataclasses.replace(scenario.with_engine(max_model_len=2048), workload=workload,
                               num_gpu_blocks_override=blocks)


LIVE_DIALS = DIALS + [("workload.request_rate", 7.0), ("workload.request_rate", 90.0)]


@settings(max_examples=examples(30))
@given(scenarios(), st.lists(st.tuples(st.sampled_from(["time", "iterations", "step", "dial", "submit"]),
                                       st.integers(1, 300)), min_size=1, max_size=6))
def test_the_lazy_queue_shows_what_the_eager_queue_holds(drawn, slices):
    """The live engine holds an endless workload's waiting requests as runs of its generator's
    stream, drawn again at the head of the queue; an engine made headless (with the same series
    sampling) holds them as Requests. Both show the same, after every slice, dial change and
    submitted request."""
    scenario = endless(drawn[0])
    try:
        lazy = Engine(scenario, live=True, keep_records=True)
        eager = Engine(scenario, live=False, keep_records=True, series_interval=0.5)
    except (ConfigError, RequestRejected):
        assume(False)
    assert type(lazy.scheduler.waiting).__name__.startswith("Lazy")  # the compact form is the one tested
    eager.live = True  # refusals become notices, as live
    for kind, amount in slices:
        for engine in (lazy, eager):
            if kind == "iterations":
                engine.run(until_time=engine.time + amount / 100.0, max_iterations=amount)
            elif kind == "time":
                engine.advance_until(engine.time + amount / 200.0, 2000)
            elif kind == "dial":
                _set_dial(engine, LIVE_DIALS[amount % len(LIVE_DIALS)])
            elif kind == "submit":
                engine.submit(RequestSpec(f"extra-{amount}-{engine.iteration}", engine.time, 1 + amount % 97,
                                          1 + amount % 13, priority=amount % 3))
            else:
                engine.step()
        assert_agree(live_state(lazy), live_state(eager), "lazy queue against eager queue")


@pytest.mark.parametrize("deployment", [
    {"tensor_parallel_size": 2}, {"kv_cache_dtype": "fp8", "gpu": "a100-80gb"},
    {"model": "llama-3.1-70b", "tensor_parallel_size": 4}, {"block_size": 32, "gpu": "l40s"},
])
def test_other_deployments_agree(deployment):
    """All-reduce terms, other GPUs, dtypes and block sizes: the fast path is step by step."""
    scenario = Scenario(workload=WorkloadSpec(request_rate=15.0, num_prompts=60, max_concurrency=6,
                                              input=LengthSpec("uniform", 700, 1, 3000),
                                              output=LengthSpec("uniform", 60, 1, 120)), seed=2, **deployment)
    assert_agree(fast(Engine(scenario), [])[0], stepwise(Engine(scenario), [])[0], "fast against step by step")


def test_an_encoder_under_dynamic_batching_agrees():
    scenario = Scenario(model="bge-large-embedder",
                        engine={"batching": "dynamic", "max_batch_size": 32, "max_queue_delay": 0.005},
                        workload=WorkloadSpec(request_rate=300.0, num_prompts=200, input=LengthSpec(mean=256),
                                              output=LengthSpec(mean=1)), seed=4)
    a, _ = fast(Engine(scenario), [])
    b, _ = stepwise(Engine(scenario), [])
    c, _ = sliced(Engine(scenario), [], [("time", 0.05), ("step", 0.0), ("iterations", 0.3), ("time", 0.2)])
    assert_agree(a, b, "fast against step by step")
    assert_agree(a, c, "fast against sliced")


def explicit_async(run):
    """`run()` with async scheduling's requests all held explicitly, one by one (the form the
    vLLM async traces check, see tests/unit/test_trace_cases.py)."""
    saved = continuous.COMPACT_ASYNC
    continuous.COMPACT_ASYNC = False
    try:
        return run()
    finally:
        continuous.COMPACT_ASYNC = saved


# Found by the dev profile: a conversation's decoder left the compact form with its token in
# flight and finished in the same batch as a later-admitted request's only token; the compact
# form listed the two out of admission order (the explicit form's, and vLLM's running order).
TIED_FINISH = Scenario(
    engine={"batching": "continuous", "max_num_seqs": 8, "max_num_batched_tokens": 16,
            "enable_chunked_prefill": True, "max_model_len": 120, "long_prefill_token_threshold": 0,
            "enable_prefix_caching": False},
    workload=WorkloadSpec(arrival="bursts", request_rate=200.0, num_prompts=8, burst_size=2, turns=3,
                          input=LengthSpec(dist="mixed", mean=3, long_len=18, long_share=0.15),
                          output=LengthSpec(dist="mixed", mean=1, long_len=6, long_share=0.15)),
    block_size=1, seed=0)


@settings(max_examples=examples(75))
@given(scenarios(), st.lists(st.tuples(st.integers(1, 200), st.sampled_from(DIALS)), max_size=3))
@example((TIED_FINISH, False), [])
def test_compact_async_decoders_agree_with_explicit_requests(drawn, dials):
    """Under async scheduling decoders are held compactly with their token in flight (a new
    request from when its first decode is scheduled); step by step, that gives what holding every
    request explicitly gives (records, summary, every iteration's report), dial changes included."""
    scenario, api_server = drawn
    scenario = scenario.with_engine(async_scheduling=True)
    dials = sorted(dials, key=lambda d: d[0])
    reports, explicit_reports = [], []
    first = servable(scenario, api_server, lambda engine: stepwise(engine, dials, reports))
    assume(first is not None)
    b = explicit_async(lambda: stepwise(Engine(scenario, api_server=api_server), dials, explicit_reports))
    assert first[1] == b[1]
    assert_agree(first[0], b[0], "compact against explicit")
    assert len(reports) == len(explicit_reports)
    for compact, explicit in zip(reports, explicit_reports):
        # (The rows' order aside, and the emitted's that follows it: the compact form may list a
        # decoder that finished with the iteration after rows the explicit form lists it before.)
        if compact != explicit:
            compact, explicit = _rows_sorted(compact), _rows_sorted(explicit)
            assert compact == explicit, f"iteration {explicit.index}: {compact} against {explicit}"


def _rows_sorted(report):
    return dataclasses.replace(report, scheduled=tuple(sorted(report.scheduled, key=repr)),
                               emitted=tuple(sorted(report.emitted)))


@settings(max_examples=examples(30))
@given(async_decoding(), st.lists(st.tuples(st.integers(1, 600), st.sampled_from(DIALS)), max_size=2),
       st.sampled_from([2, 5, 40]))
def test_async_calls_in_bulk_timed_with_numpy_agree(scenario, dials, numpy_from):
    """Long runs of async calls are timed with numpy arrays; force that on short ones too."""
    dials = sorted(dials, key=lambda d: d[0])
    saved = continuous.NUMPY_STRETCH
    continuous.NUMPY_STRETCH = numpy_from
    try:
        first = servable(scenario, False, lambda engine: fast(engine, dials))
    finally:
        continuous.NUMPY_STRETCH = saved
    assume(first is not None)
    assert_agree(first[0], stepwise(Engine(scenario), dials)[0], "numpy-timed calls against step by step")
