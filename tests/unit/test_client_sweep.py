"""InferenceBench's sweep as its harness counts it (benchmarks/client_sweep.py): the first 3 requests
by number dropped, the first wave counted, percentiles as numpy's linear ones (without LiteLLM
it measures nothing: test_client_costs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import client_sweep


def test_percentiles_are_numpys_linear_ones():
    values = [5.0, 1.0, 9.5, 3.25, 7.0, 2.0, 8.0]
    for q in (0, 1, 50, 90, 99, 100):
        assert client_sweep._pct(values, q) == pytest.approx(float(np.percentile(values, q, method="linear")))


def test_the_first_three_by_number_are_dropped_and_the_first_wave_is_counted():
    # Four threads: requests 0-3 sent at once (the first wave), each later one when one has ended.
    records, stub = [], {}
    for idx in range(10):
        t0 = 0.0 if idx < 4 else 1.0 + 0.1 * idx
        records.append({"idx": idx, "tag": f"r{idx}", "t0": t0, "first": t0 + 0.020 + 0.001 * idx,
                        "end": t0 + 0.9, "cpu_call": 0.004, "cpu": 0.1})
        stub[f"r{idx}"] = {"read": t0 + 0.003, "writes": [t0 + 0.009]}
    st = client_sweep.analyse({"threads": 4, "start": 0.0, "records": records,
                               "gc": [(1.51, 1.56, 2), (2.0, 2.0005, 0)]}, stub)
    assert st["n"] == 7 and st["wave_n"] == 1  # (0, 1 and 2 dropped, as the harness's warm-up; 3 counted)
    added = [(0.020 + 0.001 * idx - 0.006) * 1e3 for idx in range(3, 10)]
    assert st["added_p50"] == pytest.approx(float(np.percentile(added, 50)))
    assert st["added_p99"] == pytest.approx(float(np.percentile(added, 99)))
    assert st["gc2"] == 1 and st["gc_max"] == pytest.approx(50.0)
    assert st["gc_hit"] == 1  # (request 5 waits for its first chunk from 1.5 s to 1.525 s)

