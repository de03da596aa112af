"""Replaying a result file without per-request lengths (sim.replay_lengths, issue 24): the outputs'
spread read back from its latency percentiles, so a capped run of varied answers does not replay
in lockstep, and a run of equal lengths is not given a spread it did not have."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from batchtui.cli.measured import load_run
from sim.engine import run_scenario
from sim.replay_lengths import IMPLYING_KEYS, SPREAD_FLOOR, Z99, implied_output_ratio, lognormal_around, output_lengths
from sim.scenario import Scenario
from tests.unit.cli_run import run

# Issue 36's capped case (item 2): 512 in / 128 out, 320 requests, all due at once, 16 in flight.
CAPPED = ("--input-len", "512", "--output-len", "128", "--num-prompts", "320", "--max-concurrency", "16",
          "--request-rate", "inf", "--percentile-metrics", "ttft,tpot,itl,e2el", "--seed", "3")


def _measured(capsys, tmp_path, name, *extra):
    """A `batchtui sim --save-result` file (the keys vllm bench serve writes, no per-request arrays)."""
    code, _, err = run(capsys, "sim", *CAPPED, *extra, "--save-result", "--result-dir", tmp_path,
                       "--result-filename", f"{name}.json")
    assert code == 0, err
    return tmp_path / f"{name}.json"


def _replay(path, tmp_path):
    measured = load_run(str(path), Scenario(), {}, str(tmp_path), 0)
    return measured, run_scenario(measured.scenario, keep_requests=False).metrics


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    """A capped run whose answers vary (lognormal, median 128, shape 0.6), its file, and its replay."""
    from batchtui.cli import main

    folder = tmp_path_factory.mktemp("varied")
    code = main(["sim", *CAPPED, "--output-dist", "lognormal", "--output-sigma", "0.6", "--save-result",
                 "--result-dir", str(folder), "--result-filename", "varied.json"])
    assert code == 0
    path = folder / "varied.json"
    return path, json.loads(path.read_text()), _replay(path, folder)


def test_a_capped_replay_of_varied_answers_is_not_in_lockstep(varied):
    """Replayed at the mean length, every request of a capped run at rate inf is admitted, prefilled
    and finished with its wave: TTFT p50 equals p99. The spread the file implies staggers them as
    the measured run was."""
    _, data, (measured, replay) = varied
    assert data["median_ttft_ms"] < data["p99_ttft_ms"]
    assert measured.scenario.workload.output.dist == "lognormal"
    assert replay["median_ttft_ms"] < 0.5 * replay["p99_ttft_ms"]
    for key in ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "output_throughput"):
        assert replay[key] == pytest.approx(data[key], rel=0.10), key


def test_the_spread_is_read_back_near_the_one_drawn(varied):
    _, data, (measured, _) = varied
    out = measured.scenario.workload.output
    assert out.sigma == pytest.approx(0.6, rel=0.15)
    mean = out.mean * math.exp(out.sigma ** 2 / 2)
    assert mean == pytest.approx(data["total_output_tokens"] / data["completed"], rel=0.02)


def test_equal_lengths_are_not_given_a_spread(capsys, tmp_path):
    """vLLM's random dataset at its default range ratio 0 sends exact lengths: the percentiles
    imply no spread, the replay keeps the mean, and a capped run replays as it ran. (The waves of
    equal requests are not all alike since the API server spreads each one's arrivals, so the
    implied ratio is not exactly 1: below it, TTFT's own spread taken off E2EL's.)"""
    path = _measured(capsys, tmp_path, "fixed")
    data = json.loads(path.read_text())
    assert implied_output_ratio(data) <= 1 + SPREAD_FLOOR
    measured, replay = _replay(path, tmp_path)
    assert measured.scenario.workload.output.dist == "fixed" and measured.scenario.workload.output.mean == 128
    for key in ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms"):
        assert replay[key] == pytest.approx(data[key], rel=1e-9), key


def test_a_file_without_the_percentiles_replays_at_the_mean(varied, tmp_path):
    """The published points give no E2EL percentiles: the mean, as before (the InferenceBench
    points replay the fixed lengths their harness sends)."""
    path, data, _ = varied
    for key in IMPLYING_KEYS:
        partial = {k: v for k, v in data.items() if k != key}
        assert implied_output_ratio(partial) is None
        assert output_lengths(partial, 153.4).dist == "fixed" and output_lengths(partial, 153.4).mean == 153
    bad = {**data, "median_tpot_ms": 0.0}
    assert implied_output_ratio(bad) is None
    published = load_run("tests/data/published/inferencebench-h100-c16.json", Scenario(), {}, str(tmp_path), 0)
    assert published.scenario.workload.output.dist == "fixed"


@pytest.mark.parametrize(("mean", "ratio"), [(203.0, 6.0), (128.0, 1.5), (40.0, 3.0)])
def test_lognormal_around_keeps_the_mean_and_the_ratio(mean, ratio):
    spec = lognormal_around(mean, ratio)
    assert spec.dist == "lognormal" and spec.sigma == pytest.approx(math.log(ratio) / Z99)
    draws = spec.draw(np.random.default_rng(0), 200_000)
    assert draws.mean() == pytest.approx(mean, rel=0.02)
    assert np.percentile(draws, 99) / np.median(draws) == pytest.approx(ratio, rel=0.05)
    assert draws.min() >= 1


def test_lognormal_around_a_ratio_near_one_is_the_mean():
    assert lognormal_around(128.4, 1.04).dist == "fixed" and lognormal_around(128.4, 1.04).mean == 128
    assert lognormal_around(0.2, 3.0).mean >= 1
