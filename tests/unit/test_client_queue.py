"""The client's queue as `vllm bench serve` reports it (issue 20): under --max-concurrency a
request waits at the client for a slot before it is sent; that wait is each record's
`client_queue_time`, the result file's `queue_times`, and the `client_queue_time` and
`e2el_including_client_queue` percentile metrics (vLLM's names, text lines and JSON keys)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.unit.cli_run import run
from sim.engine import Engine
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec

SMALL = ["--num-prompts", "60", "--input-len", "256", "--output-len", "32"]


def records(rate: float, cap: int):
    scenario = Scenario(workload=WorkloadSpec(request_rate=rate, num_prompts=40, max_concurrency=cap,
                                              input=LengthSpec(mean=256), output=LengthSpec(mean=32)), seed=1)
    return list(Engine(scenario).run().records)


def test_a_capped_request_records_its_wait_at_the_client():
    """At rate inf every request is due at 0: its wait is when it was sent."""
    recs = records(math.inf, 4)
    assert all(r.client_queue_time == r.arrival_time for r in recs)
    assert sum(r.client_queue_time > 0 for r in recs) == 36  # all but the first four


def test_no_cap_no_wait():
    assert all(r.client_queue_time == 0.0 for r in records(math.inf, 0))
    assert all(r.client_queue_time == 0.0 for r in records(5.0, 0))


def test_the_result_file_has_queue_times_and_vllms_keys(capsys):
    code, out, err = run(capsys, "sim", *SMALL, "--request-rate", "20", "--max-concurrency", "4", "--json")
    assert code == 0, err
    data = json.loads(out)
    queue = np.array(data["queue_times"])
    assert len(queue) == 60 and queue.max() > 0 and queue.min() >= 0
    for key in ("client_queue_time", "e2el_including_client_queue"):
        for stat in ("mean", "median", "std", "p99"):
            assert f"{stat}_{key}_ms" in data
    assert data["mean_client_queue_time_ms"] == pytest.approx(queue.mean() * 1000)
    assert data["mean_e2el_including_client_queue_ms"] == pytest.approx(
        np.mean(np.array(data["latencies"]) + queue) * 1000)


def test_the_text_block_prints_vllms_client_sections(capsys):
    metrics = "ttft,client_queue_time,e2el_including_client_queue"
    code, out, err = run(capsys, "sim", *SMALL, "--request-rate", "20", "--max-concurrency", "4",
                         "--percentile-metrics", metrics, "--metric-percentiles", "50,99")
    assert code == 0, err
    for line in ("Client-side Queueing", "Mean Client Queue Time (ms):", "P99 Client Queue Time (ms):",
                 "Queue-inclusive End-to-end Latency", "Median E2EL incl. Client Queue (ms):"):
        assert line in out
    # At rate inf vLLM prints no queue-inclusive E2EL; without a cap, neither section.
    code, out, err = run(capsys, "sim", *SMALL, "--request-rate", "inf", "--max-concurrency", "4",
                         "--percentile-metrics", metrics)
    assert "Client-side Queueing" in out and "Queue-inclusive" not in out
    code, out, err = run(capsys, "sim", *SMALL, "--request-rate", "inf", "--percentile-metrics", metrics)
    assert code == 0, err
    assert "Client-side Queueing" not in out


def test_a_wrong_metric_name_is_one_line(capsys):
    code, out, err = run(capsys, "sim", *SMALL, "--percentile-metrics", "ttft,queue")
    assert code == 2 and "client_queue_time" in err and "Traceback" not in err
