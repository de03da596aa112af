"""sim.client: the threads of one Python client taking turns on its lock."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.client import ThreadedClient


def _client(threads, per_turn, longest):
    client = ThreadedClient(per_turn, longest, seed=3)
    for _ in range(threads):
        client.thread()
    return client


def _run(items, per_turn, longest, cuts):
    """Every item read, as (tag, thread, when), with the client run to each of `cuts` in turn and
    each item added once the clock has passed the cut before its time (as the engine adds chunks)."""
    threads = 1 + max(t for t, _, _ in items)
    client = _client(threads, per_turn, longest)
    reads = []
    pending = sorted(((at, k, t, cost) for k, (t, at, cost) in enumerate(items)))
    for cut in sorted(cuts) + [math.inf]:
        while pending and pending[0][0] <= cut:  # (known by the cut: added before it is run)
            at, k, t, cost = pending.pop(0)
            client.add(t, at, cost, ("token", k, False))
        client.run(cut, lambda tag, thread, when: reads.append((tag[1], thread, when)), lambda now: math.inf)
    return reads


items = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 40).map(lambda x: x * 0.5e-3),
                           st.sampled_from([0.0, 0.3e-3, 0.57e-3, 2.5e-3])), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(items, st.integers(1, 3), st.sampled_from([0.0, 0.6, 1.0]),
       st.lists(st.integers(0, 40).map(lambda x: x * 0.5e-3), max_size=6))
def test_a_run_cut_anywhere_reads_as_a_run_in_one_go(items, per_turn, longest, cuts):
    """The engine runs the client to its own clock, iteration by iteration: wherever those calls
    fall, the threads read the same chunks at the same times, each thread's in order, one at a
    time on the one core (a chunk arriving at a decision's instant waits for the next decision)."""
    whole = _run(items, per_turn, longest, [])
    assert _run(items, per_turn, longest, cuts) == whole
    assert len(whole) == len(items)
    ends = [when for _, _, when in whole]
    assert ends == sorted(ends)
    for k, thread, when in whole:
        t, at, cost = items[k]
        assert thread == t and when >= at + cost - 1e-12
    by_thread = {}
    for k, thread, _ in whole:
        by_thread.setdefault(thread, []).append(k)
    for thread, ks in by_thread.items():
        order = sorted(ks, key=lambda k: (items[k][1], k))
        assert ks == order


def test_a_new_first_chunk_waits_for_a_turn_not_the_backlog():
    """Two threads with 10 chunks each queued, then a third's first: first come first served would
    read it last; taking turns of two chunks, the longest waiter first, it is read fifth."""
    client = _client(3, 2, 1.0)
    for k in range(10):
        client.add(0, 0.0, 1e-3, ("token", ("a", k), False))
        client.add(1, 0.0, 1e-3, ("token", ("b", k), False))
    client.add(2, 0.0005, 1e-3, ("token", ("c", 0), False))
    reads = []
    client.run(math.inf, lambda tag, thread, when: reads.append(tag[1]), lambda now: math.inf)
    assert reads[:5] == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0)]
