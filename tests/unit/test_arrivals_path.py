"""What the per-arrival path is made of keeps its contracts: a RequestSpec is a frozen dataclass
built from its fields, and arrivals hand out requests in time order until none is due."""

import dataclasses
import inspect
import math

import numpy as np
import pytest

from sim.arrivals import Arrivals
from sim.workload import LengthSpec, RequestSpec, WorkloadSpec


def test_a_request_spec_takes_its_fields_as_parameters_and_stays_frozen():
    params = inspect.signature(RequestSpec).parameters
    assert [(f.name, f.default) for f in dataclasses.fields(RequestSpec)] == \
        [(name, p.default if p.default is not inspect.Parameter.empty else dataclasses.MISSING)
         for name, p in params.items()]
    spec = RequestSpec("a", 0.5, 512, 256, pool="batch", conversation="a")
    assert (spec.request_id, spec.arrival_time, spec.prompt_len, spec.output_len, spec.priority, spec.pool,
            spec.hash_ids, spec.prompt_segments, spec.turn, spec.conversation) == \
        ("a", 0.5, 512, 256, 0, "batch", (), None, 1, "a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.prompt_len = 1
    later = dataclasses.replace(spec, arrival_time=2.0)
    assert later == RequestSpec("a", 2.0, 512, 256, pool="batch", conversation="a") != spec
    assert hash(later) == hash(RequestSpec("a", 2.0, 512, 256, pool="batch", conversation="a"))


def test_arrivals_come_in_time_order_workload_first_among_equal_times():
    workload = WorkloadSpec(arrival="constant", request_rate=2.0, num_prompts=600,
                            input=LengthSpec("fixed", 16), output=LengthSpec("fixed", 4))
    arrivals = Arrivals(workload, np.random.default_rng(0))
    arrivals.submit(RequestSpec("by-hand", 1.0, 8, 2))  # the workload's second arrives at 1.0 too
    arrivals.submit(RequestSpec("early", 0.25, 8, 2))
    got = []
    for now in (0.0, 0.5, 1.0, 100.0, math.inf, math.inf):
        while (spec := arrivals.pop_due(now)) is not None:
            assert spec.arrival_time <= now
            got.append(spec.request_id)
    assert got[:4] == ["early", "0", "1", "by-hand"]
    assert got[4:] == [str(i) for i in range(2, 600)]
    assert arrivals.exhausted and arrivals.next_at == math.inf and arrivals.pop_due(math.inf) is None


def test_the_client_listens_to_finishes_while_a_cap_or_a_conversation_can_need_them():
    plain = WorkloadSpec(arrival="poisson", request_rate=5.0, num_prompts=0,
                         input=LengthSpec("fixed", 16), output=LengthSpec("fixed", 4))
    assert not Arrivals(plain, np.random.default_rng(0)).listens  # the engine skips on_done
    assert Arrivals(dataclasses.replace(plain, max_concurrency=2), np.random.default_rng(0)).listens
    talks = dataclasses.replace(plain, turns=2)
    arrivals = Arrivals(talks, np.random.default_rng(0))
    assert arrivals.listens
    first = arrivals.pop_due(arrivals.next_at)
    assert first.turn == 1
    # The turns dial drops while the first turn is in flight: its finish must still be heard (it
    # ends the conversation), and then nothing needs the finishes any more.
    arrivals.set_workload(plain, first.arrival_time)
    assert arrivals.listens
    arrivals.on_done(first.request_id, first.arrival_time + 1.0, answered=4)
    arrivals.set_workload(plain, first.arrival_time + 1.0)
    assert not arrivals.listens
