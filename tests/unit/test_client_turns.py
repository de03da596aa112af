"""The model of a client of Python threads taking turns (benchmarks/client_turns.py), read by
client_costs.py's own analysis: who reads next, how a new request's first chunk is read, and the
CPU it spends."""

from __future__ import annotations

from itertools import islice

import pytest

from benchmarks import client_turns
from benchmarks.client_costs import analyse
from sim.client import build_factors


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name, per_turn, longest in (("turns", 2, client_turns.LONGEST), ("longest", 2, 1.0), ("any", 2, 0.0),
                                    ("fcfs", 0, 1.0)):
        out[name] = analyse(*client_turns.replay(16, 3.0, 2.0, per_turn, longest))
    return out


def test_the_analysis_tells_who_reads_next(runs):
    assert runs["longest"]["handover_rank"] == 0.0
    assert 0.4 < runs["any"]["handover_rank"] < 0.6
    assert runs["turns"]["handover_rank"] == pytest.approx(client_turns.HANDOVER_RANK, abs=0.05)


def test_threads_taking_turns_read_a_first_chunk_before_the_backlog(runs):
    # First come first served reads every chunk written before a new request's first; threads
    # taking turns read it after a turn of the others, and a turn is the chunks measured in a row.
    assert runs["fcfs"]["fifo_share_p50"] == 1.0
    assert runs["turns"]["fifo_share_p50"] < 0.3
    assert runs["turns"]["out_p50"] < runs["fcfs"]["out_p50"]
    assert runs["turns"]["run_mean"] == pytest.approx(2.0, abs=0.2)
    assert runs["fcfs"]["run_mean"] == pytest.approx(1.0, abs=0.05)
    assert runs["fcfs"]["in_p50"] > 10 * client_turns.BUILD_S * 1e3


def test_the_build_goes_on_in_the_turn_that_read_the_last_chunk():
    # No socket read between them: each request reaches the stub its own build after the last
    # chunk of the one before was read (each build drawn around the mean, sim/client.py's BUILD_SPREAD).
    run, stub = client_turns.replay(16, 3.0, 2.0)
    factors = list(islice(build_factors(0), 2000))
    later = [rec for rec in run["records"] if rec["t0"] > 0]  # (the first wave waits for the lock)
    assert len(later) > 50
    for rec in later:
        k = int(rec["tag"][1:]) - 1
        assert stub[rec["tag"]]["read"] - rec["t0"] == pytest.approx(client_turns.BUILD_S * factors[k], abs=1e-12)


def test_sixteen_threads_are_one_busy_core_whoever_reads(runs):
    # 16 streams of 0.57 ms a token take 9.1 ms a round, slower than the stub's 6 ms: TPOT is the
    # client's, whatever the order it reads in.
    for st in runs.values():
        assert 16 * client_turns.TOKEN_S * 1e3 <= st["tpot_p50"] < 16 * client_turns.TOKEN_S * 1e3 * 1.1


def test_one_thread_reads_as_the_stub_writes():
    st = analyse(*client_turns.replay(1, 2.0, 0.5))
    assert st["tpot_p50"] == pytest.approx(6.0, abs=0.05)
    assert st["out_p50"] == pytest.approx(2 * client_turns.TOKEN_S * 1e3)  # (the role chunk and the first)
