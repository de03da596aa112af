"""The headless commands as a user runs them: `batchtui sim`, `sweep`, `plan` and `steps` —
their text and --json output (vllm bench serve's names and keys), their files, bad input and
exit codes.

Runs are kept small (tens to a few hundred requests, short answers) so the file stays fast.
"""

from __future__ import annotations

import csv
import json
import math

import pytest

from sim import rate_plan
from batchtui.cli import main
from tests.unit.cli_run import run

# Every key vllm bench serve's result file has that a simulation can fill.
VLLM_KEYS = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
             "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
             "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
             "output_throughput", "total_token_throughput", "latencies", "queue_times",
             "max_output_tokens_per_s", "max_concurrent_requests"] + [
    f"{stat}_{name}_ms" for name in ("ttft", "tpot", "itl", "e2el")
    for stat in ("mean", "median", "std", "p99")]
POINT_KEYS = ["completed", "failed", "duration", "request_throughput", "output_throughput",
              "total_token_throughput", "max_concurrent_requests", "p99_ttft_ms", "p99_tpot_ms", "bounded"]
DETAILED_KEYS = ["input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors"]
OUR_KEYS = ["max_itl_ms", "mean_running", "max_running", "peak_kv_usage", "num_preemptions",
            "binding_limit_counts"]
SMALL = ["--num-prompts", "60", "--input-len", "256", "--output-len", "32"]
HELPDESK = ["--input-len", "512", "--output-len", "256"]  # the tutorial's running example


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def fail(capsys, *argv):
    """Run a command expected to be refused; return (exit code, stderr)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, err


# -- sim ---------------------------------------------------------------------------------------


def test_sim_prints_a_vllm_bench_serve_result_block(capsys):
    code, out, _ = run(capsys, "sim", *SMALL, "--request-rate", "8")
    assert code == 0
    lines = out.splitlines()
    # vllm bench serve's block, line for line and in its order; the simulator's lines after it.
    order = ["============ Serving Benchmark Result ============",
             "Successful requests:", "Failed requests:", "Request rate configured (RPS):",
             "Benchmark duration (s):", "Total input tokens:", "Total generated tokens:",
             "Request throughput (req/s):", "Output token throughput (tok/s):",
             "Peak output token throughput (tok/s):", "Peak concurrent requests:",
             "Total token throughput (tok/s):",
             "---------------Time to First Token----------------",
             "Mean TTFT (ms):", "Median TTFT (ms):", "P99 TTFT (ms):",
             "-----Time per Output Token (excl. 1st token)------",
             "Mean TPOT (ms):", "Median TPOT (ms):", "P99 TPOT (ms):",
             "---------------Inter-token Latency----------------",
             "Mean ITL (ms):", "Median ITL (ms):", "P99 ITL (ms):",
             "--------------------Simulator---------------------",
             "Max ITL (ms):", "Mean running batch:", "Max running batch:", "Peak KV cache use (%):",
             "Preemptions:", "Binding limit (most often):", "Binding limit counts:",
             "=" * 50]
    at = 0
    for text in order:
        at = next(i for i in range(at, len(lines)) if lines[i].startswith(text))
    assert "Successful requests:                     60" in out
    assert "Request rate configured (RPS):           8.00" in out
    assert "End-to-end Latency" not in out  # not among vLLM's default --percentile-metrics
    # numbers start in column 42, as vllm bench serve prints them
    assert lines[[i for i, l in enumerate(lines) if l.startswith("Mean TTFT")][0]][41] != " "
    words = " ".join(out.split())  # the setup paragraph is wrapped
    assert "Llama 3.1 8B on one H100 SXM 80 GB" in words
    assert "1024 seats (max_num_seqs), max_num_batched_tokens 8192" in words  # vLLM's serve defaults


def test_percentile_flags_choose_the_lines(capsys):
    code, out, _ = run(capsys, "sim", *SMALL, "--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,99.9")
    assert code == 0
    assert "P50 TTFT (ms):" in out and "P99.9 E2EL (ms):" in out and "End-to-end Latency" in out
    assert "Inter-token Latency" not in out and "P99 TTFT" not in out
    d = run_json(capsys, "sim", *SMALL, "--metric-percentiles", "50,99.9")
    assert {"p50_ttft_ms", "p99.9_itl_ms", "p99_e2el_ms"} <= set(d)


def test_sim_json_has_vllm_bench_keys_and_ours(capsys):
    d = run_json(capsys, "sim", *SMALL, "--request-rate", "8")
    for key in VLLM_KEYS + OUR_KEYS:
        assert key in d, key
    assert d["completed"] == 60 and d["failed"] == 0 and d["num_prompts"] == 60
    assert d["model_id"] == "meta-llama/Llama-3.1-8B-Instruct" and d["request_rate"] == 8
    assert d["burstiness"] == 1.0 and d["max_concurrency"] is None
    assert len(d["latencies"]) == 60
    assert set(d["binding_limit_counts"]) == {"token_budget", "max_num_seqs", "kv_cache", "none"}
    assert sum(d["binding_limit_counts"].values()) == d["iterations"]
    assert 0 < d["peak_kv_usage"] <= 1
    assert d["output_throughput"] == pytest.approx(60 * 32 / d["duration"])
    assert 0 < d["max_concurrent_requests"] <= 60
    assert d["max_output_tokens_per_s"] >= d["output_throughput"] * 0.5
    assert d["engine"]["max_num_seqs"] == 1024 and d["engine"]["max_num_batched_tokens"] == 8192


def test_goodput_counts_requests_within_every_objective(capsys):
    d = run_json(capsys, "sim", *SMALL, "--request-rate", "30", "--goodput", "ttft:20", "tpot:6.7",
                 "--save-detailed")
    ttfts, lat, outs = d["ttfts"], d["latencies"], d["output_lens"]
    good = sum(1 for t, e, o in zip(ttfts, lat, outs)
               if t * 1000 <= 20 and ((e - t) / (o - 1) if o > 1 else 0) * 1000 <= 6.7)
    assert 0 < good < 60  # the objectives bite
    assert d["request_goodput"] == pytest.approx(good / d["duration"])
    code, out, _ = run(capsys, "sim", *SMALL, "--goodput", "ttft:40")
    assert "Request goodput (req/s):" in out
    code, err = fail(capsys, "sim", *SMALL, "--goodput", "ttfb:3")
    assert code == 2 and "argument --goodput: expected KEY:MS" in err


def test_save_result_writes_vllms_file(capsys, tmp_path):
    code, out, _ = run(capsys, "sim", *SMALL, "--request-rate", "8", "--save-result", "--result-dir",
                       str(tmp_path / "results"), "--metadata", "gpu_count=1")
    assert code == 0
    (path,) = (tmp_path / "results").iterdir()
    assert path.name.startswith("batchtui-sim-8.0qps-Llama-3.1-8B-Instruct-") and path.suffix == ".json"
    d = json.loads(path.read_text())
    for key in VLLM_KEYS:
        assert key in d, key
    assert d["gpu_count"] == "1" and "input_lens" not in d  # arrays only with --save-detailed
    code, _, _ = run(capsys, "sim", *SMALL, "--save-result", "--save-detailed", "--result-filename",
                     str(tmp_path / "r.json"))
    d = json.loads((tmp_path / "r.json").read_text())
    for key in DETAILED_KEYS:
        assert len(d[key]) == 60, key
    # per-request gaps add up to the time after the first token
    for itl, ttft, e2e, n in zip(d["itls"], d["ttfts"], d["latencies"], d["output_lens"]):
        assert len(itl) == n - 1 and sum(itl) == pytest.approx(e2e - ttft)
    assert d["start_times"] == sorted(d["start_times"]) and d["errors"] == [""] * 60


def test_sim_json_is_strict_json_with_an_infinite_rate(capsys):
    code, out, _ = run(capsys, "sim", *SMALL, "--request-rate", "inf", "--json")
    assert code == 0
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert d["request_rate"] == "inf"


def test_sim_is_deterministic_for_a_seed(capsys):
    a = run_json(capsys, "sim", *SMALL, "--seed", "3", "--request-rate", "20")
    b = run_json(capsys, "sim", *SMALL, "--seed", "3", "--request-rate", "20")
    c = run_json(capsys, "sim", *SMALL, "--seed", "4", "--request-rate", "20")
    a.pop("date"), b.pop("date")
    assert a == b
    assert a["p99_ttft_ms"] != c["p99_ttft_ms"]


def test_engine_flags_reach_the_engine(capsys):
    d = run_json(capsys, "sim", *SMALL, "--request-rate", "inf", "--max-num-seqs", "8",
                 "--max-num-batched-tokens", "512", "--long-prefill-token-threshold", "128",
                 "--block-size", "32", "--gpu-memory-utilization", "0.8")
    assert d["max_running"] == 8
    assert d["engine"]["max_num_batched_tokens"] == 512
    assert d["engine"]["long_prefill_token_threshold"] == 128
    assert d["binding_limit_counts"]["max_num_seqs"] > 0


def test_defaults_follow_the_gpu(capsys):
    d = run_json(capsys, "sim", *SMALL, "--gpu", "a100-80gb")
    assert d["engine"]["max_num_seqs"] == 256 and d["engine"]["max_num_batched_tokens"] == 2048
    d = run_json(capsys, "sim", *SMALL, "--gpu", "b200")
    assert d["engine"]["max_num_batched_tokens"] == 16384


def test_a_small_cache_preempts_and_says_kv_cache_binds(capsys):
    d = run_json(capsys, "sim", "--num-prompts", "40", "--input-len", "512", "--output-len", "256",
                 "--request-rate", "inf", "--num-gpu-blocks-override", "200", "--max-model-len", "2048")
    assert d["kv_cache_usable_blocks"] == 199
    assert d["num_preemptions"] > 0
    assert d["binding_limit_counts"]["kv_cache"] > 0
    assert d["peak_kv_usage"] > 0.9


def test_static_batching_reports_padding(capsys):
    argv = ["sim", "--batching", "static", "--max-batch-size", "16", "--num-prompts", "48",
            "--input-len", "128", "--output-dist", "uniform", "--output-len-min", "4",
            "--output-len-max", "64", "--request-rate", "inf"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "static batching, batches of up to 16" in out
    assert "Padding share of seats (%):" in out
    d = run_json(capsys, *argv)
    assert 0.1 < d["padding_share"] < 0.9
    assert d["max_running"] <= 16


def test_an_encoder_model_is_served_by_dynamic_batching(capsys):
    code, out, _ = run(capsys, "sim", "--model", "bge-large-embedder", "--num-prompts", "100",
                       "--request-rate", "200", "--max-queue-delay-ms", "5")
    assert code == 0
    words = " ".join(out.split())
    assert "dynamic batching, batches of up to 64 after at most 5 ms" in words
    assert "256 in (one pass each)" in words


def test_per_request_csv(capsys, tmp_path):
    path = tmp_path / "requests.csv"
    code, out, _ = run(capsys, "sim", *SMALL, "--output-dist", "uniform", "--output-len-min", "1",
                       "--output-len-max", "8", "--per-request", str(path))
    assert code == 0
    assert f"Per-request results: {path} (60 rows)" in out
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 60
    assert list(rows[0]) == ["request_id", "pool", "arrival_s", "prompt_len", "output_len",
                             "ttft_ms", "tpot_ms", "e2e_ms", "preemptions", "max_itl_ms",
                             "finish_reason", "num_cached_tokens"]
    arrivals = [float(r["arrival_s"]) for r in rows]
    assert arrivals == sorted(arrivals)
    for r in rows:
        assert float(r["e2e_ms"]) >= float(r["ttft_ms"]) > 0
        assert (r["tpot_ms"] == "") == (r["output_len"] == "1")  # no TPOT for one-token answers


def test_a_trace_file_drives_the_run(capsys, tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"arrival_time": 0.0, "prompt_len": 100, "output_len": 20}\n'
                     '# a comment\n'
                     '{"arrival_time": 0.05, "prompt_len": 300, "output_len": 5, "pool": "batch"}\n')
    d = run_json(capsys, "sim", "--workload", str(trace))
    assert d["completed"] == 2
    assert d["total_input_tokens"] == 400 and d["total_output_tokens"] == 25
    assert set(d["pools"]) == {"chat", "batch"}


def test_a_bad_trace_line_names_file_and_line(capsys, tmp_path):
    trace = tmp_path / "bad.jsonl"
    trace.write_text('{"arrival_time": 0.0, "prompt_len": 100, "output_len": 20}\n'
                     '{"arrival_time": 0.1, "prompt_len": -5, "output_len": 20}\n')
    code, err = fail(capsys, "sim", "--workload", str(trace))
    assert code == 2
    assert f"{trace}:2:" in err and "prompt_len" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_scenario_file_with_flags_overriding(capsys, tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('gpu = "a100-80gb"\nseed = 7\n[engine]\nmax_num_seqs = 32\n'
                        '[workload]\nnum_prompts = 30\nrequest_rate = "inf"\n'
                        '[workload.input]\nmean = 128\n[workload.output]\nmean = 16\n')
    d = run_json(capsys, "sim", "--scenario", str(scenario))
    assert d["gpu"] == "a100-80gb" and d["seed"] == 7 and d["completed"] == 30
    assert d["engine"]["max_num_seqs"] == 32 and d["request_rate"] == "inf"
    d = run_json(capsys, "sim", "--scenario", str(scenario), "--max-num-seqs", "4", "--num-prompts", "20")
    assert d["engine"]["max_num_seqs"] == 4 and d["completed"] == 20 and d["max_running"] == 4
    assert d["gpu"] == "a100-80gb"


def test_an_endless_scenario_needs_a_request_count(capsys, tmp_path):
    scenario = tmp_path / "live.toml"
    scenario.write_text("[workload]\nnum_prompts = 0\n")
    code, err = fail(capsys, "sim", "--scenario", str(scenario))
    assert code == 2 and "--num-prompts" in err


def test_user_profiles_file(capsys, tmp_path):
    profiles = tmp_path / "p.toml"
    profiles.write_text('[gpus.h100-sxm]\nhbm_bandwidth = 1.675e12\n')  # half the bandwidth
    fast = run_json(capsys, "sim", *SMALL, "--request-rate", "8")
    slow = run_json(capsys, "sim", *SMALL, "--request-rate", "8", "--profiles", str(profiles))
    assert slow["median_tpot_ms"] > 1.6 * fast["median_tpot_ms"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["--max-num-seqs", "0"], "argument --max-num-seqs: expected a whole number >= 1, got '0'"),
    (["--max-num-seqs", "2.5"], "argument --max-num-seqs: expected a whole number >= 1"),
    (["--gpu-memory-utilization", "0"], "argument --gpu-memory-utilization: expected a fraction in (0, 1]"),
    (["--gpu-memory-utilization", "1.01"], "argument --gpu-memory-utilization: expected a fraction in (0, 1]"),
    (["--request-rate", "0"], "argument --request-rate: expected requests/s > 0, or inf"),
    (["--request-rate", "fast"], "argument --request-rate: expected requests/s > 0, or inf"),
    (["--request-rate", "nan"], "argument --request-rate"),
    (["--block-size", "24"], "argument --block-size: expected a power of two from 1 to 256"),
    (["--num-gpu-blocks-override", "1"], "argument --num-gpu-blocks-override: expected a whole number of blocks >= 2"),
    (["--tensor-parallel-size", "3"], "argument --tensor-parallel-size: invalid choice"),
    (["--batching", "magic"], "argument --batching: invalid choice"),
    (["--kv-cache-dtype", "int4"], "argument --kv-cache-dtype: invalid choice"),
    (["--input-dist", "zipf"], "argument --input-dist: invalid choice"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
])
def test_bad_flags_are_refused_by_argparse_naming_the_flag(capsys, argv, needle):
    code, err = fail(capsys, "sim", *argv)
    assert code == 2
    assert needle in err


@pytest.mark.parametrize(("argv", "needle"), [
    (["--max-num-batched-tokens", "100"],
     "argument --max-num-batched-tokens: 100 is not allowed: at least --max-num-seqs (1,024)"),
    (["--gpu", "l40s", "--max-num-seqs", "4096"],
     "--max-num-batched-tokens = 2048 is not allowed: at least --max-num-seqs (4,096)"),
    (["--no-enable-chunked-prefill"], "--max-num-batched-tokens = 8192 is not allowed: at least --max-model-len"),
    (["--gpu", "tpu-v9"], "unknown GPU profile 'tpu-v9'"),
    (["--gpu", "a100"], "unknown GPU profile 'a100': it could be a100-80gb, a100-80gb-pcie, a100-40gb or a100-40gb-pcie; "
                        "name one."),
    (["--model", "llama-3.1-70b"], "Set --tensor-parallel-size to 2"),
    (["--input-dist", "uniform", "--input-len-min", "300", "--input-len-max", "100"],
     "argument --input-len-max: 100 is not allowed"),
    (["--max-model-len", "200k"], "200000 is longer than Llama 3.1 8B's context (131072 tokens)"),
    (["--max-model-len", "1.5K"], "argument --max-model-len: expected a whole number of tokens > 0"),
    (["--num-gpu-blocks-override", "90000"], "argument --num-gpu-blocks-override: 90000 is not allowed: at most 28,009"),
    (["--max-concurrency", "0"], "argument --max-concurrency: expected a whole number >= 1"),
    (["--burstiness", "0"], "argument --burstiness: expected a burstiness > 0"),
    (["--random-range-ratio", "1"], "argument --random-range-ratio: expected a ratio in [0, 1)"),
    (["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"], "give both --ramp-up-start-rps and --ramp-up-end-rps"),
    (["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "5", "--ramp-up-end-rps", "2"], "below the start rate"),
    (["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2", "--request-rate", "3"],
     "argument --request-rate: not allowed with --ramp-up-strategy"),
    (["--dataset-name", "sharegpt"], "argument --dataset-name: sharegpt needs --dataset-path FILE"),
    (["--dataset-name", "random", "--dataset-path", "x.json"], "argument --dataset-path: not allowed with --dataset-name random"),
    (["--num-prompts", "20000000"], "argument --num-prompts: expected a whole number from 1 to 10,000,000"),
    (["--long-prefill-token-threshold", "5000", "--max-model-len", "4096"],
     "argument --long-prefill-token-threshold: 5000 is not allowed"),
    (["--workload", "missing.jsonl"], "missing.jsonl: cannot read the trace file"),
    (["--workload", "t.jsonl", "--burstiness", "3"], "argument --burstiness: not allowed with a trace"),
    (["--scenario", "missing.toml"], "missing.toml: cannot read the scenario file"),
    (["--per-request", "/no/such/dir/r.csv"], "argument --per-request: cannot write /no/such/dir/r.csv"),
    (["--per-request", "-", "--json"], "argument --per-request: - (standard output) is not allowed with --json"),
])
def test_bad_values_are_one_line_user_errors(capsys, argv, needle):
    small = [] if "--workload" in argv else ["--num-prompts", "5"]
    code, err = fail(capsys, "sim", *small, *argv)
    assert code == 2
    assert needle in err
    assert err.startswith(("batchtui: error: ", "batchtui sim: error: ")) and err.count("\n") == 1


# -- sweep -------------------------------------------------------------------------------------


SWEEP = ["sweep", "--num-prompts", "80", "--input-len", "256", "--output-len", "32"]


def test_sweep_table_knee_and_chart(capsys):
    code, out, _ = run(capsys, *SWEEP, "--request-rates", "10,2,40,inf,160")
    assert code == 0
    lines = out.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:3] == ["rate", "req/s", "out"])
    rows = lines[head + 2: head + 7]
    assert [r.split()[0] for r in rows] == ["2", "10", "40", "160", "inf"]  # sorted, inf last
    assert sum("<- knee" in r for r in rows) == 1
    assert "Knee at rate" in out
    assert "TTFT p99 (ms, log scale)" in out and "output throughput (tok/s)" in out
    chart = lines[lines.index("TTFT p99 (ms, log scale)"):]
    assert sum(l.count("*") for l in chart[1:-3]) == 1  # the knee, marked once


def test_sweep_json_and_csv(capsys, tmp_path):
    path = tmp_path / "sweep.csv"
    d = run_json(capsys, *SWEEP, "--request-rates", "2,8,inf", "--csv", str(path))
    assert d["swept"] == "request_rate"
    assert [p["request_rate"] for p in d["points"]] == [2, 8, "inf"]
    for p in d["points"]:
        for key in POINT_KEYS + OUR_KEYS:
            assert key in p
    assert d["knee_latency"] == "p99_ttft_ms"
    rows = list(csv.DictReader(path.open()))
    assert [r["request_rate"] for r in rows] == ["2", "8", "inf"]
    assert float(rows[1]["p99_ttft_ms"]) == pytest.approx(d["points"][1]["p99_ttft_ms"], rel=1e-6)
    assert {"binding_kv_cache", "binding_none", "knee"} <= set(rows[0])


def test_sweep_over_max_num_seqs(capsys):
    d = run_json(capsys, *SWEEP, "--request-rate", "inf", "--max-num-seqs-values", "4,16,64")
    assert d["swept"] == "max_num_seqs" and d["knee_latency"] == "p99_tpot_ms"
    assert [p["max_num_seqs"] for p in d["points"]] == [4, 16, 64]
    assert [p["max_running"] for p in d["points"]] == [4, 16, 64]
    tput = [p["output_throughput"] for p in d["points"]]
    assert tput == sorted(tput)


@pytest.mark.parametrize(("argv", "needle"), [
    ([], "one of the arguments --request-rates --max-num-seqs-values is required"),
    (["--request-rates", "1,,2"], "argument --request-rates: expected a comma-separated list"),
    (["--request-rates", "1,-2"], "argument --request-rates: expected requests/s > 0, or inf"),
    (["--max-num-seqs-values", "8,0"], "argument --max-num-seqs-values: expected a whole number >= 1"),
    (["--request-rates", "1,2", "--max-num-seqs-values", "8"], "not allowed with argument"),
    (["--request-rates", "1,2", "--request-rate", "3"], "argument --request-rate: not allowed with --request-rates"),
    (["--max-num-seqs-values", "8,16", "--max-num-seqs", "3"], "argument --max-num-seqs: not allowed"),
    (["--max-num-seqs-values", "8,9000"], "at least --max-num-seqs-values (9,000)"),
    (["--max-num-seqs-values", "8,16", "--batching", "static"], "static batching ignores it"),
])
def test_sweep_bad_input(capsys, argv, needle):
    code, err = fail(capsys, *SWEEP, *argv)
    assert code == 2
    assert needle in err


# -- plan --------------------------------------------------------------------------------------


PLAN = ["plan", "--num-prompts", "60", "--input-len", "256", "--output-len", "32", "--jobs", "1", "--seeds", "2"]


@pytest.fixture
def small_plan(monkeypatch):
    """Shorter steady windows and checks keep the plan's runs short in tests (the search, the
    confirmation and the replicas check are the real ones)."""
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", 40)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 0.0)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_PROMPTS", 50)
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_PROMPTS", 300)
    monkeypatch.setattr(rate_plan, "ROUTER_MIN_PER_REPLICA", 100)
    monkeypatch.setattr(rate_plan, "ROUTER_MIN_SECONDS", 1.0)


def test_plan_finds_a_rate_checks_replicas_and_prints_both_vllm_commands(capsys, small_plan):
    code, out, _ = run(capsys, *PLAN, "--ttft-p99", "60", "--tpot-p99", "9", "--peak-rate", "100")
    assert code == 0
    assert "SLO: p99 TTFT <= 60 ms and p99 TPOT <= 9 ms." in out
    words = " ".join(out.split())
    assert "Highest rate meeting the SLO:" in words and "The seeds' limits:" in words
    assert "confirmed on seeds 0, 1, 2, 3, 4, 5, 6, 7, 8 with" in words or "stepped down" in words
    assert "Replicas for a peak of 100 req/s with 20% headroom (each replica planned at 80% of " in words
    assert "ceil(100 / " in words
    assert "replicas, round-robin" in out and "replicas, least-outstanding-requests" in out
    assert "Use " in words and "above the peak" in words
    assert ("  vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 1 --kv-cache-dtype auto "
            "--gpu-memory-utilization 0.92 --block-size 16 --max-num-seqs 1024 --max-num-batched-tokens 8192 "
            "--enable-chunked-prefill --long-prefill-token-threshold 0 --no-long-prefill-token-threshold-adaptive "
            "--scheduling-policy fcfs --max-model-len 131072 --watermark 0 --scheduler-reserve-full-isl "
            "--async-scheduling "
            "--enable-prefix-caching") in out
    bench = next(line for line in out.splitlines() if "vllm bench serve" in line)
    assert "--dataset-name random --random-input-len 256 --random-output-len 32" in bench
    assert "--request-rate" in bench and "--goodput ttft:60 tpot:9" in bench
    assert "<- highest meeting the SLO" in out


def test_plan_says_why_least_outstanding_requests_has_the_longer_ttft_tail():
    """plan's replicas check explains a least-outstanding-requests p99 TTFT above round-robin's
    with each router's share of requests that reached a replica still short of an earlier first
    token (`RouterCheck.behind_prefill`), and says nothing when it is not above."""
    from batchtui.cli.cmd_plan import router_note

    def check(policy, ttft, behind):
        return rate_plan.RouterCheck(policy, 8, 20.0, {"p99_ttft_ms": ttft}, [], [2000] * 8, [], behind)

    note = router_note([check("round-robin", 167.7, 0.020), check("least-outstanding-requests", 729.8, 0.421)])
    assert note is not None and "42% of its requests" in note and "2% with round-robin" in note
    assert router_note([check("round-robin", 80.0, 0.3), check("least-outstanding-requests", 70.0, 0.5)]) is None
    assert router_note([check("round-robin", 80.0, 0.3)]) is None


def test_plan_json_is_consistent(capsys, small_plan):
    d = run_json(capsys, *PLAN, "--tpot-p99", "9", "--peak-rate", "50", "--headroom", "20%",
                 "--max-num-seqs", "128", "--gpu-memory-utilization", "0.9")
    assert d["feasible"] and d["seeds"] == [0, 1]
    rate = d["max_rate"]
    assert 0 < rate <= min(d["seed_rates"]) < d["saturated_rate"]
    assert d["spread"] == pytest.approx(max(d["seed_rates"]) - min(d["seed_rates"]))
    assert d["confirm_seeds"] == list(range(9))
    # the confirmed rate met the SLO on all nine seeds, and every rate tried above it missed
    tries = d["confirm_tries"]
    at = [t for t in tries if t["request_rate"] == rate]
    assert at and at[-1]["meets_slo"] and len(at[-1]["runs"]) == 9
    assert all(not t["meets_slo"] for t in tries if t["request_rate"] > rate)
    assert d["replicas"] >= math.ceil(50 / (0.8 * rate) - 1e-9)
    final = [c for c in d["replica_checks"] if c["replicas"] == d["replicas"]]
    assert {c["policy"] for c in final} == {"round-robin", "least-outstanding-requests"}
    assert all(c["meets_slo"] and c["p99_tpot_ms"] <= 9 for c in final)
    assert sum(final[0]["requests_per_replica"]) >= 100 * d["replicas"]
    best = d["at_max_rate"]
    assert best["meets_slo"] and best["p99_tpot_ms"] <= 9
    # the search is bracketed: some point just above the limiting seed's answer misses
    above = [p for p in d["points"] if p["request_rate"] != "inf" and p["request_rate"] > min(d["seed_rates"])]
    assert above and min(above, key=lambda p: p["request_rate"])["meets_slo"] is False
    assert "--max-num-seqs 128" in d["vllm_command"]
    assert "--gpu-memory-utilization 0.9" in d["vllm_command"]
    assert f"--request-rate {rate:.2f}" in d["vllm_bench_command"]


def test_plan_states_the_lengths_it_planned_for(capsys, small_plan):
    code, out, _ = run(capsys, *PLAN, "--tpot-p99", "9")
    assert code == 0
    assert ("Planned for prompts of 256 tokens each and answers of 32 tokens each: every request alike. The "
            "answer holds for these lengths only") in " ".join(out.split())
    varied = [*PLAN, "--tpot-p99", "9", "--input-dist", "lognormal", "--output-dist", "uniform", "--output-len-min", "8"]
    code, out, _ = run(capsys, *varied)
    words = " ".join(out.split())
    assert "Planned for prompts lognormal, sigma 0.5: mean " in words and "and answers uniform: mean " in words
    assert "this line does not send these prompts (lognormal) and answers (uniform)" in words
    d = run_json(capsys, *varied)
    lengths = d["lengths"]
    assert lengths["input"]["dist"] == "lognormal" and lengths["input"]["p99"] > 2 * lengths["input"]["p50"]
    assert lengths["output"]["dist"] == "uniform" and lengths["output"]["min"] >= 8
    assert d["predicted"]["p99_tpot_ms"] <= 9 and d["confidence"] == rate_plan.PLAN_CONFIDENCE


def test_plan_an_slo_no_rate_meets_exits_1_with_the_closest_point(capsys, small_plan):
    code, out, err = run(capsys, *PLAN, "--tpot-p99", "5")  # batch-1 decode alone takes 6 ms
    assert code == 1
    words = " ".join(out.split())
    assert "No request rate meets the SLO" in words and "faster GPU" in words
    assert "p99 TPOT" in words and "> 5 ms" in words
    code, out, _ = run(capsys, *PLAN, "--tpot-p99", "5", "--json")
    d = json.loads(out)
    assert code == 1 and d["feasible"] is False and d["closest"]["p99_tpot_ms"] > 5


def test_plan_names_the_policy_when_it_is_the_cause(capsys, small_plan):
    code, out, err = run(capsys, *PLAN, "--ttft-p99", "150", "--batching", "static", "--max-batch-size", "32")
    assert code == 1
    words = " ".join(out.split())
    assert "The cause is the batching policy (static): continuous batching" in words
    assert "faster GPU" not in words


def test_plan_a_loose_slo_is_limited_by_throughput(capsys, small_plan):
    d = run_json(capsys, *PLAN, "--num-prompts", "400", "--ttft-p99", "100000")
    assert d["limited_by"] == "throughput"
    assert d["max_rate"] < d["saturated_rate"]


def test_plan_takes_a_trace_rescaled_to_each_rate(capsys, small_plan, tmp_path):
    trace = tmp_path / "mooncake.jsonl"
    lines = [json.dumps({"timestamp": 50 * i, "input_length": 200 + 37 * (i % 7), "output_length": 20 + i % 13,
                         "hash_ids": [i % 3, 100 + i]}) for i in range(120)]
    trace.write_text("\n".join(lines) + "\n")
    d = run_json(capsys, "plan", "--workload", str(trace), "--tpot-p99", "9", "--jobs", "1", "--seeds", "2",
                 "--num-prompts", "60")
    assert d["feasible"] and d["max_rate"] > 20  # the trace's own rate is 20 req/s
    assert "--dataset-name timed_trace" in d["vllm_bench_command"]


def test_plan_offline(capsys):
    argv = ["plan", "--offline", "300", "--input-len", "512", "--output-len", "256",
            "--num-gpu-blocks-override", "4801", "--max-model-len", "4096"]
    d = run_json(capsys, *argv)
    assert d["kv_fit_max_num_seqs"] == 100  # 4800 usable blocks / 48 blocks per request
    assert d["max_num_batched_tokens"] == 16384  # vLLM's offline budget on an H100
    assert d["job_time_s"] > 0
    assert {c["max_num_seqs"] for c in d["candidates"]} == {100, 1024}
    best = min(d["candidates"], key=lambda c: c["job_time_s"])
    assert d["max_num_seqs"] == best["max_num_seqs"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "Job time for 300 requests:" in out
    # The dial by its one name, vLLM's keyword beside it.
    words = " ".join(out.split())
    assert "continuous batching, seats as below (max_num_seqs)," in words
    assert f"with {d['max_num_seqs']} seats (max_num_seqs)." in words
    assert any(line.split()[:2] == ["seats", "budget"] for line in out.splitlines() if line.strip())
    assert "LLM(model='meta-llama/Llama-3.1-8B-Instruct', tensor_parallel_size=1" in out
    assert "max_num_seqs=100" in out and "enable_prefix_caching=True" in out


def test_plan_offline_of_one_request_says_one_request_and_one_seat(capsys):
    """plan --offline 1 said "Job time for 1 requests ... with 1 seats (max_num_seqs)"."""
    code, out, _ = run(capsys, "plan", "--offline", "1", "--input-len", "64", "--output-len", "8")
    words = " ".join(out.split())
    assert code == 0 and "Job time for 1 request:" in words and "with 1 seat (max_num_seqs)." in words
    assert "holds the request at its peak (" in words


def test_an_offline_job_runs_and_prints_without_an_api_server(capsys):
    """vLLM's LLM class runs no API server: plan --offline simulated one in front (vllm serve's
    default, 1) and printed LLM(..., api_server_count=1), a keyword the LLM class does not take
    (vllm serve's own flag, not an engine argument). An offline scenario's engine now has none
    (`Scenario.engine_dials`), so the job runs as `sim --api-server-count 0` runs it, and the call
    leaves the keyword out."""
    from sim.scenario import Scenario

    assert (Scenario(offline=True).engine_config().api_server_count, Scenario().engine_config().api_server_count) \
        == (0, 1)
    job = ["--input-len", "512", "--output-len", "64"]
    d = run_json(capsys, "plan", "--offline", "200", *job)
    assert d["llm"].startswith("LLM(model=") and "api_server_count" not in d["llm"]
    same = run_json(capsys, "sim", "--num-prompts", "200", "--request-rate", "inf", *job, "--max-num-seqs",
                    str(d["max_num_seqs"]), "--max-num-batched-tokens", "16384", "--api-server-count", "0")
    assert same["duration"] == d["job_time_s"]


@pytest.mark.parametrize(("argv", "needle"), [
    ([], "give a latency SLO (--ttft-p99 MS and/or --tpot-p99 MS), or --offline N"),
    (["--ttft-p99", "0"], "argument --ttft-p99: expected a number > 0"),
    (["--ttft-p99", "100", "--headroom", "lots"], "argument --headroom: expected a percentage"),
    (["--ttft-p99", "100", "--headroom", "100%"], "argument --headroom: expected a percentage from 0 up to (not "
                                                   "including) 100, got '100%'"),
    (["--ttft-p99", "100", "--offline", "10"], "argument --ttft-p99: not allowed with --offline"),
    (["--offline", "10", "--api-server-count", "2"], "argument --api-server-count: not allowed with --offline "
                                                     "(vLLM's LLM class runs the engine with no API server"),
    (["--ttft-p99", "100", "--request-rate", "3"], "unrecognized arguments: --request-rate"),
    (["--ttft-p99", "100", "--num-prompts", "5"], "argument --num-prompts: 5 is too few to judge a rate"),
    (["--ttft-p99", "100", "--ramp-up-strategy", "linear"], "argument --ramp-up-strategy: not allowed with plan"),
])
def test_plan_bad_input(capsys, argv, needle):
    code, err = fail(capsys, "plan", *argv)
    assert code == 2
    assert needle in err


# -- steps -------------------------------------------------------------------------------------


class _Step:
    def __init__(self, number, section):
        self.number, self.title, self.section, self.minutes = number, f"Lesson {number}", section, 3


def test_steps_lists_lessons_with_marks(capsys, monkeypatch, tmp_path):
    import steps

    fake = [_Step(n, "Basics" if n <= 10 else "Tuning") for n in range(1, 21)]
    monkeypatch.setattr(steps, "open_lessons", lambda: steps.Lessons(fake))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "batchtui").mkdir()
    (tmp_path / "batchtui" / "progress.json").write_text(
        json.dumps({"version": 1, "current_step": 3, "completed": [1, 2], "answers": {}}))
    code, out, _ = run(capsys, "steps")
    assert code == 0
    assert "  [x]  1. Lesson 1 (3 min)" in out
    assert "  [ ]  3. Lesson 3 (3 min)  <- you are here" in out
    assert "Basics" in out and "Tuning" in out
    assert "2 of 20 steps done" in out
    d = run_json(capsys, "steps")
    assert [s["done"] for s in d[:3]] == [True, True, False] and d[2]["current"]


def test_steps_reports_lessons_that_do_not_load(capsys, monkeypatch):
    import steps

    def broken():
        raise steps.StepError("07-kv.md", "missing title")

    monkeypatch.setattr(steps, "open_lessons", broken)
    code, out, err = run(capsys, "steps")
    assert code == 1
    assert "07-kv.md: missing title" in err


def test_steps_lists_the_real_lessons_without_running_the_simulator(capsys, monkeypatch, tmp_path):
    """The list is the table of contents: front matter only, no figure filled."""
    import steps
    import steps.figures

    def filled(text, lab):
        raise AssertionError("batchtui steps filled a figure")

    monkeypatch.setattr(steps.figures, "fill", filled)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    d = run_json(capsys, "steps")
    summaries = steps.open_lessons().summaries
    assert [(s["number"], s["title"], s["minutes"]) for s in d] == [(s.number, s.title, s.minutes) for s in summaries]
    assert len(d) == 20 and d[0]["current"] and not any(s["done"] for s in d)


# -- the command line as a whole -----------------------------------------------------------------


def test_headless_commands_load_neither_textual_nor_rich():
    import subprocess
    import sys

    code = ("import sys; from batchtui.cli import main; "
            "rc = main(['sim', '--num-prompts', '5', '--json']); "
            "loaded = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; "
            "sys.exit(rc or (3 if loaded else 0))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_saturated_throughput_is_in_the_calibrated_range(capsys):
    # SIMULATOR.md section 2: max-num-seqs 256, budget 8192, all queued at once, 512 in / 256 out
    d = run_json(capsys, "sim", "--request-rate", "inf", "--num-prompts", "2000", *HELPDESK,
                 "--max-num-seqs", "256", "--max-num-batched-tokens", "8192")
    assert 8500 <= d["output_throughput"] <= 13000
    assert 33 <= d["request_throughput"] <= 50


def test_a_run_shown_with_a_progress_bar_gives_the_same_result(monkeypatch):
    from batchtui.cli import runner
    from sim.scenario import Scenario

    monkeypatch.setattr(runner, "SHOW_AFTER_S", 0.0)
    sc = Scenario().with_workload(num_prompts=150, request_rate=30.0)
    with runner.Runner(show_progress=False) as r:
        plain = r.run(sc)
    with runner.Runner(show_progress=True) as r:
        sliced = r.run(sc)
        assert r._progress is not None  # the bar was drawn (on stderr)
    assert sliced.metrics == plain.metrics
    assert sliced.iterations == plain.iterations


def test_one_built_parser_serves_every_command_line_of_a_process():
    """`main` parses with one parser per command per process (`parser_for`): what one command line
    gave (an appended flag, a value) is not there for the next, and each parse is as a fresh
    parser's."""
    from batchtui.cli.parser import build_parser, parser_for

    assert parser_for("search") is parser_for("search")
    lines = [["search", "--gpu-price", "h100-sxm=3", "--resume", "a.json", "--resume", "b.json"], ["search"],
             ["search", "--gpu-price", "a100-80gb=1.5"]]
    for argv in lines + lines:
        assert parser_for("search").parse_args(argv) == build_parser("search").parse_args(argv)
    assert parser_for("search").parse_args(["search"]).gpu_price == []
    assert parser_for("search").parse_args(["search"]).resume == []


def test_batchtui_alone_is_parsed_without_the_subcommands_parsers():
    """No words at all (the tutorial as a learner launches it): the tutorial's options alone are
    built, and they give what the whole parser gives; any word gets the whole parser."""
    from batchtui.cli.parser import build_parser, parser_for_line

    bare = parser_for_line([])
    assert "COMMAND" not in bare.format_usage() and bare is parser_for_line([])
    assert bare.parse_args([]) == build_parser().parse_args([])
    assert "COMMAND" in parser_for_line(["--step", "3"]).format_usage()
