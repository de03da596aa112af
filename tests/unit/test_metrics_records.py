"""The record table and the recent window: what comes in as rows reads back as the records."""

import dataclasses
import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine import Engine
from sim.metrics import RECENT_ITERATIONS, MetricsCollector, RecordTable, RequestRecord
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec


def _record(i: int, rid: str | None = None, pool: str = "chat", tpot: float | None = 0.01) -> RequestRecord:
    return RequestRecord(request_id=str(i) if rid is None else rid, pool=pool, arrival_time=i * 0.25,
                         prompt_len=100 + i, output_len=1 + i % 7, ttft=0.1 + i * 1e-3, e2e=1.0 + i * 1e-3,
                         tpot=tpot, num_preemptions=i % 3, max_itl=0.02, finish_reason="stop" if i % 2 else "length",
                         num_cached_tokens=i % 5)


def test_rows_read_back_as_the_records_across_batches():
    table = RecordTable()
    records = [_record(i, pool="batch" if i % 4 == 0 else "chat", tpot=None if i % 9 == 0 else 0.01)
               for i in range(10_000)]  # more than one batch of rows
    for rec in records:
        table.append(rec)
    assert len(table) == len(records)
    assert list(table) == records
    assert table[-1] == records[-1] and table[4096] == records[4096]
    assert table[-3:] == records[-3:]
    np.testing.assert_array_equal(table.column("prompt_len"), [r.prompt_len for r in records])
    tpot = table.column("tpot")
    assert np.isnan(tpot[0]) and tpot[1] == 0.01
    codes, names = table.pool_codes()
    assert [names[c] for c in codes[:5]] == ["batch", "chat", "chat", "chat", "batch"]


def test_request_ids_keep_their_text():
    ids = ["0", "7", "007", "-3", "x", "12.5", " 4", "\u0663", "1_0", "9" * 19, "9" * 18]
    table = RecordTable()
    for i, rid in enumerate(ids):
        table.append(_record(i, rid=rid))
    assert [r.request_id for r in table] == ids


def test_a_kept_runs_recent_window_is_the_live_window():
    """A run that keeps its records reads its recent requests off them; one that does not keeps
    them in a window of its own: the views are the same."""
    scenario = Scenario(workload=WorkloadSpec(arrival="poisson", request_rate=40.0, num_prompts=900,
                                              input=LengthSpec("fixed", 512),
                                              output=LengthSpec("uniform", 128, 1, 256), batch_pool_share=0.3),
                        seed=5)
    views = []
    for keep in (True, False):
        engine = Engine(scenario, keep_records=keep, series_interval=0.5)
        engine.run()
        views.append((engine.metrics.view(engine.time), tuple(engine.metrics.series_ttft),
                      tuple(engine.metrics.series_tpot)))
    assert views[0] == views[1]
    assert views[0][0].pools  # two pools: per-pool lines read the window too
    assert views[0][0].completed == 900


def test_a_finish_sink_sees_each_record_once():
    seen = []
    metrics = MetricsCollector(finish_sink=seen.append)
    metrics.on_finish(_record(1))
    metrics.on_finish_row(dataclasses.astuple(_record(2)))
    assert seen == [_record(1), _record(2)]
    assert list(metrics.records) == seen and metrics.completed == 2
    assert metrics.prompt_tokens == 101 + 102
    assert not math.isnan(metrics.summary(1.0)["mean_ttft_ms"])


def test_the_recent_iterations_are_the_last_ones_however_they_were_booked():
    """One iteration at a time or alike ones in bulk (lists or numpy arrays, longer than the
    window or not): the live rates read exactly the last RECENT_ITERATIONS."""
    rng = random.Random(4)
    for trial in range(6):
        metrics = MetricsCollector(keep_records=trial % 2 == 0)
        metrics.on_arrival(0.0)
        every = []
        t = 0.0
        for step in range(600):
            if rng.random() < 0.6:
                tokens, done = rng.randint(0, 5), rng.randint(0, 2)
                metrics.on_iteration(t, t + 0.01, running=3, kv_used=1, binding="none", tokens=tokens,
                                     completions=done)
                t += 0.01
                every.append((t, tokens, done))
            else:
                k = rng.choice([1, 5, 50, 200, 5000])
                gaps = [0.001 * (1 + rng.random()) for _ in range(k)]
                ends = list(itertools.accumulate(gaps, initial=t))[1:]
                if rng.random() < 0.5:
                    metrics.on_decode_iterations(t, np.array(ends), np.array(gaps), 4, 2, "none")
                else:
                    metrics.on_decode_iterations(t, ends, gaps, 4, 2, "none")
                every.extend((end, 4, 0) for end in ends)
                t = ends[-1]
            if step % 97 == 0:
                assert list(metrics._recent_iterations()) == every[-RECENT_ITERATIONS:]
        assert list(metrics._recent_iterations()) == every[-RECENT_ITERATIONS:]


def test_a_batch_of_one_pool_and_plain_ids_reads_back_as_its_records():
    """The usual batch (every id a plain number, one pool, one finish reason, every answer with a
    TPOT) is folded whole; what it reads back is what went in, next to a batch that is not."""
    table = RecordTable()
    plain = [RequestRecord(str(i), "chat", i * 0.5, 512, 256, 0.1, 1.5, 0.005, 0, 0.02, "length", 0)
             for i in range(5000)]
    mixed = [_record(i, rid=f"r{i}" if i % 3 else None, tpot=None if i % 2 else 0.01) for i in range(50)]
    for rec in plain + mixed:
        table.append(rec)
    assert list(table) == plain + mixed
    assert table.column("tpot")[:5000].tolist() == [0.005] * 5000


def test_each_percentile_is_numpys_of_its_column_alone():
    """The summary takes a column's percentiles in one call; each equals numpy's percentile of the
    column taken alone (as vllm bench serve takes them), to the last bit."""
    engine = Engine(Scenario(workload=WorkloadSpec(request_rate=8, num_prompts=151)))
    engine.run()
    summary = engine.metrics.summary(10.0, percentiles=(50, 75, 90, 95, 99, 99.9))
    records = engine.metrics.records
    for name, column in (("ttft", "ttft"), ("tpot", "tpot"), ("e2el", "e2e")):
        values = records.column(column)
        values = values[~np.isnan(values)] * 1000.0
        for q, word in ((50, "50"), (75, "75"), (95, "95"), (99.9, "99.9")):
            assert summary[f"p{word}_{name}_ms"] == float(np.percentile(values, q)), (name, q)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-2**31, 2**31 - 1) | st.none(),
                max_size=40),
       st.lists(st.integers(-2**40, 2**40) | st.booleans(), max_size=40))
def test_packed_columns_are_the_arrays_array_makes(floats, ints):
    """_packed (struct) gives the bytes array(code, values) gives, or raises the error it raises."""
    from array import array

    from sim.metrics import _packed

    for code, values in (("d", tuple(floats)), ("i", tuple(ints))):
        try:
            expected = array(code, values)
        except (TypeError, OverflowError) as error:
            with pytest.raises(type(error)):
                _packed(code, values)
        else:
            got = _packed(code, values)
            assert got.typecode == code and got.tobytes() == expected.tobytes()


_ID_TEXTS = st.integers(0, 2**64).map(str) | st.sampled_from(
    ["0", "00", "007", "-3", "+4", " 4", "4 ", "1_0", "\u0663", "x", "", "12.5", "9" * 19, "9" * 18, "0,", ",0"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ID_TEXTS, min_size=1, max_size=30))
def test_id_numbers_are_the_ids_that_str_writes_back(rids):
    """A batch's ids as numbers, told whole: each is its number exactly where str() of that number
    gives the id back (and it fits the column), else -1, as told one id at a time."""
    from sim.metrics import _id_numbers

    def one(rid):
        try:
            n = int(rid)
        except ValueError:
            return -1
        return n if 0 <= n < 1 << 63 and str(n) == rid else -1

    assert _id_numbers(rids) == [one(rid) for rid in rids]
