"""The published measurements (tests/data/published) against the default profile (issue 24):
every counted figure within its kind's tolerance or a known miss with its reason, the goal's median,
and the files themselves (sources, what was measured, what is unknown)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from urllib.parse import urlparse

import pytest

from benchmarks import fidelity
from tests.unit.cli_run import run

FILES = fidelity.published_files()


@pytest.fixture(scope="module")
def table():
    return fidelity.rows()


def _source(url: str) -> str:
    """One independent source per site, or per vLLM pull request or issue (vLLM's CI builds are one)."""
    parsed = urlparse(url)
    if parsed.netloc == "github.com":
        return parsed.path
    return "buildkite" if "buildkite" in parsed.netloc else parsed.netloc


def test_the_set_has_twelve_points_from_five_sources_on_h100_and_a100():
    files = [json.loads(p.read_text(encoding="utf-8")) for p in FILES]
    assert len(FILES) >= 12
    assert len({_source(f["fidelity"]["source"]) for f in files}) >= 5
    assert {"h100-sxm", "a100-40gb"} <= {f["gpu"] for f in files}
    assert {"llama-3.1-8b", "llama-3.1-70b"} <= {f["model"] for f in files}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_file_says_where_it_comes_from_what_it_measured_and_what_is_unknown(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    meta = data["fidelity"]
    assert urlparse(meta["source"]).scheme == "https"
    for key in ("published", "vllm_version", "what", "unknown", "dials"):
        assert isinstance(meta[key], str) and meta[key].strip(), key
    # Whether the defaults were tuned on it, and if so on what.
    assert isinstance(meta["held_out"], bool)
    assert meta["held_out"] or meta["tuned_on"].strip()
    # The dials vLLM ran then are in the file, where `compare` reads them.
    for flag in ("max-num-seqs", "api-server-count", "gpu_memory_utilization"):
        assert isinstance(data[flag], str), flag
    assert meta["measured"] and all(k in fidelity.KINDS for k in meta["measured"])
    for key in meta["measured"]:
        assert isinstance(data[key], (int, float)) and data[key] > 0
    for key in meta.get("set_aside", {}):
        assert key in meta["measured"] and meta["set_aside"][key].strip()
    # A client with work of its own is replayed only from sourced costs.
    if "client-request-ms" in data or "client-token-ms" in data:
        assert "client" in meta and "PR" in meta["client"], "a client's costs need their sources"


def test_every_counted_figure_is_within_its_tolerance_or_a_known_miss(table):
    unexplained = [(r.stem, r.key, f"{r.error:+.1%}") for r in table if r.verdict == "MISS"]
    assert not unexplained, unexplained


def test_a_known_miss_is_still_a_miss(table):
    """An entry of KNOWN_MISSES the model now meets is stale: the manual would list a miss that
    is not one."""
    by_key = {(r.stem, r.key): r for r in table}
    for key in fidelity.KNOWN_MISSES:
        assert key in by_key, f"{key} is not a figure of the set"
        assert not by_key[key].within and not by_key[key].aside, key


def test_the_summary_is_each_kinds_errors_over_the_held_out_runs(table):
    """The table the field reports: per kind, over the counted figures of held-out runs, the median
    absolute and signed errors and the worst; and the same over every run."""
    held = {s.kind: s for s in fidelity.summary(table)}
    every = {s.kind: s for s in fidelity.summary(table, held_out=False)}
    assert set(held) >= {"TTFT p50", "TTFT p99", "TPOT p50", "E2E", "output tok/s"}
    for kind, s in held.items():
        errors = [r.error for r in table if r.kind == kind and not r.aside and r.held_out]
        assert s.count == len(errors)
        assert s.median_abs == statistics.median(abs(e) for e in errors)
        assert s.median_signed == statistics.median(errors)
        assert s.worst == max(abs(e) for e in errors)
        assert every[kind].count >= s.count
    # vLLM PR 18566 is not held out (the 50 us per sequence was first read off it).
    assert every["TTFT p50"].count == held["TTFT p50"].count + 1


def test_the_manual_states_the_table_and_summary_the_benchmark_prints(table):
    """docs/accuracy.md: `python benchmarks/fidelity.py --markdown` prints both."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "accuracy.md").read_text(encoding="utf-8")
    assert "\n" + fidelity.markdown_table(table) + "\n" in page
    assert fidelity.summary_table(table, markdown=True) in page


def test_the_readmes_count_of_far_short_ttfts_is_the_tables(table):
    """README.md's "How far to trust it" says how many held-out median TTFTs come out far short
    and by how much: the table's own count and range (it said 'over 70 %' of five once one of them,
    DeepSeek-R1's, was 69 % short)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    held = [r for r in table if r.kind == "TTFT p50" and r.held_out and not r.aside]
    far = sorted(round(-r.error * 100) for r in held if r.error <= -0.5)
    words = {4: "four", 5: "five", 6: "six", 15: "fifteen", 16: "sixteen"}
    assert (f"{words[len(far)]} of the {words[len(held)]} held-out median TTFTs come out "
            f"{far[0]}-{far[-1]} % short") in " ".join(readme.split())


def test_output_throughput_and_tpot_within_15_percent_median(table):
    counted = [r for r in table if r.kind in fidelity.GOAL_KINDS and not r.aside]
    assert len(counted) >= 6
    assert fidelity.goal_error(table) == statistics.median(abs(r.error) for r in counted)
    assert fidelity.goal_error(table) <= 0.15


def test_a_published_file_compares_like_a_vllm_result(capsys):
    """`batchtui compare` reads a file of the set: only the figures it gives are shown."""
    path = fidelity.PUBLISHED / "musgrave-a100-40gb-c8.json"
    code, out, _ = run(capsys, "compare", path, "--jobs", "1")
    assert code == 0
    assert "Output token throughput (tok/s)" in out and "495.0" in out
    assert "Median TTFT" not in out  # not measured by that source


@pytest.mark.parametrize(("stem", "per_seq", "key", "figure"), [
    # profiles.toml: the synchronous host cost V0 runs imply (PR 18566's ITL was read at 256 seats
    # once; with the 1,024 vLLM 0.9 ran on an H100 it implies no such cost: KNOWN_MISSES)
    ("vllm-pr7117-offline-256-256", 90e-6, "request_throughput", 23.6),
])
def test_the_host_cost_per_sequence_these_synchronous_runs_imply(tmp_path, stem, per_seq, key, figure):
    from batchtui.cli.measured import load_run
    from sim.engine import run_scenario
    from sim.scenario import Scenario

    profile = tmp_path / "host.toml"
    profile.write_text(f"[gpus.h100-sxm]\noverhead_per_seq_s = {per_seq!r}\n", encoding="utf-8")
    measured = load_run(str(fidelity.PUBLISHED / f"{stem}.json"), Scenario(profiles_path=str(profile)), {},
                        str(tmp_path), 0)
    simulated = run_scenario(measured.scenario, keep_requests=False).metrics[key]
    assert simulated == pytest.approx(figure, rel=0.01)


def test_vllms_ci_runs_price_the_v0_engines_host_costs_every_step(tmp_path):
    """vLLM's CI reports ran a V0 build: each file states V0's host costs (0.98 ms an iteration,
    90 us a sequence; sources in its dials) as metadata entries, and the replay adds them to each
    of the latency test's 128 steps (a batch of 8) in place of vLLM 0.33's 0.02 ms and 50 us."""
    from batchtui.cli.exits import UserError
    from batchtui.cli.measured import load_run
    from sim.engine import run_scenario
    from sim.errors import ConfigError
    from sim.scenario import Scenario

    for path in fidelity.PUBLISHED.glob("vllm-perf-*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert (data["overhead-ms"], data["overhead-per-seq-us"]) == ("0.98", "90"), path.name
        assert all(str(n) in data["fidelity"]["dials"] for n in (10933, 11078, 11081)), path.name
    data = json.loads((fidelity.PUBLISHED / "vllm-perf-h100-latency-8b.json").read_text(encoding="utf-8"))
    e2e = {}
    for name, entries in (("v0", {}), ("today", None), ("bad", {"overhead-ms": "-1"})):
        path = tmp_path / f"{name}.json"
        given = {k: v for k, v in data.items() if entries is not None or not k.startswith("overhead-")}
        path.write_text(json.dumps({**given, **(entries or {})}), encoding="utf-8")
        if name == "bad":
            with pytest.raises(UserError, match="overhead-ms = '-1'"):
                load_run(str(path), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
            continue
        measured = load_run(str(path), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
        e2e[name] = run_scenario(measured.scenario, keep_requests=False).metrics["mean_e2el_ms"]
    assert e2e["v0"] - e2e["today"] == pytest.approx(128 * (0.98 + 8 * 0.090 - 0.02 - 8 * 0.050), rel=1e-6)
    # The scenario keeps the costs through its own file (a saved replay replays the same).
    scenario = Scenario(overhead_s=0.98e-3, overhead_per_seq_s=90e-6)
    assert Scenario.from_toml(scenario.to_toml()) == scenario
    with pytest.raises(ConfigError, match="a host cost in seconds >= 0"):
        Scenario.from_dict({"overhead_per_seq_s": -1e-6})
    assert scenario.deployment().overhead_per_seq_s == 90e-6 and Scenario().deployment().overhead_per_seq_s == 50e-6


def test_the_tenstorrent_setups_per_step_excess_is_the_same_on_a_dense_model_fifty_times_smaller(tmp_path):
    """tenstorrent-qwen3-30b-a3b-a100-c1's reason: the same report (tt-inference-server issue 340)
    measured Qwen3-0.6B's TPOT on the same A100 setup at 4.2 ms; replayed like the 30B-A3B run,
    both are over 2 ms a step slower than simulated, about the same excess on 1.2 GB of weights as
    on a mixture of experts. (Over 3 ms, 3.4 and 3.25, before the per-head query and key norms'
    kernels were priced: 3 a layer in that build, 7.5 us each on an A100, 0.63 ms of the 0.6B's 28
    layers and 1.08 ms of the 30B-A3B's 48.)"""
    from batchtui.cli.measured import load_run
    from sim.engine import run_scenario
    from sim.scenario import Scenario

    path = fidelity.PUBLISHED / "tenstorrent-qwen3-30b-a3b-a100-c1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    small = dict(data, model="qwen3-0.6b", median_tpot_ms=4.2, median_ttft_ms=12.4)
    small_path = tmp_path / "qwen3-0.6b.json"
    small_path.write_text(json.dumps(small), encoding="utf-8")
    config = Path(__file__).resolve().parents[1] / "data" / "hf-configs" / "Qwen--Qwen3-0.6B.json"
    excess = {}
    for run_path, base in ((path, Scenario()), (small_path, Scenario(model="qwen3-0.6b", hf_config_path=str(config)))):
        measured = load_run(str(run_path), base, {}, str(tmp_path), 0, ("gpu", "model"))
        simulated = run_scenario(measured.scenario, keep_requests=False).metrics["median_tpot_ms"]
        excess[measured.scenario.model] = measured.metrics["median_tpot_ms"] - simulated
    assert excess["qwen3-0.6b"] == pytest.approx(2.76, abs=0.05)
    assert excess["qwen3-30b-a3b"] == pytest.approx(2.17, abs=0.05)


def test_sharegpt_answers_of_their_own_length_keep_gpustacks_four_clients_out_of_step(tmp_path):
    """GPUStack's gpt-oss-120b runs sent ShareGPT prompts, each with its own answer's length as
    max_tokens (vllm bench serve's ShareGPT dataset): replayed at the mean length the four clients
    start and end together and each prefill shares its step with the other three's (TTFT p50 +66 %
    on the A100); with the answers spread, as the files state, a prefill runs beside decodes, and
    any shape from 0.3 to 1.2 gives the same medians within 2 ms (the files' claim)."""
    from dataclasses import replace

    from batchtui.cli.measured import load_run
    from sim.engine import run_scenario
    from sim.replay_lengths import lognormal_lengths
    from sim.scenario import Scenario

    path = fidelity.PUBLISHED / "gpustack-gpt-oss-120b-a100-tp1-c4.json"
    measured = load_run(str(path), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
    output = measured.scenario.workload.output
    assert output.dist == "lognormal" and output.low == 4
    medians = {}
    for sigma in (0.3, 0.5, 1.2):
        spread = lognormal_lengths(217 * math.exp(-sigma * sigma / 2), sigma, 4)
        scenario = replace(measured.scenario, workload=replace(measured.scenario.workload, output=spread))
        metrics = run_scenario(scenario, keep_requests=False).metrics
        medians[sigma] = (metrics["median_ttft_ms"], metrics["median_tpot_ms"])
    ttfts, tpots = zip(*medians.values())
    assert max(ttfts) - min(ttfts) < 2 and max(tpots) - min(tpots) < 2
    assert abs(medians[0.5][0] / measured.metrics["median_ttft_ms"] - 1) < 0.25
    lockstep = replace(measured.scenario, workload=replace(measured.scenario.workload, output=replace(output, dist="fixed", mean=217)))
    assert run_scenario(lockstep, keep_requests=False).metrics["median_ttft_ms"] > 1.5 * measured.metrics["median_ttft_ms"]


def test_pr_23151s_ten_clients_stay_in_step_by_how_soon_a_successor_reaches_the_engine(tmp_path):
    """vLLM PR 23151's run (docs/accuracy.md, Which points moved): its measured TTFTs (mean 267 ms
    below a median of 300) are a wave of ten prefilled four, four and two at a time; the replay's
    ten fall into groups of one, four, four and one (TTFT p50 189 ms, its mean above its median),
    because a finished request's successor reaches the engine within the next decode step. Some
    8 ms more a request on that way (a client's own work, each build drawn around it) merges the
    groups: p50 about 242 ms."""
    from dataclasses import replace

    from batchtui.cli.measured import load_run
    from sim.engine import run_scenario
    from sim.scenario import Scenario

    path = fidelity.PUBLISHED / "vllm-pr23151-qwen3-30b-a3b-h100-c10.json"
    measured = load_run(str(path), Scenario(), {}, str(tmp_path), 0, ("gpu", "model"))
    assert measured.metrics["median_ttft_ms"] == 300.05
    ttft = {}
    for client_ms in (0, 5, 8):
        workload = replace(measured.scenario.workload, client_request_s=client_ms / 1000)
        metrics = run_scenario(replace(measured.scenario, workload=workload), keep_requests=False).metrics
        ttft[client_ms] = (metrics["median_ttft_ms"], metrics["mean_ttft_ms"])
    assert 185 < ttft[0][0] < 195 and ttft[0][1] > ttft[0][0]
    assert 185 < ttft[5][0] < 195
    assert 235 < ttft[8][0] < 260 and ttft[8][1] < ttft[8][0]


def test_a_file_without_output_throughput_compares_without_a_chart_point(capsys):
    path = fidelity.PUBLISHED / "vllm-rfc6913-70b-fp8-tp4-batch32.json"
    code, out, err = run(capsys, "compare", path, "--jobs", "1")
    assert code == 0, err
    assert "Median TPOT (ms)                               25.00" in out
    assert "o measured, x simulated" not in out


def test_compare_over_the_set_runs_each_file_on_its_own_gpu_and_model(capsys, table):
    """`batchtui compare tests/data/published/*.json`: the residual table, each run on the GPU and
    model its file names; --gpu sets one for all."""
    code, out, err = run(capsys, "compare", *FILES, "--json", "--jobs", "1")
    assert code == 0, err
    runs = {Path(r["file"]).stem: r for r in json.loads(out)["runs"]}
    assert set(runs) == {p.stem for p in FILES}
    for row in table:
        entry = runs[row.stem]
        assert (entry["gpu"], entry["model"]) == (row.gpu, row.model)
        if row.key in entry["simulated"]:
            assert entry["simulated"][row.key] == pytest.approx(row.simulated, rel=1e-9)
    code, out, _ = run(capsys, "compare", fidelity.PUBLISHED / "musgrave-a100-40gb-c8.json", "--gpu", "h100-sxm",
                       "--json", "--jobs", "1")
    assert code == 0 and json.loads(out)["runs"][0]["gpu"] == "h100-sxm"


def test_a_file_naming_an_unknown_gpu_is_simulated_on_the_base_gpu_and_says_so(tmp_path, capsys):
    data = json.loads((fidelity.PUBLISHED / "musgrave-a100-40gb-c8.json").read_text())
    data["gpu"] = "tpu-v9"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "compare", path, "--jobs", "1")
    assert code == 0, err
    assert "(Llama 3.1 8B on h100-sxm; the file's gpu 'tpu-v9' is not a known profile)" in out


def test_latency_figures_show_as_vllm_names_them(capsys):
    code, out, _ = run(capsys, "compare", fidelity.PUBLISHED / "vllm-perf-h100-latency-8b.json", "--jobs", "1")
    assert code == 0
    assert "Mean E2EL (ms)                                997.54" in out
