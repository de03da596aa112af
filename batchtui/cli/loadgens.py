"""Result files of the two other load generators serving teams use, read as `vllm bench serve`'s.

`compare` and `calibrate` take a file by what it holds, not by its name: a GuideLLM report (one
run per benchmark it holds, a sweep being several) or an aiperf profile export (one run) becomes
the same dictionary a `vllm bench serve --save-result` file is (its keys, its units: ms, tokens/s,
req/s), and `measured` replays that like any vLLM result. What a file does not record (the GPU,
the engine's dials) comes from the same flags and `--metadata`-style entries as for vLLM's files.

The schemas, as their projects document them (field names and units checked against the source;
no code of theirs is used here):

GuideLLM (github.com/vllm-project/guidellm): the `benchmarks.json` report, a
`GenerativeBenchmarksReport` (src/guidellm/benchmark/schemas/report.py; schema version 1 in
guidellm 0.4-0.6 under `schemas/generative/report.py`, version 2 from 0.7, checked at v0.7.3).
`benchmarks` is a list of `GenerativeBenchmark`s; each has `config.strategy` (the scheduling
strategy, `type_` one of synchronous, concurrent with `streams`, throughput with an optional
`max_concurrency`, constant or poisson with `rate` req/s and an optional `max_concurrency`, trace)
and `metrics` (src/guidellm/benchmark/schemas/metrics.py `GenerativeMetrics`): `request_totals`
{successful, incomplete, errored, total} and `StatusDistributionSummary`s {successful, incomplete,
errored, total} of `DistributionSummary`s {mean, median, mode, variance, std_dev, min, max,
count, total_sum, percentiles {p001, p01, p05, p10, p25, p50, p75, p90, p95, p99, p999}}
(src/guidellm/schemas/statistics.py) for `request_latency` (seconds), `time_to_first_token_ms`,
`inter_token_latency_ms` ((last token - first token) / (output tokens - 1) per request, weighted by
its output tokens - 1: vLLM's TPOT, equal to it when every answer has the same length),
`time_per_output_token_ms` (latency over all output tokens, TTFT included: not vLLM's TPOT, not
used), `prompt_token_count`, `output_token_count`, and rates over the run, `requests_per_second`
and `output_tokens_per_second` (their means are the counts over the run's span). guidellm 0.3
wrote the strategy under `args.strategy` and the totals under `request_totals`; both are read.
The model is the report's `args.model` (version 1), `config.spec.backend.model` (version 2) or the
benchmark's `config.backend.model` (0.3: `worker.backend_model`); a `gpu` entry and engine dials
may be given in the benchmark's `extras` or the report's `config.metadata.labels`. A report that
keeps every successful request (`requests.successful`, GuideLLM's default) is replayed request for
request, from each one's `info.timings.request_start` and token counts, as a vLLM file saved with
`--save-detailed`; otherwise lengths that vary are replayed with the spread their percentiles imply
(`spread`), for both tools.

aiperf (github.com/ai-dynamo/aiperf): `profile_export_aiperf.json`, a `JsonExportData`
(aiperf/common/models/export_models.py at v0.1.1, src/aiperf/common/models/export_models.py
later; docs/reference/json-export-schema.md, schema versions 1.0-1.5). Each metric is a block
{unit, avg, min, max, p1 ... p99, std}; `unit` is authoritative ("ms", "sec", "requests/sec",
"tokens/sec", "tokens", "requests"). Read: `time_to_first_token`, `inter_token_latency`
((request latency - TTFT) / (output length - 1) per request: vLLM's TPOT), `request_latency`,
`request_throughput`, `output_token_throughput`, `request_count`, `error_request_count`,
`input_sequence_length`, `output_sequence_length`, `benchmark_duration`; the load from
`input_config` (aiperf's `UserConfig`): `loadgen.request_rate` with `loadgen.request_rate_mode`
(constant or poisson, the default) and `loadgen.concurrency` (a cap on top of a rate, else the
number kept in flight), the model from `endpoint.model_names`; when `input_config` has no
`loadgen` (later schemas keep another config body there), the load and the model from the
command line the run records (`run_info.cli_command`, schema 1.3+): `--concurrency`,
`--request-rate`, `--request-rate-mode`, `--model`. The GPU from `telemetry_data` when GPU
telemetry was collected (its `gpu_name`, as nvidia-smi reports it).
"""

from __future__ import annotations

import math
from pathlib import Path

from sim.replay_lengths import Z90

from .exits import UserError
from .options import flagged

LENGTH_SPREAD = "batchtui_length_spread"
"""The one key of a converted run that vllm bench serve does not write: the lengths' spread the
tool's percentiles imply (`spread`), by "input" and "output" (a published file in tests/data
may state one its source's dataset implies: its `fidelity.unknown` says why)."""

GUIDELLM = "GuideLLM report"
AIPERF = "aiperf profile export"
VLLM = "vllm bench serve result"

# aiperf metric blocks that mark a file as its export.
AIPERF_METRICS = ("time_to_first_token", "inter_token_latency", "request_latency", "request_throughput",
                  "output_token_throughput", "request_count", "input_sequence_length", "output_sequence_length")


def kind(data: dict) -> str:
    """Which tool wrote a result object: by its keys, whatever the file is called."""
    if "completed" in data or "request_rate" in data:
        return VLLM
    if "benchmarks" in data:
        return GUIDELLM
    if any(isinstance(data.get(k), dict) and "unit" in data[k] for k in AIPERF_METRICS) or (
            "input_config" in data or "aiperf_version" in data):
        return AIPERF
    return VLLM


def runs(data: dict, path: str) -> list[tuple[str, dict]]:
    """Every run in a result object as (label, a vllm bench serve result dict)."""
    which = kind(data)
    name = Path(path).name
    if which == GUIDELLM:
        return guidellm_runs(data, path)
    if which == AIPERF:
        return [(name, aiperf_run(data, path))]
    return [(name, data)]


# -- shared ---------------------------------------------------------------------------------------


def _dict(value, where: str, what: str) -> dict:
    if not isinstance(value, dict):
        raise UserError(f"{where}: {what} is {_shown(value)}, not an object")
    return value


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _finite(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _count(value, where: str, what: str) -> int:
    number = _finite(value)
    if number is None or number < 0 or number != int(number):
        raise UserError(f"{where}: {what} = {_shown(value)} is not a whole number >= 0")
    return int(number)


def _positive(value, where: str, what: str) -> float:
    number = _finite(value)
    if number is None or number <= 0:
        raise UserError(f"{where}: {what} = {_shown(value)} is not a number > 0")
    return number


def _cap(value, where: str, what: str) -> int | None:
    if value is None:
        return None
    number = _count(value, where, what)
    if number < 1:
        raise UserError(f"{where}: {what} = {_shown(value)} is not a whole number >= 1 (or null: no cap)")
    return number


def spread(stats: dict) -> dict | None:
    """The lengths' spread a file's own percentiles imply, as a lognormal (median, sigma) clipped
    to the observed range: {"median", "sigma", "low", "high"}; None when they do not vary (or the
    file gives no percentiles). `measured` replays lengths drawn from it instead of the mean."""
    p10, p50, p90 = (_finite(stats.get(k)) for k in ("p10", "p50", "p90"))
    low, high = _finite(stats.get("min")), _finite(stats.get("max"))
    if None in (p10, p50, p90) or not 0 < p10 <= p50 <= p90 or p90 == p10:
        return None
    sigma = math.log(p90 / p10) / (2 * Z90)
    if not 0 < sigma <= 4:  # the simulator's largest shape
        return None
    low = max(1, math.floor(low)) if low is not None and low >= 1 else 1
    high = math.ceil(high) if high is not None and high >= p90 else 0
    return {"median": max(1, round(p50)), "sigma": sigma, "low": low, "high": high}


def _labels(*sources) -> dict:
    """String entries (a `gpu`, engine dials such as `max-num-seqs`) from the objects a tool keeps
    a user's own notes in, as `--metadata` entries of a vLLM file: the first object that holds a
    key wins."""
    out = {}
    for source in sources:
        if not isinstance(source, dict):
            continue
        for key, value in source.items():
            if isinstance(key, str) and isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out.setdefault(key, str(value))
    return out


# -- GuideLLM -------------------------------------------------------------------------------------

# vLLM's key -> (GuideLLM metric, statistic, factor to vLLM's unit)
GUIDELLM_FIGURES = {
    "request_throughput": ("requests_per_second", "mean", 1.0),
    "output_throughput": ("output_tokens_per_second", "mean", 1.0),
    "mean_ttft_ms": ("time_to_first_token_ms", "mean", 1.0),
    "median_ttft_ms": ("time_to_first_token_ms", "median", 1.0),
    "p99_ttft_ms": ("time_to_first_token_ms", "p99", 1.0),
    "mean_tpot_ms": ("inter_token_latency_ms", "mean", 1.0),
    "median_tpot_ms": ("inter_token_latency_ms", "median", 1.0),
    "p99_tpot_ms": ("inter_token_latency_ms", "p99", 1.0),
    "mean_e2el_ms": ("request_latency", "mean", 1000.0),
    "median_e2el_ms": ("request_latency", "median", 1000.0),
    "p99_e2el_ms": ("request_latency", "p99", 1000.0),
}


def _summary_value(metrics: dict, name: str, stat: str, where: str) -> float | None:
    """The successful requests' `stat` of GuideLLM metric `name`, or None when the file has none
    (a metric without any successful observation, such as TPOT with one-token answers)."""
    block = metrics.get(name)
    if block is None:
        return None
    block = _dict(block, where, f"metrics.{name}")
    summary = block.get("successful")
    if summary is None:
        return None
    summary = _dict(summary, where, f"metrics.{name}.successful")
    if summary.get("count") == 0:
        return None
    if stat == "p99":
        percentiles = summary.get("percentiles")
        value = percentiles.get("p99") if isinstance(percentiles, dict) else None
    else:
        value = summary.get(stat)
    return _amount(value, where, f"metrics.{name}.successful.{stat}")


def _amount(value, where: str, what: str) -> float | None:
    """A figure a file gives: None when absent, else a finite number >= 0 (or a one-line error
    naming `what`)."""
    if value is None:
        return None
    number = _finite(value)
    if number is None or number < 0:
        raise UserError(f"{where}: {what} = {_shown(value)} is not a number >= 0")
    return number


def _guidellm_model(data: dict, bench: dict) -> str | None:
    """The model a GuideLLM benchmark ran, wherever its version keeps it."""
    candidates = []
    args = data.get("args")
    if isinstance(args, dict):
        candidates.append(args.get("model"))
    config = data.get("config")
    if isinstance(config, dict):
        spec = config.get("spec")
        backend = spec.get("backend") if isinstance(spec, dict) else None
        if isinstance(backend, dict):
            candidates.append(backend.get("model"))
    bench_config = bench.get("config")
    if isinstance(bench_config, dict) and isinstance(bench_config.get("backend"), dict):
        candidates.append(bench_config["backend"].get("model"))
    worker = bench.get("worker")
    if isinstance(worker, dict):
        candidates.append(worker.get("backend_model"))
    return next((c.strip() for c in candidates if isinstance(c, str) and c.strip()), None)


def _guidellm_load(strategy: dict, where: str) -> tuple[float, float, int | None, str]:
    """(rate, burstiness, cap, words) of a GuideLLM scheduling strategy, as vllm bench serve would
    have sent it: synchronous is one in flight at rate inf, concurrent N streams at most N, a
    throughput run everything at once (under its max_concurrency, if set), constant and poisson a
    rate with evenly spaced or Poisson gaps."""
    kind_ = strategy.get("type_")
    if kind_ == "synchronous":
        return math.inf, 1.0, 1, "synchronous"
    if kind_ == "concurrent":
        streams = _cap(strategy.get("streams"), where, "config.strategy.streams")
        if streams is None:
            raise UserError(f"{where}: a concurrent strategy without its number of streams (config.strategy.streams)")
        return math.inf, 1.0, streams, f"concurrent@{streams}"
    if kind_ == "throughput":
        cap = _cap(strategy.get("max_concurrency"), where, "config.strategy.max_concurrency")
        return math.inf, 1.0, cap, f"throughput@{cap or 'unlimited'}"
    if kind_ in ("constant", "poisson"):
        if strategy.get("rate") is None:
            raise UserError(f"{where}: a {kind_} strategy without its rate (config.strategy.rate, requests/s)")
        rate = _positive(strategy.get("rate"), where, "config.strategy.rate")
        cap = _cap(strategy.get("max_concurrency"), where, "config.strategy.max_concurrency")
        return rate, (math.inf if kind_ == "constant" else 1.0), cap, f"{kind_}@{rate:g}"
    if kind_ == "trace":
        raise UserError(f"{where}: GuideLLM's trace strategy sends requests at the times of its trace file, which "
                        + flagged("the report does not hold; replay that trace with batchtui sim {workload.trace_path} "
                                  "instead"))
    raise UserError(f"{where}: unknown GuideLLM strategy {_shown(kind_)} (config.strategy.type_: synchronous, "
                    "concurrent, throughput, constant or poisson)")


def _guidellm_requests(bench: dict, completed: int, where: str) -> dict:
    """vllm bench serve's per-request arrays (`input_lens`, `output_lens`, `start_times`) from the
    successful requests a report keeps (`requests.successful`, each a `GenerativeRequestStats`:
    `info.timings.request_start`, `input_metrics.total_tokens`, `output_metrics.total_tokens`),
    when it keeps every one (GuideLLM's default): the run is then replayed request for request.
    Empty when it keeps a sample (`--sample-requests`) or none."""
    requests = bench.get("requests")
    kept = requests.get("successful") if isinstance(requests, dict) else None
    if not isinstance(kept, list) or not kept or len(kept) != completed:
        return {}
    ins, outs, starts = [], [], []
    for i, req in enumerate(kept, 1):
        info = req.get("info") if isinstance(req, dict) else None
        timings = info.get("timings") if isinstance(info, dict) else None
        start = _finite(timings.get("request_start")) if isinstance(timings, dict) else None
        n_in, n_out = ((req.get(k) or {}).get("total_tokens") if isinstance(req.get(k), dict) else None
                       for k in ("input_metrics", "output_metrics"))
        if start is None or _finite(n_in) is None or _finite(n_out) is None:
            raise UserError(f"{where}: successful request {i} has no usable request_start, input_metrics.total_tokens "
                            f"or output_metrics.total_tokens ({_shown(start)}, {_shown(n_in)}, {_shown(n_out)})")
        ins.append(n_in)
        outs.append(n_out)
        starts.append(start)
    return {"input_lens": ins, "output_lens": outs, "start_times": starts, "errors": [""] * len(kept)}


def guidellm_runs(data: dict, path: str) -> list[tuple[str, dict]]:
    benches = data.get("benchmarks")
    if not isinstance(benches, list) or not benches:
        raise UserError(f"{path}: a GuideLLM report without benchmarks (its 'benchmarks' list is "
                        f"{'empty' if isinstance(benches, list) else _shown(benches)})")
    name = Path(path).name
    config = data.get("config")
    report_labels = config.get("metadata", {}).get("labels") if isinstance(config, dict) and isinstance(
        config.get("metadata"), dict) else None
    out = []
    for i, bench in enumerate(benches, 1):
        where = f"{path}: benchmark {i}"
        bench = _dict(bench, f"{path}", f"benchmark {i}")
        bench_config = bench.get("config") if isinstance(bench.get("config"), dict) else {}
        strategy = bench_config.get("strategy")
        if strategy is None and isinstance(bench.get("args"), dict):  # guidellm 0.3
            strategy = bench["args"].get("strategy")
        if strategy is None:
            raise UserError(f"{where}: no scheduling strategy (config.strategy); it is not a complete GuideLLM "
                            "benchmark")
        strategy = _dict(strategy, where, "config.strategy")
        rate, burstiness, cap, words = _guidellm_load(strategy, where)
        metrics = _dict(bench.get("metrics"), where, "metrics")
        totals = metrics.get("request_totals", bench.get("request_totals"))
        totals = _dict(totals, where, "metrics.request_totals")
        completed = _count(totals.get("successful"), where, "metrics.request_totals.successful")
        failed = _count(totals.get("errored", 0), where, "metrics.request_totals.errored")
        lengths, spreads = {}, {}
        for key, metric in (("total_input_tokens", "prompt_token_count"),
                            ("total_output_tokens", "output_token_count")):
            block = metrics.get(metric)
            summary = block.get("successful") if isinstance(block, dict) else None
            total = summary.get("total_sum") if isinstance(summary, dict) else None
            if total is None:
                raise UserError(f"{where}: no metrics.{metric}.successful.total_sum (the {'prompt' if 'input' in key else 'output'} "
                                "lengths); it is not a complete GuideLLM benchmark")
            number = _finite(total)
            if number is None or number < 0:
                raise UserError(f"{where}: metrics.{metric}.successful.total_sum = {_shown(total)} is not a number >= 0")
            lengths[key] = number
            percentiles = summary.get("percentiles") if isinstance(summary.get("percentiles"), dict) else {}
            summary_spread = spread({**summary, **percentiles})
            if summary_spread:
                spreads["input" if "input" in key else "output"] = summary_spread
        result = {"completed": completed, "failed": failed, **lengths,
                  "request_rate": "inf" if math.isinf(rate) else rate, "burstiness": burstiness,
                  "max_concurrency": cap}
        duration = _finite(bench.get("duration"))
        if duration is not None:
            result["duration"] = duration
        for key, (metric, stat, factor) in GUIDELLM_FIGURES.items():
            value = _summary_value(metrics, metric, stat, where)
            if value is not None:
                result[key] = value * factor
        if spreads:
            result[LENGTH_SPREAD] = spreads
        result.update(_guidellm_requests(bench, completed, where))
        model = _guidellm_model(data, bench)
        if model:
            result["model_id"] = model
        result.update({k: v for k, v in _labels(bench.get("extras"), report_labels).items() if k not in result})
        out.append((f"{name}#{i} {words}", result))
    return out


# -- aiperf ---------------------------------------------------------------------------------------

TIME_UNITS = {"ns": 1e-6, "nanoseconds": 1e-6, "us": 1e-3, "microseconds": 1e-3, "ms": 1.0,
              "milliseconds": 1.0, "s": 1000.0, "sec": 1000.0, "seconds": 1000.0}
PER_SECOND = ("/sec", "/s", "/second", " per second")

# vLLM's key -> (aiperf metric, statistic, what the unit must be: "time" in ms, "rate" per second)
AIPERF_FIGURES = {
    "request_throughput": ("request_throughput", "avg", "rate"),
    "output_throughput": ("output_token_throughput", "avg", "rate"),
    "mean_ttft_ms": ("time_to_first_token", "avg", "time"),
    "median_ttft_ms": ("time_to_first_token", "p50", "time"),
    "p99_ttft_ms": ("time_to_first_token", "p99", "time"),
    "mean_tpot_ms": ("inter_token_latency", "avg", "time"),
    "median_tpot_ms": ("inter_token_latency", "p50", "time"),
    "p99_tpot_ms": ("inter_token_latency", "p99", "time"),
    "mean_e2el_ms": ("request_latency", "avg", "time"),
    "median_e2el_ms": ("request_latency", "p50", "time"),
    "p99_e2el_ms": ("request_latency", "p99", "time"),
}


def _aiperf_value(data: dict, name: str, stat: str, unit_kind: str, where: str) -> float | None:
    """Metric `name`'s `stat` in the project's units (ms for times, per second for rates), or None
    when the export has no such metric or statistic."""
    block = data.get(name)
    if block is None:
        return None
    block = _dict(block, where, name)
    number = _amount(block.get(stat), where, f"{name}.{stat}")
    if number is None:
        return None
    unit = block.get("unit")
    unit_text = unit.strip().lower() if isinstance(unit, str) else ""
    if unit_kind == "time":
        if unit_text not in TIME_UNITS:
            raise UserError(f"{where}: {name} has unit {_shown(unit)}; a time in ns, us, ms or sec expected")
        return number * TIME_UNITS[unit_text]
    if unit_kind == "rate":
        if not unit_text.endswith(PER_SECOND):
            raise UserError(f"{where}: {name} has unit {_shown(unit)}; a rate per second expected")
        return number
    if unit_text not in ("tokens", "requests", ""):
        raise UserError(f"{where}: {name} has unit {_shown(unit)}; {unit_kind} expected")
    return number


def _aiperf_gpu(data: dict) -> str | None:
    """The GPU aiperf's telemetry saw (its nvidia-smi name), when every GPU it saw is the same."""
    telemetry = data.get("telemetry_data")
    endpoints = telemetry.get("endpoints") if isinstance(telemetry, dict) else None
    names = set()
    if isinstance(endpoints, dict):
        for endpoint in endpoints.values():
            gpus = endpoint.get("gpus") if isinstance(endpoint, dict) else None
            for gpu in (gpus.values() if isinstance(gpus, dict) else ()):
                if isinstance(gpu, dict) and isinstance(gpu.get("gpu_name"), str) and gpu["gpu_name"].strip():
                    names.add(gpu["gpu_name"].strip())
    return names.pop() if len(names) == 1 else None


# aiperf profile's flags for the load and the model, as its CLI options reference spells them
COMMAND_FLAGS = {"--concurrency": "concurrency", "--request-rate": "request_rate",
                 "--request-rate-mode": "request_rate_mode", "-m": "model", "--model": "model",
                 "--model-names": "model"}


def _aiperf_command(data: dict, config: dict) -> dict | None:
    """The load and model from the command line the export records (`run_info.cli_command`,
    schema 1.3; `input_config.cli_command` before), as loadgen's keys; None without one."""
    import shlex

    run_info = data.get("run_info")
    text = run_info.get("cli_command") if isinstance(run_info, dict) else None
    if not isinstance(text, str):
        text = config.get("cli_command")
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    out: dict = {}
    for i, word in enumerate(words):
        flag, sep, value = word.partition("=")
        if flag not in COMMAND_FLAGS:
            continue
        if not sep and i + 1 < len(words):
            value = words[i + 1]
        key = COMMAND_FLAGS[flag]
        if key in ("concurrency", "request_rate"):
            try:
                out[key] = float(value)  # checked as loadgen's own values are
            except ValueError:
                out[key] = value
        elif key == "model":
            out[key] = value.split(",")[0].strip()
        else:
            out[key] = value
    return out if "concurrency" in out or "request_rate" in out else None


def _aiperf_model(config: dict) -> str | None:
    endpoint = config.get("endpoint")
    names = endpoint.get("model_names") if isinstance(endpoint, dict) else None
    if isinstance(names, str):
        names = [names]
    if isinstance(names, list) and names and isinstance(names[0], str) and names[0].strip():
        return names[0].strip()
    models = config.get("models")  # later versions: models.items[].name
    items = models.get("items") if isinstance(models, dict) else None
    if isinstance(items, list) and items and isinstance(items[0], dict) and isinstance(items[0].get("name"), str):
        return items[0]["name"].strip() or None
    return None


def aiperf_run(data: dict, path: str) -> dict:
    where = str(path)
    config = data.get("input_config")
    if config is None:
        raise UserError(f"{where}: an aiperf export without its input_config (the load it ran: loadgen.concurrency "
                        "or loadgen.request_rate); it cannot be replayed")
    config = _dict(config, where, "input_config")
    inputs = config.get("input") if isinstance(config.get("input"), dict) else {}
    if inputs.get("fixed_schedule") or inputs.get("custom_dataset_type") in ("mooncake_trace",):
        raise UserError(f"{where}: aiperf replayed a schedule from its input file, which the export does not hold; "
                        + flagged("replay that trace with batchtui sim {workload.trace_path} instead"))
    loadgen = config.get("loadgen")
    command = _aiperf_command(data, config)
    if loadgen is None and command:
        loadgen = command  # later schemas: the load is in the command line the run records
    if loadgen is None:
        raise UserError(f"{where}: its input_config has no loadgen (loadgen.concurrency or loadgen.request_rate: "
                        "the load it ran) and it records no aiperf command line; it cannot be replayed")
    loadgen = _dict(loadgen, where, "input_config.loadgen")

    def name(key: str) -> str:  # how a message names a setting: where the file keeps it
        return f"input_config.loadgen.{key}" if config.get("loadgen") is not None else \
            f"the recorded command's --{key.replace('_', '-')}"
    concurrency = _cap(loadgen.get("concurrency"), where, name("concurrency"))
    if loadgen.get("request_rate") is not None:
        rate = _positive(loadgen["request_rate"], where, name("request_rate"))
        mode = str(loadgen.get("request_rate_mode") or "poisson").strip().lower()
        if mode not in ("constant", "poisson"):
            raise UserError(f"{where}: {name('request_rate_mode')} = {_shown(loadgen.get('request_rate_mode'))} "
                            "with a rate; constant or poisson expected")
        burstiness = math.inf if mode == "constant" else 1.0
    else:
        # No rate: aiperf keeps `concurrency` requests in flight (1 when it is not given).
        rate, burstiness, concurrency = math.inf, 1.0, concurrency or 1
    count = _aiperf_value(data, "request_count", "avg", "count", where)
    if count is None:
        raise UserError(f"{where}: no request_count (the number of requests served); it is not a complete aiperf "
                        "profile export")
    completed = _count(count, where, "request_count.avg")
    failed = _aiperf_value(data, "error_request_count", "avg", "count", where) or 0.0
    result = {"completed": completed, "failed": int(failed), "request_rate": "inf" if math.isinf(rate) else rate,
              "burstiness": burstiness, "max_concurrency": concurrency}
    for key, metric in (("total_input_tokens", "input_sequence_length"),
                        ("total_output_tokens", "output_sequence_length")):
        mean = _aiperf_value(data, metric, "avg", "tokens", where)
        if mean is None:
            raise UserError(f"{where}: no {metric} (the {'prompt' if 'input' in key else 'output'} lengths); it is not "
                            "a complete aiperf profile export")
        result[key] = mean * completed
        block = data.get(metric)
        block_spread = spread(block) if isinstance(block, dict) else None
        if block_spread:
            result.setdefault(LENGTH_SPREAD, {})["input" if "input" in key else "output"] = block_spread
    duration = _aiperf_value(data, "benchmark_duration", "avg", "time", where)
    if duration is not None:
        result["duration"] = duration / 1000
    for key, (metric, stat, unit_kind) in AIPERF_FIGURES.items():
        value = _aiperf_value(data, metric, stat, unit_kind, where)
        if value is not None:
            result[key] = value
    model = _aiperf_model(config) or (command or {}).get("model")
    if model:
        result["model_id"] = model
    gpu = _aiperf_gpu(data)
    if gpu:
        result["gpu"] = gpu
    seed = inputs.get("random_seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        result["seed"] = seed
    return result
