"""The same requests at every rate (issue 20): with one seed, every rate and arrival process
sends the same prompts, as `vllm bench serve` samples its dataset before it draws arrival times."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from sim.engine import Engine
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec, generate

TRAFFIC = [("gamma", 4.0), ("gamma", math.inf), ("poisson", 4.0), ("poisson", 30.0), ("constant", 2.0),
           ("bursts", 8.0), ("all-at-once", 1.0)]


def sent(workload: WorkloadSpec, seed: int = 0) -> list[tuple]:
    return [(s.request_id, s.prompt_len, s.output_len, s.pool, s.prompt_segments)
            for s in generate(workload, np.random.default_rng(seed))]


@pytest.mark.parametrize("workload", [
    WorkloadSpec(num_prompts=200, input=LengthSpec("uniform", 512, 256, 768),
                 output=LengthSpec("uniform", 256, 128, 384)),
    WorkloadSpec(num_prompts=200, input=LengthSpec("lognormal", 300, 1, 4000, sigma=1.0),
                 batch_pool_share=0.3, prefix_len=32, num_prefixes=4),
])
def test_every_rate_and_arrival_process_sends_the_same_prompts(workload):
    first = sent(replace(workload, arrival=TRAFFIC[0][0], request_rate=TRAFFIC[0][1]))
    assert len({p for _, p, *_ in first}) > 10  # lengths that vary
    for arrival, rate in TRAFFIC[1:]:
        assert sent(replace(workload, arrival=arrival, request_rate=rate)) == first, (arrival, rate)
    assert sent(replace(workload, request_rate=8.0), seed=1) != first  # the seed still matters


def test_an_engine_serves_the_same_input_tokens_at_rate_4_and_inf():
    totals = []
    for rate in (4.0, math.inf):
        scenario = Scenario(workload=WorkloadSpec(arrival="gamma", request_rate=rate, num_prompts=300,
                                                  input=LengthSpec("uniform", 512, 256, 768)), seed=0)
        records = Engine(scenario).run().records
        totals.append(sum(r.prompt_len for r in records))
    assert totals[0] == totals[1]


def test_an_endless_workload_sends_the_same_prompts_at_every_rate():
    """Chunk by chunk too: the lengths do not follow the arrival draws."""
    heads = []
    for rate in (3.0, 50.0, 400.0):
        scenario = Scenario(workload=WorkloadSpec(request_rate=rate, num_prompts=0,
                                                  input=LengthSpec("uniform", 100, 1, 199), output=LengthSpec(mean=16)), seed=2)
        engine = Engine(scenario, live=True, keep_records=True)
        engine.advance_until(engine.time + 400.0 / min(rate, 50.0) + 30.0)
        heads.append([(r.request_id, r.prompt_len) for r in sorted(
            engine.metrics.records, key=lambda r: int(r.request_id))][:300])
    assert len(heads[0]) >= 300
    assert heads[0] == heads[1][:len(heads[0])] == heads[2][:len(heads[0])]
