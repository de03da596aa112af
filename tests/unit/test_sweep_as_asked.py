"""No silent changes in `sweep` (issue 20): every point runs the requests asked for (it read as
a run of 10x the requests before: unbounded points were rerun longer), and a sweep whose every
request fails says so."""

from __future__ import annotations

import json

from tests.unit.cli_run import run

SMALL = ["--num-prompts", "150", "--input-len", "128", "--output-len", "64", "--max-num-seqs", "8"]


def test_every_point_runs_the_requests_asked_for(capsys):
    code, out, err = run(capsys, "sweep", *SMALL, "--request-rates", "inf", "--json", "--jobs", "1")
    assert code == 0, err
    saturated = json.loads(out)["saturated_rate"]
    rates = ",".join(f"{saturated * f:.3f}" for f in (0.5, 0.9, 0.97, 1.2))
    code, out, err = run(capsys, "sweep", *SMALL, "--request-rates", rates, "--json", "--jobs", "1")
    assert code == 0, err
    points = json.loads(out)["points"]
    assert [p["completed"] + p["failed"] for p in points] == [150] * 4
    # The same figures `sim` gives at that rate.
    code, out, err = run(capsys, "sim", *SMALL, "--request-rate", points[2]["request_rate"], "--json")
    assert code == 0, err
    assert json.loads(out)["median_ttft_ms"] == points[2]["median_ttft_ms"]


def test_a_sweep_whose_every_request_fails_says_so(capsys):
    code, out, err = run(capsys, "sweep", "--num-prompts", "20", "--input-len", "3000", "--output-len", "64",
                         "--max-model-len", "2048", "--request-rates", "1,2", "--jobs", "1")
    assert code == 2
    assert "every one of the 20 requests failed" in err and "2048" in err
    assert "unbounded" not in out + err and "Traceback" not in err


def test_a_plan_whose_every_request_fails_says_so(capsys):
    """`plan` on requests all longer than --max-model-len stopped on an internal error
    (ValueError: min() arg is an empty sequence, after printing a table of one 'meets' row of 0
    requests), and `plan --offline` answered a job time of 0.0 s at 0 output tok/s, exit 0: both
    now say, as `sweep` does, that every request failed and why."""
    too_long = ["--input-len", "3000", "--output-len", "64", "--max-model-len", "2048", "--jobs", "1"]
    for words in (["--num-prompts", "1000", "--seeds", "1", "--ttft-p99", "500", "--tpot-p99", "50"],
                  ["--offline", "20"]):
        code, out, err = run(capsys, "plan", *words, *too_long)
        assert code == 2, (words, err)
        assert err.startswith("batchtui: error: every one of the") and "2048" in err and err.count("\n") == 1, err
        assert "internal error" not in err and "Job time" not in out
