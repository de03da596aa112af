"""A run saved with `--save-detailed` replays to itself: `compare` on the file simulates the same
requests, sent in the same order at the same moments, so every figure agrees.

vLLM lists a detailed result's per-request arrays in the order it sent the requests (its tasks in
the order made, vllm/benchmarks/serve.py), and so does `batchtui sim`; `compare` replays them in
the file's order. At rate inf every request comes due at once and only that order tells them
apart: a file in order of finishing replays a different queue (TTFT p50 -9 %, mean TPOT +26 %
before this was fixed)."""

from __future__ import annotations

import json

import pytest

from tests.unit.cli_run import run

LENGTHS = ["--num-prompts", "200", "--input-len", "512", "--output-len", "128", "--input-dist", "lognormal",
           "--output-dist", "lognormal"]


def saved(capsys, tmp_path, *argv):
    path = tmp_path / "run.json"
    code, _, err = run(capsys, "sim", *LENGTHS, *argv, "--save-detailed", "--save-result", "--result-filename", path)
    assert code == 0, err
    return path


@pytest.mark.parametrize("traffic", [
    ["--request-rate", "inf"],
    ["--request-rate", "inf", "--max-concurrency", "16"],
    ["--request-rate", "12", "--max-concurrency", "8", "--burstiness", "0.5"],  # waits at the client, paced again
], ids=["inf", "inf-capped", "rate-capped"])
def test_compare_of_a_detailed_run_against_itself_agrees_on_every_figure(capsys, tmp_path, traffic):
    path = saved(capsys, tmp_path, *traffic)
    code, out, err = run(capsys, "compare", path, "--json", "--jobs", "1")
    assert code == 0, err
    entry = json.loads(out)["runs"][0]
    shown = [k for k in entry["measured"] if k in entry["simulated"]]
    assert len(shown) >= 11
    for key in shown:
        assert entry["simulated"][key] == pytest.approx(entry["measured"][key], rel=0.01), key


def test_the_arrays_are_in_the_order_the_requests_were_sent(capsys, tmp_path):
    """At rate inf the first request sent is the first the engine schedules, whatever finishes
    first; the arrays start with it and follow the send order (here the workload's lengths as
    drawn), not the order of finishing."""
    path = saved(capsys, tmp_path, "--request-rate", "inf")
    import numpy as np

    from sim.scenario import Scenario
    from sim.workload import LengthSpec, WorkloadSpec, generate

    data = json.loads(path.read_text())
    w = WorkloadSpec(arrival="all-at-once", num_prompts=200, input=LengthSpec(dist="lognormal", mean=512),
                     output=LengthSpec(dist="lognormal", mean=128))
    specs = generate(w, np.random.default_rng(Scenario().seed))
    assert data["input_lens"] == [s.prompt_len for s in specs]
    finish = np.array(data["start_times"]) + np.array(data["latencies"])
    assert not (np.diff(finish) >= 0).all()  # (the order of finishing is another)
