"""GuideLLM reports and aiperf profile exports compare and calibrate like vLLM's result files.

The fixtures (tests/data/loadgens, written by tools/loadgen_fixtures.py from simulated runs) follow
each tool's documented schema; the reader (`batchtui/cli/loadgens.py`) turns them into vllm bench
serve's keys and units. Files are told apart by what they hold, a GuideLLM sweep is one run per
benchmark, and a malformed file is one line naming what is wrong, in capped memory."""

from __future__ import annotations

import copy
import json
import math
import shutil
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from batchtui.cli import main
from tests.examples import examples
from tests.unit.cli_run import run
from tests.unit.test_edges import capped_memory, one_line  # noqa: F401  (a fixture)

DATA = Path(__file__).parent.parent / "data" / "loadgens"
GUIDELLM = DATA / "guidellm-benchmarks.json"
AIPERF = DATA / "profile_export_aiperf.json"

pytestmark = pytest.mark.xdist_group("calibrate")


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _compare(capsys, *paths, extra=()) -> dict:
    code, out, err = run(capsys, "compare", *map(str, paths), "--json", "--jobs", "1", *extra)
    assert code == 0, err
    return json.loads(out)


# -- told apart by content ----------------------------------------------------------------------


def test_each_file_is_read_by_what_it_holds_not_its_name(capsys, tmp_path):
    # each tool's content under the other's name, and a vLLM file under a GuideLLM name
    shutil.copy(GUIDELLM, tmp_path / "profile_export_aiperf.json")
    shutil.copy(AIPERF, tmp_path / "benchmarks.json")
    vllm = Path(__file__).parent.parent / "data" / "vllm-results" / "openai-8.0qps-Llama-3.1-8B-Instruct-20250301-101500.json"
    shutil.copy(vllm, tmp_path / "guidellm.json")
    runs = _compare(capsys, tmp_path / "profile_export_aiperf.json", tmp_path / "benchmarks.json",
                    tmp_path / "guidellm.json", extra=("--gpu", "h100-sxm"))["runs"]
    by_file = {}
    for r in runs:
        by_file.setdefault(Path(r["file"]).name, []).append(r)
    assert len(by_file["profile_export_aiperf.json"]) == len(_load(GUIDELLM)["benchmarks"])
    assert len(by_file["benchmarks.json"]) == 1 and len(by_file["guidellm.json"]) == 1
    assert by_file["guidellm.json"][0]["measured"]["median_ttft_ms"] == _load(vllm)["median_ttft_ms"]


# -- GuideLLM -------------------------------------------------------------------------------------


def test_a_guidellm_sweep_is_one_run_per_benchmark_with_its_strategy(tmp_path):
    from batchtui.cli.measured import read_runs

    report = _load(GUIDELLM)
    runs = read_runs(str(GUIDELLM))
    assert [label for label, _ in runs] == [
        "guidellm-benchmarks.json#1 synchronous", "guidellm-benchmarks.json#2 throughput@unlimited",
        "guidellm-benchmarks.json#3 constant@6", "guidellm-benchmarks.json#4 constant@12",
        "guidellm-benchmarks.json#5 constant@18"]
    for (_, run_), bench in zip(runs, report["benchmarks"]):
        strategy, m = bench["config"]["strategy"], bench["metrics"]
        ok = {k: v["successful"] for k, v in m.items() if isinstance(v, dict) and "successful" in v}
        assert run_["completed"] == m["request_totals"]["successful"]
        assert run_["total_input_tokens"] == ok["prompt_token_count"]["total_sum"]
        # units: latency in seconds -> ms; TPOT is GuideLLM's inter-token latency, not its
        # time_per_output_token (which counts the first token)
        assert run_["mean_e2el_ms"] == pytest.approx(1000 * ok["request_latency"]["mean"])
        assert run_["median_tpot_ms"] == ok["inter_token_latency_ms"]["median"]
        assert run_["median_tpot_ms"] != ok["time_per_output_token_ms"]["median"]
        assert run_["p99_ttft_ms"] == ok["time_to_first_token_ms"]["percentiles"]["p99"]
        assert run_["output_throughput"] == ok["output_tokens_per_second"]["mean"]
        assert run_["request_throughput"] == ok["requests_per_second"]["mean"]
        assert run_["model_id"] == report["args"]["model"]
        expected = {"synchronous": ("inf", 1), "throughput": ("inf", None)}.get(
            strategy["type_"], (strategy.get("rate"), strategy.get("max_concurrency")))
        assert (run_["request_rate"], run_["max_concurrency"]) == expected


def test_guidellm_strategies_become_the_traffic_vllm_bench_serve_would_send(tmp_path):
    from batchtui.cli.measured import load_runs
    from sim.scenario import Scenario

    runs = load_runs([str(GUIDELLM)], Scenario(), {}, str(tmp_path), Scenario().profiles())
    w = {r.label.split(" ")[1]: r.scenario.workload for r in runs}
    assert (w["synchronous"].request_rate, w["synchronous"].max_concurrency) == (math.inf, 1)
    assert (w["throughput@unlimited"].request_rate, w["throughput@unlimited"].max_concurrency) == (math.inf, 0)
    # constant: evenly spaced (gamma of infinite shape) at the rate
    assert (w["constant@6"].request_rate, w["constant@6"].burstiness) == (6.0, math.inf)
    assert w["constant@12"].input.mean == 512 and w["constant@12"].output.mean == 256


def test_a_poisson_or_capped_benchmark_and_guidellm_0_3s_layout(capsys, tmp_path):
    report = _load(GUIDELLM)
    bench = report["benchmarks"][2]
    bench["config"]["strategy"] = {"type_": "poisson", "rate": 6.0, "max_concurrency": 4, "random_seed": 42}
    old = copy.deepcopy(report["benchmarks"][0])  # guidellm 0.3: args.strategy, request_totals beside metrics
    old["args"] = {"strategy": {"type_": "concurrent", "streams": 2}}
    old["request_totals"] = old["metrics"].pop("request_totals")
    del old["config"]
    report["benchmarks"] = [bench, old]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(report))
    from batchtui.cli.measured import load_runs
    from sim.scenario import Scenario

    runs = load_runs([str(path)], Scenario(), {}, str(tmp_path), Scenario().profiles())
    poisson, concurrent = (r.scenario.workload for r in runs)
    assert (poisson.request_rate, poisson.burstiness, poisson.max_concurrency) == (6.0, 1.0, 4)
    assert (concurrent.request_rate, concurrent.max_concurrency) == (math.inf, 2)


def test_lengths_spread_as_the_files_percentiles_say(capsys, tmp_path):
    """A ShareGPT-like spread of prompt lengths (p10 100, median 230, p90 600 tokens) is replayed
    as lengths drawn around that median, not one length; fixed lengths stay fixed."""
    from batchtui.cli.measured import load_runs
    from sim.scenario import Scenario

    report = _load(GUIDELLM)
    report["benchmarks"] = report["benchmarks"][2:3]
    prompt = report["benchmarks"][0]["metrics"]["prompt_token_count"]["successful"]
    prompt.update({"min": 4.0, "max": 1800.0})
    prompt["percentiles"].update({"p10": 100.0, "p50": 230.0, "p90": 600.0})
    path = tmp_path / "spread.json"
    path.write_text(json.dumps(report))
    [run_] = load_runs([str(path)], Scenario(), {}, str(tmp_path), Scenario().profiles())
    w = run_.scenario.workload
    assert (w.input.dist, w.input.mean, w.input.low, w.input.high) == ("lognormal", 230, 4, 1800)
    assert w.input.sigma == pytest.approx(math.log(600 / 100) / (2 * 1.2816), rel=1e-3)
    assert w.output.dist == "fixed"  # every answer 256 tokens: p10 == p90
    import numpy as np

    drawn = w.input.draw(np.random.default_rng(0), 20000)
    # the file's median, and its p90 / p10 (a lognormal is symmetric around the median in log)
    assert np.median(drawn) == pytest.approx(230, rel=0.02)
    assert np.percentile(drawn, 90) / np.percentile(drawn, 10) == pytest.approx(6, rel=0.05)
    assert "~230 (lognormal" in run(capsys, "compare", str(path), "--jobs", "1")[1]


def test_a_version_2_report_names_its_model_and_gpu_where_guidellm_0_7_keeps_them(capsys, tmp_path):
    report = _load(GUIDELLM)
    report["metadata"]["version"] = 2
    del report["args"]
    for bench in report["benchmarks"]:
        del bench["config"]["backend"]["model"]
    report["config"] = {"metadata": {"labels": {"gpu": "a100-80gb", "max-num-seqs": "64"}},
                        "spec": {"backend": {"kind": "openai_http", "model": "meta-llama/Llama-3.1-8B-Instruct"}}}
    report["benchmarks"] = report["benchmarks"][:1]
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(report))
    [entry] = _compare(capsys, path)["runs"]
    assert (entry["gpu"], entry["model"]) == ("a100-80gb", "llama-3.1-8b")
    from batchtui.cli.measured import load_runs
    from sim.scenario import Scenario

    [run_] = load_runs([str(path)], Scenario(), {}, str(tmp_path), Scenario().profiles(), ("gpu", "model"))
    assert run_.scenario.engine["max_num_seqs"] == 64  # a label spelled as vllm serve's flag, as --metadata


# -- aiperf ---------------------------------------------------------------------------------------


def test_an_aiperf_export_is_one_run_in_vllms_units(capsys):
    from batchtui.cli.measured import read_runs

    data = _load(AIPERF)
    [(label, r)] = read_runs(str(AIPERF))
    assert label == AIPERF.name
    assert r["completed"] == data["request_count"]["avg"]
    assert r["total_output_tokens"] == data["output_sequence_length"]["avg"] * data["request_count"]["avg"]
    assert r["median_ttft_ms"] == data["time_to_first_token"]["p50"]
    assert r["median_tpot_ms"] == data["inter_token_latency"]["p50"]
    assert r["output_throughput"] == data["output_token_throughput"]["avg"]
    assert (r["request_rate"], r["max_concurrency"]) == ("inf", data["input_config"]["loadgen"]["concurrency"])
    assert r["model_id"] == data["input_config"]["endpoint"]["model_names"][0]


def test_aiperf_units_are_converted_and_a_rate_with_a_cap_is_both(tmp_path):
    from batchtui.cli.measured import read_runs

    data = _load(AIPERF)
    data["time_to_first_token"] = {k: (v / 1000 if isinstance(v, float) else v) for k, v in
                                   data["time_to_first_token"].items()} | {"unit": "sec"}
    data["input_config"]["loadgen"] = {"request_rate": 5.0, "request_rate_mode": "constant", "concurrency": 8}
    data["telemetry_data"] = {"endpoints": {"localhost:9400": {"gpus": {
        "gpu_0": {"gpu_index": 0, "gpu_name": "NVIDIA H100 80GB HBM3", "metrics": {}}}}}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    [(_, r)] = read_runs(str(path))
    assert r["median_ttft_ms"] == pytest.approx(_load(AIPERF)["time_to_first_token"]["p50"])
    assert (r["request_rate"], r["burstiness"], r["max_concurrency"]) == (5.0, math.inf, 8)
    assert r["gpu"] == "NVIDIA H100 80GB HBM3"  # resolved like a vLLM file's gpu entry


def test_a_later_aiperf_schema_gives_its_load_in_the_recorded_command_line(capsys, tmp_path):
    from batchtui.cli.measured import read_runs

    data = _load(AIPERF)
    data["schema_version"] = "1.5"
    data["input_config"] = {"models": {"items": [{"name": "meta-llama/Llama-3.1-70B-Instruct"}]}}
    data["run_info"] = {"cli_command": "aiperf profile --model meta-llama/Llama-3.1-8B-Instruct --url "
                                       "http://localhost:8000 --request-rate 4.5 --request-rate-mode constant "
                                       "--concurrency=16 --request-count 200"}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    [(_, r)] = read_runs(str(path))
    assert (r["request_rate"], r["burstiness"], r["max_concurrency"]) == (4.5, math.inf, 16)
    assert r["model_id"] == "meta-llama/Llama-3.1-70B-Instruct"  # the config's, when it names one
    data["run_info"]["cli_command"] = "aiperf profile -m x --concurrency lots"
    path.write_text(json.dumps(data))
    code, _, err = run(capsys, "compare", str(path), "--jobs", "1")
    assert code == 2 and one_line(err) and "the recorded command's --concurrency = 'lots'" in err, err


def test_the_aiperf_gpu_from_telemetry_picks_the_profile(capsys, tmp_path):
    data = _load(AIPERF)
    data["telemetry_data"] = {"endpoints": {"e": {"gpus": {"gpu_0": {"gpu_name": "NVIDIA A100-SXM4-80GB"}}}}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    assert _compare(capsys, path)["runs"][0]["gpu"] == "a100-80gb"


# -- the same as a vLLM file ----------------------------------------------------------------------


def test_a_run_written_by_each_tool_replays_as_the_vllm_file_of_that_run(capsys, tmp_path):
    """One simulated run saved as vllm bench serve's file and summarised in GuideLLM's and
    aiperf's schemas (the fixture writer's code) gives the same run and the same simulation."""
    import tools.loadgen_fixtures as fx

    vllm = tmp_path / "vllm.json"
    code, _, err = run(capsys, "sim", "--request-rate", "8", "--burstiness", "inf", "--num-prompts", "40",
                       "--random-input-len", "300", "--random-output-len", "60", "--save-result", "--save-detailed",
                       "--result-filename", str(vllm))
    assert code == 0, err
    r = _load(vllm)
    report = {"metadata": {"version": 1}, "args": {"model": r["model_id"]},
              "benchmarks": [fx.guidellm_benchmark(0, {"type_": "constant", "rate": 8.0}, r, "id")]}
    q = fx.per_request(r)
    export = {"request_count": {"unit": "requests", "avg": 40.0},
              "time_to_first_token": fx.aiperf_block(q["ttft_ms"], "ms"),
              "inter_token_latency": fx.aiperf_block(q["itl_ms"], "ms"),
              "input_sequence_length": fx.aiperf_block(q["prompt"], "tokens"),
              "output_sequence_length": fx.aiperf_block(q["output"], "tokens"),
              "input_config": {"endpoint": {"model_names": [r["model_id"]]},
                               "loadgen": {"request_rate": 8.0, "request_rate_mode": "constant"}}}
    (tmp_path / "g.json").write_text(json.dumps(report))
    (tmp_path / "a.json").write_text(json.dumps(export))
    for key in ("input_lens", "output_lens", "start_times", "ttfts", "itls", "errors"):
        del r[key]  # the vLLM file as a summary too (no per-request replay)
    vllm.write_text(json.dumps(r))
    runs = sorted(_compare(capsys, vllm, tmp_path / "g.json", tmp_path / "a.json")["runs"],
                  key=lambda r: Path(r["file"]).name != "vllm.json")
    assert len(runs) == 3 and Path(runs[0]["file"]).name == "vllm.json"
    for other in runs[1:]:
        assert other["request_rate"] == runs[0]["request_rate"] == 8.0
        for key in ("median_ttft_ms", "median_tpot_ms"):
            assert other["measured"][key] == pytest.approx(runs[0]["measured"][key], rel=1e-3)
            assert other["simulated"][key] == pytest.approx(runs[0]["simulated"][key], rel=1e-9)


def test_a_report_that_keeps_every_request_is_replayed_request_for_request(capsys, tmp_path):
    """GuideLLM keeps every request by default: its send times and lengths replay as a vLLM file
    saved with --save-detailed does (here a run of varied lengths at a Poisson rate)."""
    import tools.loadgen_fixtures as fx
    from batchtui.cli.measured import load_runs
    from sim.scenario import Scenario
    from sim.workload import load_trace

    vllm = tmp_path / "vllm.json"
    code, _, err = run(capsys, "sim", "--request-rate", "10", "--num-prompts", "30", "--random-input-len", "400",
                       "--random-output-len", "80", "--random-range-ratio", "0.5", "--save-result",
                       "--save-detailed", "--result-filename", str(vllm))
    assert code == 0, err
    r = _load(vllm)
    report = {"metadata": {"version": 1}, "args": {"model": r["model_id"]},
              "benchmarks": [fx.guidellm_benchmark(0, {"type_": "poisson", "rate": 10.0}, r, "id", keep_requests=True)]}
    (tmp_path / "g.json").write_text(json.dumps(report))
    ours, theirs = load_runs([str(vllm), str(tmp_path / "g.json")], Scenario(), {}, str(tmp_path),
                             Scenario().profiles())
    assert ours.replayed and theirs.replayed and "30 requests replayed from the file" in theirs.describe()
    a, b = (load_trace(x.scenario.workload.trace_path) for x in (ours, theirs))
    assert [(s.prompt_len, s.output_len) for s in a] == [(s.prompt_len, s.output_len) for s in b]
    # The same send times, counted from where each file's clock starts: the vLLM file's duration
    # puts its first request one gap after the benchmark's start; the report's span (as this
    # fixture writes it) starts at its first request.
    lead = a[0].arrival_time
    assert [s.arrival_time for s in b] == pytest.approx([s.arrival_time - lead for s in a], abs=1e-6)
    runs = _compare(capsys, vllm, tmp_path / "g.json")["runs"]
    assert runs[0]["simulated"]["median_tpot_ms"] == pytest.approx(runs[1]["simulated"]["median_tpot_ms"], rel=1e-9)
    # a report keeping a sample of its requests (--sample-requests 5) is replayed from its summary
    report["benchmarks"][0]["requests"]["successful"] = report["benchmarks"][0]["requests"]["successful"][:5]
    (tmp_path / "g.json").write_text(json.dumps(report))
    [sampled] = load_runs([str(tmp_path / "g.json")], Scenario(), {}, str(tmp_path), Scenario().profiles())
    assert not sampled.replayed


def test_calibrate_fits_a_guidellm_sweep(capsys, tmp_path):
    """The fixture's sweep was simulated with eta_bw 0.72, eta_mfu 0.55, 0.4 ms per iteration and
    25 us per sequence (synchronous scheduling, which the report does not record: given as vllm
    serve's flag); the fit finds them near enough (its prompts are all short: the KV reads are kept)."""
    out = tmp_path / "cal.toml"
    code, text, err = run(capsys, "calibrate", str(GUIDELLM), "--gpu", "h100-sxm", "--no-async-scheduling",
                          "--fix", "eta_attn", "--output", str(out), "--jobs", "1")
    assert code == 0, err
    fitted = tomllib.loads(out.read_text())["gpus"]["h100-sxm-calibrated"]
    assert fitted["eta_bw"] == pytest.approx(0.72, rel=0.1)
    assert fitted["eta_mfu"] == pytest.approx(0.55, rel=0.1)
    overhead = fitted["overhead_s"]
    line = next(x for x in out.read_text().splitlines() if x.startswith("overhead_s = "))
    if "not determined" in line:
        # (Since the API server spreads the loaded runs' requests, issue 36, this sweep leaves the
        # fixed cost just short of determined; the fit's own value is still the one simulated.)
        overhead = float(line.split("the fit gave ")[1].split(" us")[0]) * 1e-6
    assert 0.2e-3 < overhead < 1e-3
    assert fitted["overhead_per_seq_s"] == pytest.approx(25e-6, rel=0.5)
    assert "#5 constant@18" in text
    assert "# fitted to 5 measured run(s)" in out.read_text() and "#   guidellm-benchmarks.json#2 throughput" in out.read_text()


# -- malformed files: one line naming what is wrong ------------------------------------------------


def _set(doc: dict, path: str, value):
    keys = path.split(".")
    for k in keys[:-1]:
        doc = doc[int(k)] if isinstance(doc, list) else doc[k]
    if value is _DROP:
        del doc[keys[-1]]
    else:
        doc[keys[-1]] = value


_DROP = object()


@pytest.mark.parametrize(("fixture", "path", "value", "said"), [
    (GUIDELLM, "benchmarks", [], "without benchmarks"),
    (GUIDELLM, "benchmarks.1.config.strategy", {"type_": "trace", "time_scale": 1.0}, "trace strategy"),
    (GUIDELLM, "benchmarks.1.config.strategy", {"type_": "rocket"}, "unknown GuideLLM strategy 'rocket'"),
    (GUIDELLM, "benchmarks.2.config.strategy", {"type_": "constant"}, "without its rate (config.strategy.rate"),
    (GUIDELLM, "benchmarks.2.config.strategy", {"type_": "concurrent"}, "without its number of streams"),
    (GUIDELLM, "benchmarks.0.config.strategy", _DROP, "benchmark 1: no scheduling strategy"),
    (GUIDELLM, "benchmarks.0.metrics.prompt_token_count", _DROP, "prompt_token_count.successful.total_sum"),
    (GUIDELLM, "benchmarks.3.metrics.request_totals.successful", -3, "successful = -3 is not a whole number"),
    (GUIDELLM, "benchmarks.3.metrics.time_to_first_token_ms.successful.median", "fast", "median = 'fast'"),
    (GUIDELLM, "benchmarks.4.metrics", 7, "metrics is 7, not an object"),
    (GUIDELLM, "benchmarks.0.requests.successful", [{"info": {"timings": {}}}] * 20,
     "successful request 1 has no usable request_start"),
    (AIPERF, "input_config", _DROP, "without its input_config"),
    (AIPERF, "input_config.loadgen", _DROP, "no loadgen"),
    (AIPERF, "input_config.loadgen.request_rate", 0, "request_rate = 0 is not a number > 0"),
    (AIPERF, "input_config.input.fixed_schedule", True, "replayed a schedule from its input file"),
    (AIPERF, "time_to_first_token.unit", "furlongs", "time_to_first_token has unit 'furlongs'"),
    (AIPERF, "request_count", _DROP, "no request_count"),
    (AIPERF, "output_sequence_length", _DROP, "no output_sequence_length"),
])
def test_a_malformed_or_unsupported_file_says_what_is_missing(capsys, tmp_path, fixture, path, value, said):
    doc = _load(fixture)
    _set(doc, path, value)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    for argv in (["compare", str(bad)], ["calibrate", str(bad), "--gpu", "h100-sxm", "--output", str(tmp_path / "o.toml")]):
        code, _, err = run(capsys, *argv, "--jobs", "1")
        assert code == 2 and one_line(err) and str(bad) in err and said in err, err
    assert not (tmp_path / "o.toml").exists()


@pytest.mark.parametrize("digits", [400, 5000])
def test_an_integer_too_long_for_a_float_is_refused_as_a_number(capsys, tmp_path, digits):
    """Past 1e308 (and past Python's 4,300 digits for an int) in any of the three formats."""
    huge = "1" + "0" * digits
    files = {"vllm.json": '{"completed": %s, "total_input_tokens": 5, "total_output_tokens": 5, "request_rate": 1,'
                          ' "output_throughput": 3}' % huge,
             "guidellm.json": GUIDELLM.read_text().replace('"rate": 6.0', '"rate": ' + huge),
             "aiperf.json": AIPERF.read_text().replace('"avg": 200.0', '"avg": ' + huge)}
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        code, _, err = run(capsys, "compare", str(path), "--jobs", "1")
        assert code == 2 and one_line(err) and "= inf is not a" in err, err


# -- hostile files --------------------------------------------------------------------------------

HOSTILE = st.one_of(st.none(), st.booleans(), st.sampled_from([-1, 0, 1, 3, 2.5, 1e308, float("nan"), float("inf")]),
                    st.text(max_size=6), st.just([]), st.just({}), st.just({"successful": None}))


def _paths(doc, prefix=""):
    """Every key path in a document (list items by index), to mutate one."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield f"{prefix}{k}"
            yield from _paths(v, f"{prefix}{k}.")
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:2]):
            yield f"{prefix}{i}"
            yield from _paths(v, f"{prefix}{i}.")


def _small(fixture: Path) -> dict:
    """The fixture cut to a quick replay: GuideLLM's one-request-at-a-time benchmark, aiperf's run
    with its count cut to 12."""
    doc = _load(fixture)
    if "benchmarks" in doc:
        doc["benchmarks"] = doc["benchmarks"][:1]
    else:
        doc["request_count"]["avg"] = 12.0
    return doc


SMALL = {f: _small(f) for f in (GUIDELLM, AIPERF)}
PATHS = {f: sorted(set(_paths(doc))) for f, doc in SMALL.items()}
READ = {"benchmarks", "config", "strategy", "type_", "rate", "streams", "max_concurrency", "metrics", "request_totals",
        "successful", "errored", "total_sum", "mean", "median", "percentiles", "p99", "count", "args", "model",
        "duration", "input_config", "loadgen", "concurrency", "request_rate", "request_rate_mode", "endpoint",
        "model_names", "input", "unit", "avg", "p50", "request_count", "input_sequence_length",
        "output_sequence_length", "time_to_first_token", "inter_token_latency", "benchmark_duration"}
"""Keys the reader looks at: half the mutations land on one of them."""
READ_PATHS = {f: [p for p in paths if p.rsplit(".", 1)[-1] in READ] for f, paths in PATHS.items()}


@settings(derandomize=True, max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mutation_of_either_file_is_a_result_or_one_line(capsys, capped_memory, tmp_path_factory, data):  # noqa: F811
    fixture = data.draw(st.sampled_from(sorted(SMALL)))
    doc = copy.deepcopy(SMALL[fixture])
    paths = st.one_of(st.sampled_from(READ_PATHS[fixture]), st.sampled_from(PATHS[fixture]))
    for path in data.draw(st.lists(paths, min_size=1, max_size=3)):
        try:
            _set(doc, path, data.draw(st.one_of(HOSTILE, st.just(_DROP))))
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # an earlier mutation removed or replaced the path
    bad = tmp_path_factory.mktemp("hostile") / "result.json"
    bad.write_text(json.dumps(doc))
    code, out, err = run(capsys, "compare", str(bad), "--gpu", "h100-sxm", "--jobs", "1")
    event(f"{fixture.name} exit {code}")
    assert "Traceback" not in err + out
    assert code == 0 or (code == 2 and one_line(err)), (code, err)
