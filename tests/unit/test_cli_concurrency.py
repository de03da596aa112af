"""vllm bench serve's --max-concurrency through the command line: `sim` and `sweep` run a client
that keeps at most N requests in flight, `plan` refuses it with the reason, and `calibrate` and
`compare` replay a capped vLLM run with its cap."""

from __future__ import annotations

import json
import statistics
from itertools import islice
from pathlib import Path

import pytest

from tests.unit.cli_run import run
from batchtui.cli.measured import load_run
from sim.client import build_factors
from sim.scenario import Scenario
from sim.workload import load_trace

DATA = Path(__file__).parent.parent / "data" / "vllm-results"
VLLM_FILE = DATA / "openai-8.0qps-Llama-3.1-8B-Instruct-20250301-101500.json"
DETAILED_FILE = DATA / "openai-detailed.json"
SMALL = ["--num-prompts", "80", "--input-len", "256", "--output-len", "32"]


def sim_json(capsys, *argv):
    code, out, err = run(capsys, "sim", *SMALL, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_sim_keeps_at_most_n_requests_in_flight(capsys):
    capped = sim_json(capsys, "--request-rate", "inf", "--max-concurrency", "4")
    free = sim_json(capsys, "--request-rate", "inf")
    assert capped["max_concurrency"] == 4 and free["max_concurrency"] is None
    assert capped["max_concurrent_requests"] <= 4 < free["max_concurrent_requests"]
    assert capped["max_running"] <= 4
    assert capped["completed"] == free["completed"] == 80
    # TTFT counts from sending: the capped client's requests wait at the client, not the server
    assert capped["median_ttft_ms"] < free["median_ttft_ms"]
    assert capped["request_throughput"] < free["request_throughput"]


def test_sim_text_and_result_file_name_say_the_cap(capsys, tmp_path):
    code, out, err = run(capsys, "sim", *SMALL, "--request-rate", "20", "--max-concurrency", "3",
                         "--save-result", "--result-dir", tmp_path)
    assert code == 0, err
    assert "Maximum request concurrency:" in out
    (saved,) = tmp_path.iterdir()
    assert "-concurrency3-" in saved.name and json.loads(saved.read_text())["max_concurrency"] == 3


def test_sweep_runs_every_rate_with_the_cap(capsys):
    code, out, err = run(capsys, "sweep", *SMALL, "--request-rates", "5,inf", "--max-concurrency", "2",
                         "--jobs", "1", "--json")
    assert code == 0, err
    points = json.loads(out)["points"]
    assert len(points) == 2 and all(p["max_concurrent_requests"] <= 2 for p in points)


@pytest.mark.parametrize("extra", [["--ttft-p99", "100"], ["--offline", "50"]])
def test_plan_refuses_a_capped_client_with_the_reason(capsys, extra):
    code, _, err = run(capsys, "plan", *extra, "--max-concurrency", "8")
    assert code == 2 and "argument --max-concurrency: not allowed with plan" in err


def capped_file(tmp_path, source: Path, cap, **changes) -> Path:
    data = json.loads(source.read_text())
    data["max_concurrency"] = cap
    data.update(changes)
    path = tmp_path / f"capped-{source.name}"
    path.write_text(json.dumps(data))
    return path


def test_a_capped_vllm_run_is_rebuilt_with_its_cap(tmp_path):
    run_ = load_run(str(capped_file(tmp_path, VLLM_FILE, 8)), Scenario(), {}, str(tmp_path), 0)
    assert run_.scenario.workload.max_concurrency == 8
    assert "at most 8 in flight" in run_.describe()
    free = load_run(str(VLLM_FILE), Scenario(), {}, str(tmp_path), 1)
    assert free.scenario.workload.max_concurrency == 0 and "in flight" not in free.describe()


def test_a_detailed_capped_run_at_rate_inf_queues_everything_at_once_in_the_order_sent(tmp_path):
    path = capped_file(tmp_path, DETAILED_FILE, 2, request_rate="inf")
    run_ = load_run(str(path), Scenario(), {}, str(tmp_path), 0)
    w = run_.scenario.workload
    assert w.max_concurrency == 2
    specs = load_trace(w.trace_path)
    assert [(s.arrival_time, s.prompt_len) for s in specs] == [(0.0, 512), (0.0, 600), (0.0, 480)]
    paced = load_run(str(capped_file(tmp_path, DETAILED_FILE, 2)), Scenario(), {}, str(tmp_path), 1)
    assert [s.arrival_time for s in load_trace(paced.scenario.workload.trace_path)] == pytest.approx([0, 0.35, 1.1])


def test_compare_simulates_a_capped_run_with_the_cap(capsys, tmp_path):
    path = capped_file(tmp_path, VLLM_FILE, 4, request_rate="inf")
    code, out, err = run(capsys, "compare", path, "--gpu", "h100-sxm", "--json", "--jobs", "1")
    assert code == 0, err
    capped = json.loads(out)["runs"][0]["simulated"]
    code, out, err = run(capsys, "compare", capped_file(tmp_path, VLLM_FILE, None, request_rate="inf"),
                         "--gpu", "h100-sxm", "--json", "--jobs", "1")
    free = json.loads(out)["runs"][0]["simulated"]
    # four in flight: shorter waits for the first token, fewer requests a second
    assert capped["median_ttft_ms"] < free["median_ttft_ms"]
    assert capped["request_throughput"] < free["request_throughput"]


def test_a_client_with_work_of_its_own_from_the_flags_and_from_a_files_metadata(capsys, tmp_path):
    """--client-request-ms and --client-token-ms put a client of threads in front (sim.client): one
    request at a time, its TTFT grows by the client's work on it (2.5 ms on average, each build's
    own drawn around it: sim/client.py's BUILD_SPREAD) and on its first token. A result
    file states its client with `--metadata client-request-ms=... client-token-ms=...` entries,
    which `compare` replays (the published InferenceBench runs, whose client is LiteLLM)."""
    free = sim_json(capsys, "--request-rate", "inf", "--max-concurrency", "1")
    busy = sim_json(capsys, "--request-rate", "inf", "--max-concurrency", "1",
                    "--client-request-ms", "2.5", "--client-token-ms", "0.4")
    builds = list(islice(build_factors(0), busy["completed"]))  # (the default seed's draws)
    assert busy["median_ttft_ms"] - free["median_ttft_ms"] == pytest.approx(2.5 * statistics.median(builds) + 0.4,
                                                                             rel=1e-3)
    code, _, err = run(capsys, "sim", *SMALL, "--client-token-ms", "-1")
    assert code == 2 and "--client-token-ms: expected a number >= 0, got '-1'" in err
    published = Path(__file__).parent.parent / "data" / "published" / "inferencebench-h100-c4.json"
    w = load_run(str(published), Scenario(), {}, str(tmp_path), 0).scenario.workload
    # (0.57 ms a chunk: benchmarks/client_costs.py's median at 16 and 64 threads, the files' source since the
    # client became threads taking turns; LiteLLM's sources gave 0.4)
    assert (w.client_request_s, w.client_token_s) == (0.0025, 0.00057)
    assert w.max_concurrency == 4 and w.input.mean == 47 and w.output.mean == 128


def test_a_simulated_file_with_a_client_of_its_own_replays_with_that_client(capsys, tmp_path):
    """`sim --save-result` writes the client's costs as the metadata entries `compare` reads, so a
    run with a client of threads in front replays to itself (without them the replay's client is
    free: its TTFT p50 came out +133 % off on 320 requests at 16 in flight)."""
    path = tmp_path / "client.json"
    code, _, err = run(capsys, "sim", *SMALL, "--request-rate", "inf", "--max-concurrency", "4",
                       "--client-request-ms", "2.5", "--client-token-ms", "0.57", "--save-detailed",
                       "--save-result", "--result-filename", str(path))
    assert code == 0, err
    w = load_run(str(path), Scenario(), {}, str(tmp_path), 0).scenario.workload
    assert (w.client_request_s, w.client_token_s) == (0.0025, 0.00057)
    code, out, err = run(capsys, "compare", str(path), "--json", "--jobs", "1")
    assert code == 0, err
    replay = json.loads(out)["runs"][0]
    assert replay["simulated"]["median_ttft_ms"] == pytest.approx(replay["measured"]["median_ttft_ms"], rel=0.01)
