"""Write tests/data/loadgens: a GuideLLM report and an aiperf profile export, in each tool's
documented schema (see batchtui/cli/loadgens.py for the fields and their sources), filled from
simulated runs.

The figures are not a measurement: each benchmark is `batchtui sim --save-result --save-detailed`
run on an H100 SXM profile whose efficiencies and host costs differ from the built-in h100-sxm
(the "GPU as measured" below, the one tests/unit/test_calibrate.py fits back), synchronous
scheduling, Llama 3.1 8B, 512 prompt and 256 output tokens a request, and its per-request TTFT,
latency and lengths summarised the way each tool summarises its own (GuideLLM: mean, median,
std_dev, percentiles of the successful requests, latencies in seconds, TTFT and ITL in ms; aiperf:
avg, p50..p99, std, ms). The rate distributions of GuideLLM (requests and output tokens per
second) have the run's mean (completed over its span, as GuideLLM's own estimator gives); their
other statistics come from one-second bins of the simulated run, not from GuideLLM's estimator.

    python tools/loadgen_fixtures.py        # rewrites tests/data/loadgens/*.json
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "tests" / "data" / "loadgens"
TRUTH = {"eta_bw": 0.72, "eta_mfu": 0.55, "eta_attn": 0.70, "overhead_s": 0.0004, "overhead_per_seq_s": 0.000025}
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
PROMPT, OUTPUT = 512, 256
NOTE = ("Not a measurement: figures simulated by batchtui (tools/loadgen_fixtures.py) on an H100 SXM profile "
        "with eta_bw 0.72, eta_mfu 0.55, eta_attn 0.70, 0.4 ms per iteration and 25 us per sequence, "
        "synchronous scheduling, Llama 3.1 8B, 512 in / 256 out; written in the tool's schema to test "
        "batchtui's reader.")

# GuideLLM sweep: (strategy, simulator flags, requests)
SWEEP = [
    ({"type_": "synchronous"}, ["--request-rate", "inf", "--max-concurrency", "1"], 20),
    ({"type_": "throughput", "max_concurrency": None}, ["--request-rate", "inf"], 300),
    ({"type_": "constant", "rate": 6.0, "max_concurrency": None}, ["--request-rate", "6", "--burstiness", "inf"], 150),
    ({"type_": "constant", "rate": 12.0, "max_concurrency": None}, ["--request-rate", "12", "--burstiness", "inf"], 150),
    ({"type_": "constant", "rate": 18.0, "max_concurrency": None}, ["--request-rate", "18", "--burstiness", "inf"], 150),
]
START = datetime(2026, 11, 30, 14, 2, 11, 530000)
AIPERF = (["--request-rate", "inf", "--max-concurrency", "32"], 200, {"concurrency": 32, "request_count": 200})


def simulate(directory: Path, name: str, flags: list[str], n: int) -> dict:
    from batchtui.cli import main

    profiles = directory / "truth.toml"
    if not profiles.exists():
        lines = ["[gpus.h100-as-measured]", 'name = "H100 as measured"', "hbm_bandwidth = 3.35e12",
                 "bf16_peak_flops = 989e12", "memory_bytes = 85.0e9", "interconnect_bandwidth = 450e9"]
        lines += [f"{k} = {v!r}" for k, v in TRUTH.items()]
        profiles.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = directory / f"{name}.json"
    with contextlib.redirect_stdout(io.StringIO()):
            code = main(["sim", "--no-async-scheduling", "--profiles", str(profiles), "--gpu", "h100-as-measured",
                     "--model", MODEL, "--num-prompts", str(n), "--random-input-len", str(PROMPT),
                     "--random-output-len", str(OUTPUT), *flags, "--save-result", "--save-detailed",
                     "--result-filename", str(path), "--json"])
    assert code == 0
    return json.loads(path.read_text())


def per_request(r: dict) -> dict:
    ttft = np.array(r["ttfts"]) * 1000
    latency = np.array(r["latencies"])
    outs = np.array(r["output_lens"], dtype=float)
    ins = np.array(r["input_lens"], dtype=float)
    itl = (latency * 1000 - ttft) / np.maximum(outs - 1, 1)
    starts = np.array(r["start_times"])  # when each was sent (after any wait for a slot under a cap)
    return {"ttft_ms": ttft, "latency_s": latency, "itl_ms": itl, "prompt": ins, "output": outs,
            "start": starts, "end": starts + latency}


def _guidellm_summary(values, weights=None) -> dict:
    values = np.asarray(values, dtype=float)
    if not len(values):
        zero = {k: 0.0 for k in ("p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999")}
        return {"mean": 0.0, "median": 0.0, "mode": 0.0, "variance": 0.0, "std_dev": 0.0, "min": 0.0, "max": 0.0,
                "count": 0, "total_sum": 0.0, "percentiles": zero, "pdf": None}
    w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)
    mean = float(np.average(values, weights=w))
    var = float(np.average((values - mean) ** 2, weights=w))
    qs = {"p001": 0.1, "p01": 1, "p05": 5, "p10": 10, "p25": 25, "p50": 50, "p75": 75, "p90": 90, "p95": 95,
          "p99": 99, "p999": 99.9}
    pct = {k: round(float(np.percentile(values, q)), 4) for k, q in qs.items()}
    values_r = np.round(values, 4)
    uniq, counts = np.unique(values_r, return_counts=True)
    return {"mean": round(mean, 4), "median": pct["p50"], "mode": float(uniq[np.argmax(counts)]),
            "variance": round(var, 6), "std_dev": round(var ** 0.5, 4), "min": round(float(values.min()), 4),
            "max": round(float(values.max()), 4), "count": int(len(values)),
            "total_sum": round(float(np.sum(values * w)), 4), "percentiles": pct, "pdf": None}


def _status(values, weights=None) -> dict:
    ok = _guidellm_summary(values, weights)
    return {"successful": ok, "incomplete": _guidellm_summary([]), "errored": _guidellm_summary([]), "total": ok}


def _rate(times, amounts, span: tuple[float, float]) -> dict:
    """A rate over the run: the mean is the amount over the span; the rest from one-second bins."""
    start, end = span
    edges = np.arange(start, end + 1.0, 1.0)
    binned, _ = np.histogram(times, bins=edges, weights=amounts) if len(edges) > 1 else (np.array([sum(amounts)]), None)
    summary = _guidellm_summary(binned)
    summary["mean"] = round(float(np.sum(amounts) / (end - start)), 4)
    summary["count"] = int(round(float(np.sum(amounts))))
    summary["total_sum"] = round(float(np.sum(amounts)), 4)
    return {"successful": summary, "incomplete": _guidellm_summary([]), "errored": _guidellm_summary([]),
            "total": summary}


def guidellm_requests(q: dict) -> list[dict]:
    """Each successful request as a GenerativeRequestStats (the fields a replay reads, with
    GuideLLM's timings in seconds since the epoch)."""
    epoch = START.timestamp()
    return [{"type_": "generative_request_stats", "request_id": f"req-{i}", "response_id": None,
             "request_args": None, "output": None,
             "info": {"request_id": f"req-{i}", "timings": {
                 "request_start": epoch + float(s), "first_token_iteration": epoch + float(s) + float(t) / 1000,
                 "last_token_iteration": epoch + float(e), "request_end": epoch + float(e),
                 "request_iterations": int(o), "token_iterations": int(o)}, "error": None},
             "input_metrics": {"total_tokens": int(n)}, "output_metrics": {"total_tokens": int(o)}}
            for i, (s, t, e, n, o) in enumerate(zip(q["start"], q["ttft_ms"], q["end"], q["prompt"], q["output"]))]


def guidellm_benchmark(index: int, strategy: dict, r: dict, run_id: str, keep_requests: bool = False) -> dict:
    """One benchmark of a report; its requests stripped (`--sample-requests 0`, as the fixture
    keeps them) unless `keep_requests` (GuideLLM's default: every one)."""
    q = per_request(r)
    span = (float(q["start"].min()), float(q["end"].max()))
    n = len(q["ttft_ms"])
    # Output tokens arrive one per iteration: spread each request's over its decode time.
    token_times = np.concatenate([np.linspace(s + t / 1000, e, int(o)) for s, t, e, o in
                                  zip(q["start"], q["ttft_ms"], q["end"], q["output"])])
    metrics = {
        "request_totals": {"successful": n, "incomplete": 0, "errored": 0, "total": n},
        "requests_per_second": _rate(q["end"], np.ones(n), span),
        "request_latency": _status(q["latency_s"]),
        "prompt_token_count": _status(q["prompt"]),
        "output_token_count": _status(q["output"]),
        "total_token_count": _status(q["prompt"] + q["output"]),
        "time_to_first_token_ms": _status(q["ttft_ms"]),
        "time_per_output_token_ms": _status(q["latency_s"] * 1000 / q["output"], q["output"]),
        "inter_token_latency_ms": _status(q["itl_ms"], q["output"] - 1),
        "output_tokens_per_second": _rate(token_times, np.ones(len(token_times)), span),
    }
    return {
        "type_": "generative_benchmark",
        "config": {"id_": f"{run_id}-{index}", "run_id": run_id, "run_index": index, "strategy": strategy,
                   "constraints": {"max_requests": {"max_num": n}}, "sample_requests": None if keep_requests else 0,
                   "profile": {"type_": "sweep", "sweep_size": len(SWEEP)},
                   "requests": {"data": [f"prompt_tokens={PROMPT},output_tokens={OUTPUT}"]},
                   "backend": {"type_": "openai_http", "target": "http://localhost:8000", "model": MODEL},
                   "environment": {"type_": "non_distributed"}},
        "metrics": metrics,
        "requests": {"successful": guidellm_requests(q) if keep_requests else [], "incomplete": [], "errored": [],
                     "total": None},
        "start_time": span[0], "end_time": span[1], "duration": round(span[1] - span[0], 4),
    }


def guidellm_report(directory: Path) -> dict:
    benches = []
    for i, (strategy, flags, n) in enumerate(SWEEP):
        r = simulate(directory, f"g{i}", flags, n)
        benches.append(guidellm_benchmark(i, strategy, r, "5b2c7f0e-sweep"))
    return {"fixture": NOTE,
            "metadata": {"version": 1, "guidellm_version": "0.6.1", "python_version": "3.12.3",
                         "platform": "Linux-6.8.0-x86_64-with-glibc2.39"},
            "args": {"target": "http://localhost:8000", "model": MODEL, "backend": "openai_http",
                     "profile": "sweep", "rate": [len(SWEEP)],
                     "data": [f"prompt_tokens={PROMPT},output_tokens={OUTPUT}"], "random_seed": 42},
            "benchmarks": benches}


def aiperf_block(values, unit: str) -> dict:
    values = np.asarray(values, dtype=float)
    out = {"unit": unit, "avg": round(float(values.mean()), 4)}
    for q in (1, 5, 10, 25, 50, 75, 90, 95, 99):
        out[f"p{q}"] = round(float(np.percentile(values, q)), 4)
    out.update({"min": round(float(values.min()), 4), "max": round(float(values.max()), 4),
                "std": round(float(values.std(ddof=1)), 4) if len(values) > 1 else 0.0})
    return out


def aiperf_export(directory: Path) -> dict:
    flags, n, loadgen = AIPERF
    r = simulate(directory, "aiperf", flags, n)
    q = per_request(r)
    duration = float(q["end"].max() - q["start"].min())
    return {
        "fixture": NOTE,
        "schema_version": "1.0", "aiperf_version": "0.3.0", "benchmark_id": "3f9c2a61d0b4",
        "request_throughput": {"unit": "requests/sec", "avg": round(n / duration, 4)},
        "request_latency": aiperf_block(q["latency_s"] * 1000, "ms"),
        "request_count": {"unit": "requests", "avg": float(n)},
        "time_to_first_token": aiperf_block(q["ttft_ms"], "ms"),
        "inter_token_latency": aiperf_block(q["itl_ms"], "ms"),
        "output_token_throughput": {"unit": "tokens/sec", "avg": round(float(q["output"].sum()) / duration, 4)},
        "output_token_throughput_per_user": aiperf_block(1000 / q["itl_ms"], "tokens/sec/user"),
        "output_sequence_length": aiperf_block(q["output"], "tokens"),
        "input_sequence_length": aiperf_block(q["prompt"], "tokens"),
        "benchmark_duration": {"unit": "sec", "avg": round(duration, 4)},
        "input_config": {
            "endpoint": {"model_names": [MODEL], "type": "chat", "streaming": True, "url": "localhost:8000"},
            "input": {"prompt": {"input_tokens": {"mean": PROMPT, "stddev": 0},
                                 "output_tokens": {"mean": OUTPUT, "stddev": 0}},
                      "random_seed": 0},
            "loadgen": loadgen,
        },
        "was_cancelled": False, "error_summary": [],
        "start_time": START.isoformat(), "end_time": (START + timedelta(seconds=duration)).isoformat(),
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for name, data in (("guidellm-benchmarks.json", guidellm_report(directory)),
                           ("profile_export_aiperf.json", aiperf_export(directory))):
            (OUT / name).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
