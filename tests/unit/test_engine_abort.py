"""Engine.abort, Engine.sync and submit(arrived=True): the hooks `batchtui serve` drives the engine
with (a client that goes away, reading tokens between iterations, arrivals stamped by the server).
The engines are made as serve makes them, without the simulated API server in front (serve is the
API server)."""

from __future__ import annotations

import math

import pytest

from sim.engine import Engine
from sim.frontend import TRANSIT_S
from sim.scenario import Scenario
from sim.workload import RequestSpec, WorkloadSpec


def _engine(async_scheduling: bool = False, **engine) -> Engine:
    sc = Scenario(workload=WorkloadSpec(arrival="all-at-once", num_prompts=0)).with_engine(
        async_scheduling=async_scheduling, **engine)
    return Engine(sc, live=True, keep_records=False, frontend=False)  # as batchtui serve makes it


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_abort_of_a_decoding_request_frees_its_blocks(async_scheduling):
    e = _engine(async_scheduling)
    e.submit(RequestSpec("a", 0.0, 600, 200))
    e.submit(RequestSpec("b", 0.0, 600, 50))
    for _ in range(20):
        e.advance_until(e.time + 1.0, 1)
    e.sync()
    a = e.requests["a"]
    assert 5 < a.num_output_tokens < 200
    held_before = e.pool.used
    assert e.abort("a")
    assert a.finish_reason == "abort"
    assert e.pool.used < held_before
    assert not e.abort("a")  # once only
    e.advance_until(100.0)
    # b finished normally, a never did: nothing is held, one completion booked.
    assert e.pool.used == 0
    assert e.requests.get("a") is None
    assert e.metrics.view(e.time).completed == 1
    assert e.aborted == 1
    assert a.num_output_tokens < 200


def test_abort_of_a_waiting_request_takes_it_out_of_the_queue():
    e = _engine(max_num_seqs=1)
    e.submit(RequestSpec("a", 0.0, 100, 20))
    e.submit(RequestSpec("b", 0.0, 100, 20))
    e.advance_until(TRANSIT_S + 1e-6, 1)  # (both reach the engine core after their transit)
    assert e.scheduler.num_waiting == 1
    assert e.abort("b")
    assert e.scheduler.num_waiting == 0
    e.advance_until(100.0)
    assert e.metrics.view(e.time).completed == 1
    assert not e.abort("nobody")


def test_sync_brings_compact_decoders_up_to_date():
    e = _engine()
    e.submit(RequestSpec("a", 0.0, 100, 100))
    n = 0
    while n < 30:
        n += e.advance_until(e.time + 1.0, 1)
    e.sync()
    assert e.requests["a"].num_output_tokens == 30  # one token per iteration
    assert e.requests["a"].last_token_time == pytest.approx(e.time)


def test_arrived_keeps_an_arrival_time_the_clock_has_passed():
    e = _engine()
    e.submit(RequestSpec("a", 0.0, 2000, 5))
    e.advance_until(TRANSIT_S + 1e-6, 1)  # one prefill iteration: the clock is at its end
    t = e.time
    assert t > TRANSIT_S + 0.005
    e.submit(RequestSpec("b", t / 2, 100, 5), arrived=True)
    e.submit(RequestSpec("c", t / 2, 100, 5))
    while "b" not in e.requests:  # (they reach the engine core after their transit)
        e.step()
    assert e.requests["b"].arrival_time == t / 2
    assert e.requests["c"].arrival_time == t  # without it: arrives now


def test_release_forgets_finished_requests_only():
    sc = Scenario(workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    e = Engine(sc, live=True, keep_records=False, keep_requests=True, frontend=False)
    e.submit(RequestSpec("a", 0.0, 100, 1))
    e.submit(RequestSpec("b", 0.0, 100, 50))
    e.advance_until(TRANSIT_S + 1e-6, 1)  # a's one token comes with its prefill, after the transit
    assert e.requests["a"].status == "finished"
    e.release("a")
    e.release("b")  # still running: kept
    assert "a" not in e.requests and "b" in e.requests


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_served_request_is_scheduled_when_submitted(async_scheduling):
    """batchtui serve is the API server (its work is real), and its engine adds no transit to the
    engine core (sim.engine's `_frontend_costs` says why): a request submitted at 1 s is scheduled
    at 1 s, as with no API server at all."""
    for servers in (1, 0):
        e = _engine(async_scheduling, api_server_count=servers)
        e.advance_until(1.0)
        e.submit(RequestSpec("a", 1.0, 64, 4), arrived=True)
        assert e.next_event() == math.inf or e.next_event() <= 1.0
        assert e.step().start_time == pytest.approx(1.0, rel=1e-12)


def test_next_event_is_never_behind_the_clock():
    """A request stamped with when it truly came (behind the clock, through the simulated API
    server) is due now: next_event, the pacer's wake time, is the clock, not a time already past,
    and the engine still takes it with its own arrival time."""
    sc = Scenario(workload=WorkloadSpec(arrival="all-at-once", num_prompts=0)).with_engine(
        api_server_count=1)
    e = Engine(sc, live=True, keep_records=True, frontend=True)
    assert e.next_event() == math.inf
    e.submit(RequestSpec("x", 0.0, 600, 50))
    e.advance_until(0.2, 1)
    now = e.time
    assert now > 0
    e.submit(RequestSpec("a", now / 2, 64, 4), arrived=True)
    assert e.next_event() == now
    e.advance_until(100.0)
    assert e.requests["a"].arrival_time == now / 2
    assert e.requests["a"].num_output_tokens == 4
