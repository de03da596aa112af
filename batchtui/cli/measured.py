"""Measured runs: result files written by `vllm bench serve --save-result` (or by `batchtui sim
--save-result`, which writes the same keys), each turned back into a scenario that replays it.

Traffic comes from the file: with `--save-detailed` its per-request arrays (`input_lens`,
`output_lens`, `start_times`, `errors`) are replayed as a trace, request for request; otherwise
the run is redrawn as `vllm bench serve` drew it: `completed` requests of the mean lengths
(`total_input_tokens / completed`, `total_output_tokens / completed`; the outputs spread lognormal
around their mean when the file's E2EL, TTFT and TPOT percentiles imply a spread,
`sim.replay_lengths`) at `request_rate` with `burstiness` (or its ramp-up). A run capped with `--max-concurrency` (the file's `max_concurrency`)
is replayed with the same cap: the simulated client holds requests back until one finishes (a
detailed run at rate inf queues them all at 0 in the order they were sent). Engine dials come from the command line's flags, else from
`--metadata KEY=VALUE` entries in the file (keys as the flags or dials are spelled:
`max-num-seqs=256`, `max_num_batched_tokens=8192`, `random_range_ratio=0.1`), else from the
simulator's own `engine` table (files `batchtui sim` wrote), else vLLM's defaults for the GPU. A
file of an older vLLM build may state its engine's host costs (`overhead-ms=0.98`,
`overhead-per-seq-us=90`: `HOST_METADATA`), which the replay prices instead of the profiles', and
the small kernels its per-head query and key norms ran (`qk-norm-kernels=3`: `BUILD_METADATA`).

A GuideLLM report or an aiperf profile export is read the same way, once `loadgens` has turned it
into vllm bench serve's keys (a GuideLLM sweep gives one run per benchmark).
"""

from __future__ import annotations

import argparse
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

from sim.dials import find
from sim.replay_lengths import lognormal_lengths, output_lengths
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec

from sim.dials import flag_of

from . import options as o
from .exits import UserError
from .loadgens import LENGTH_SPREAD, runs

# Keys every result needs, and what each is for (said when one is missing): its traffic.
REQUIRED = {
    "completed": "the number of requests served",
    "total_input_tokens": "the prompt lengths",
    "total_output_tokens": "the output lengths",
    "request_rate": "the traffic's rate",
}
# What a result measured: it needs one of them at least (vllm bench serve writes them all; a figure
# copied from a report, such as tests/data/published, has the ones its source gave).
MEASURED_KEYS = ("output_throughput", "request_throughput", "median_ttft_ms", "median_tpot_ms",
                 "mean_e2el_ms", "median_e2el_ms")
# Metrics shown side by side by `compare`, when the file has them.
SHOWN = ("request_throughput", "output_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
         "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms")
DETAILED = ("input_lens", "output_lens", "start_times")
# The result file's own key for each setting of the replay's traffic it states: what a refusal of
# one names (the count of requests is `completed`'s, or the served requests of the arrays, as many).
FILE_KEYS = {"workload.num_prompts": "completed", "workload.request_rate": "request_rate",
             "workload.burstiness": "burstiness", "workload.max_concurrency": "max_concurrency",
             "workload.ramp_up_strategy": "ramp_up_strategy", "workload.ramp_up_start_rps": "ramp_up_start_rps",
             "workload.ramp_up_end_rps": "ramp_up_end_rps"}
# Metadata keys that are traffic, not engine dials.
# The client's costs are read as their flags read them (ms written, seconds kept: the dials' flag_scale).
TRAFFIC_METADATA = {"random_range_ratio": o.range_ratio,
                    "client_request_ms": o.dial_type(find("workload.client_request_s")),
                    "client_token_ms": o.dial_type(find("workload.client_token_s"))}
# The measured engine's own host costs, where a file states them (an older vLLM build's, which
# the profiles' defaults for today's vLLM do not describe; tests/data/published gives each its
# source): the engine core's fixed cost per iteration in ms and its cost per sequence in us, kept
# in seconds as the scenario's `overhead_s` and `overhead_per_seq_s`.
HOST_METADATA = {"overhead_ms": ("overhead_s", 1e-3), "overhead_per_seq_us": ("overhead_per_seq_s", 1e-6)}
# Likewise the kernels the measured build ran where the profiles' count for today's vLLM does not
# describe it (tests/data/published gives each its source): a layer's extra small kernels for a
# model's per-head query and key norms, kept as the scenario's `qk_norm_kernels`
# (`sim.profiles.QK_NORM_KERNELS`).
BUILD_METADATA = {"qk_norm_kernels": "qk_norm_kernels"}


@dataclass(frozen=True)
class MeasuredRun:
    """One result file: the scenario that replays it and every number it measured."""

    path: str
    label: str
    scenario: Scenario
    metrics: dict
    """The file's numeric metrics (vllm bench serve's keys)."""
    replayed: bool
    """True when its per-request arrays are replayed as a trace."""
    rate: float
    """The configured request rate (inf: all at once)."""
    hardware: str = ""
    """Where it is simulated: the model on the GPU (`describe_hardware`)."""
    spec_positions: tuple[float, ...] = ()
    """`spec_decode_per_position_acceptance_rates`, when the file has them."""

    def drafts(self):
        """Its speculative decoding counts (a `sim.speculative.MeasuredDrafts`), or None when the
        file has no spec_decode keys."""
        from sim.speculative import MeasuredDrafts

        m = self.metrics
        if "spec_decode_num_drafts" not in m:
            return None
        accepted = m.get("spec_decode_accepted_tokens")
        if accepted is None and "spec_decode_acceptance_length" in m:
            accepted = (m["spec_decode_acceptance_length"] - 1) * m["spec_decode_num_drafts"]
        return MeasuredDrafts(int(m["spec_decode_num_drafts"]), round(accepted or 0), self.spec_positions)

    def describe(self) -> str:
        w = self.scenario.workload
        capped = f", at most {w.max_concurrency} in flight" if w.max_concurrency else ""
        if self.replayed:
            return f"{self.metrics['completed']:.0f} requests replayed from the file{capped}"
        return (f"{w.num_prompts} requests at {_rate_text(self.rate)} req/s, {_mean_text(w.input)} in / "
                f"{_mean_text(w.output)} out{capped}")


def _mean_text(spec: LengthSpec) -> str:
    """A replayed length: the mean, or around the median a file's percentiles give or imply
    (`sim.replay_lengths`)."""
    return f"~{spec.mean} (lognormal, sigma {spec.sigma:.2f})" if spec.dist == "lognormal" else f"{spec.mean}"


def _rate_text(rate: float) -> str:
    return "inf" if math.isinf(rate) else f"{rate:g}"


def read_result(path: str) -> dict:
    """A result file's JSON object (as the tool that wrote it keeps it), or a UserError that
    names the file."""
    from sim.userfiles import FileRefused, read_text

    try:
        text = read_text(path, "result")
    except FileRefused as exc:
        if exc.not_text:
            raise UserError(f"{path}: not a result of vllm bench serve, GuideLLM or aiperf ({exc.why})") from None
        raise
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not a result of vllm bench serve, GuideLLM or aiperf: invalid JSON at line {exc.lineno} "
                        f"({exc.msg})") from None
    except RecursionError:
        raise UserError(f"{path}: not a result of vllm bench serve, GuideLLM or aiperf: nested too deeply") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a result of vllm bench serve, GuideLLM or aiperf (a JSON object of results expected)")
    return data


def _json_int(text: str) -> int | float:
    """A JSON integer; one too long for a float (past 1e308, or past Python's 4,300 digits) is
    read as infinity, which every number check refuses, instead of failing in the middle."""
    return int(text) if len(text) <= 300 else float(text)


def read_runs(path: str) -> list[tuple[str, dict]]:
    """Every run a result file holds, as (label, vllm bench serve's keys): one for a vLLM or an
    aiperf file, one per benchmark for a GuideLLM report (`loadgens`)."""
    return runs(read_result(path), path)


def first_run(path: str) -> dict:
    """The first run of a result file, in vllm bench serve's keys (where a command finds the
    model when --model is not given)."""
    return read_runs(path)[0][1]


def _number(data: dict, key: str, path: str, *, allow_inf: bool = False) -> float:
    if key not in data:
        raise UserError(f"{path}: the result has no {key!r} key ({REQUIRED.get(key, key)}); it is not a "
                        "complete vllm bench serve --save-result file")
    value = data[key]
    if allow_inf and isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UserError(f"{path}: {key} = {value!r} is not a number >= 0")
    return float(value)


def metadata_dials(data: dict, path: str) -> tuple[dict, dict]:
    """Engine dials and the run's other settings from `--metadata` entries (strings) or, for a
    file `batchtui sim` wrote, from its `engine` table: (dials by name, traffic and the measured
    engine's host costs and kernels by name: `TRAFFIC_METADATA`, `HOST_METADATA`, `BUILD_METADATA`)."""
    flags = {f.dial: f for f in o.engine_flags()}
    spellings = {}
    for f in flags.values():
        for name in (f.dial, f.flag.lstrip("-"), f.flag.lstrip("-").replace("-", "_")):
            spellings[name] = f
    dials, traffic = {}, {}
    engine = data.get("engine")
    if isinstance(engine, dict):  # batchtui sim's own record of the engine it ran
        for key, value in engine.items():
            if key in flags and flags[key].where == "engine" and value is not None:
                dials[key] = value
        for key in ("tensor_parallel_size",):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool):
                dials[key] = data[key]
    for key, value in data.items():
        if not isinstance(value, str):
            continue
        name = key.strip().lstrip("-")
        if name.replace("-", "_") in TRAFFIC_METADATA:
            name = name.replace("-", "_")
            traffic[name] = _convert(TRAFFIC_METADATA[name], value, key, path)
            continue
        if name.replace("-", "_") in HOST_METADATA:
            field, scale = HOST_METADATA[name.replace("-", "_")]
            traffic[field] = _convert(o.non_negative_float, value, key, path) * scale
            continue
        if name.replace("-", "_") in BUILD_METADATA:
            traffic[BUILD_METADATA[name.replace("-", "_")]] = _convert(o.non_negative_int, value, key, path)
            continue
        f = spellings.get(name) or spellings.get(name.replace("-", "_"))
        if f is None:
            continue
        dials[f.dial] = _flag_value(f, value, key, path)
    return dials, traffic


def _flag_value(f: o.EngineFlag, text: str, key: str, path: str):
    try:
        return f.value(text)
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"{path}: metadata {key} = {text!r}: {exc}") from None


def _convert(kind, text: str, key: str, path: str):
    try:
        return kind(text.strip())
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise UserError(f"{path}: metadata {key} = {text!r}: {exc}") from None


def _detailed(data: dict, path: str) -> list[tuple[float, int, int]] | None:
    """(arrival, prompt, output) per served request, when the file has the arrays; None if not.

    A request arrives when it came due at the client: its start time (when it was sent) less the
    time it waited there for a --max-concurrency slot (`queue_times`, which vllm bench serve
    records), so a capped run is paced again by the cap on the simulated server, as it was on the
    measured one. Times count from the benchmark's start: the end of the last request less the
    run's `duration` (a request at rate inf comes due at 0; one at a finite rate after its first
    gap, as it was sent), else (a file without them, or with a duration that does not time these
    requests) from the first request."""
    if not all(isinstance(data.get(k), list) for k in DETAILED):
        return None
    ins, outs, starts = (data[k] for k in DETAILED)
    n = len(ins)
    errors = data.get("errors") if isinstance(data.get("errors"), list) else [""] * n
    if not (n == len(outs) == len(starts) == len(errors)) or not ins:
        raise UserError(f"{path}: input_lens, output_lens, start_times and errors have different lengths")
    waits = _numbers_list(data.get("queue_times"), n)
    latencies = _numbers_list(data.get("latencies"), n)
    rows, ends = [], []
    for i, (n_in, n_out, start, err) in enumerate(zip(ins, outs, starts, errors)):
        if err:
            continue  # refused or failed: it never ran
        ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                 for v in (n_in, n_out, start))
        if not ok or n_in < 1 or n_out < 1:
            raise UserError(f"{path}: request {i} has no usable length or start time "
                            f"({n_in!r} in, {n_out!r} out, start {start!r})")
        due = float(start) - (waits[i] if waits and waits[i] >= 0 else 0.0)
        rows.append((due, int(n_in), int(n_out)))
        if latencies:
            ends.append(float(start) + latencies[i])
    if not rows:
        raise UserError(f"{path}: every request failed; nothing to replay")
    # stable: requests due together keep the order they were sent in (the file's)
    rows.sort(key=lambda r: r[0])
    first = rows[0][0]
    duration = data.get("duration")
    if ends and isinstance(duration, (int, float)) and not isinstance(duration, bool) and math.isfinite(duration):
        # The first request came due one gap after the start, as any other after the one before
        # it: a lead longer than every gap is a duration that does not time these requests.
        lead = first - (max(ends) - float(duration))
        if 0 <= lead <= max((b[0] - a[0] for a, b in zip(rows, rows[1:])), default=0.0):
            first -= lead
    return [(t - first, n_in, n_out) for t, n_in, n_out in rows]


def _numbers_list(value, n: int) -> list[float] | None:
    """A per-request array of finite numbers of length `n`, or None (absent, or not that)."""
    if not isinstance(value, list) or len(value) != n:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    return [float(v) for v in value]


def file_hardware(data: dict, path: str, base: Scenario, from_file: tuple[str, ...]) -> Scenario:
    """`base` with the GPU and the model the file names, for those of "gpu" and "model" in
    `from_file` (the ones the command line left unset): a `gpu` entry (`--metadata gpu=a100-40gb`,
    an id, a profile name or an nvidia-smi name), and a `model` entry or else the file's
    `model_id` (an id, a Hugging Face id or an alias)."""
    profiles = base.profiles()
    out = base
    gpu = data.get("gpu")
    if "gpu" in from_file and isinstance(gpu, str) and gpu.strip() and gpu.strip().lower() != o.AUTO_GPU:
        # A GPU the profiles do not know (a file `batchtui sim --profiles mine.toml` wrote, read
        # without that file) leaves the base GPU; `describe_hardware` says so.
        resolved = o.resolve_gpu(gpu.strip(), profiles)
        if resolved in profiles.gpus:
            out = replace(out, gpu=resolved)
    model = data.get("model") if isinstance(data.get("model"), str) else data.get("model_id")
    if "model" in from_file and isinstance(model, str) and model.strip():
        resolved = o.resolve_model(model.strip(), profiles)
        if resolved not in profiles.models:
            raise UserError(f"{path}: model {model!r} is not a known model profile; give {flag_of('model')} with one of "
                            f"{', '.join(profiles.models)} (or a Hugging Face id of one), or add it with --profiles")
        out = replace(out, model=resolved)
    return out


def describe_hardware(data: dict, scenario: Scenario) -> str:
    """Where a run is simulated, and, when its file names a GPU the profiles do not know, that it
    is not that one."""
    profiles = scenario.profiles()
    text = f"{profiles.model(scenario.model).name} on {scenario.gpu}"
    gpu = data.get("gpu")
    if isinstance(gpu, str) and gpu.strip() and o.resolve_gpu(gpu.strip(), profiles) not in profiles.gpus:
        text += f"; the file's gpu {gpu.strip()!r} is not a known profile"
    return text


def load_run(path: str, base: Scenario, given: dict, trace_dir: str, index: int,
             from_file: tuple[str, ...] = ()) -> MeasuredRun:
    """The scenario replaying the (first) run of the result file at `path`: `base` (gpu, model,
    profiles) with the file's traffic and dials; `given` holds the dials set on the command line,
    which win. `from_file` names what the file's own entries may set instead of `base` ("gpu",
    "model": `file_hardware`)."""
    label, data = read_runs(path)[0]
    return build_run(path, label, data, base, given, trace_dir, index, from_file)


def build_run(path: str, label: str, data: dict, base: Scenario, given: dict, trace_dir: str, index: int,
              from_file: tuple[str, ...] = ()) -> MeasuredRun:
    """The scenario replaying one run (`data` in vllm bench serve's keys, from the file at `path`;
    `label` names it, and its errors: the file, or a GuideLLM report's benchmark)."""
    where = _where(path, label)
    base = file_hardware(data, where, base, from_file)
    for key in REQUIRED:
        _number(data, key, where, allow_inf=key == "request_rate")
    present = [k for k in MEASURED_KEYS if k in data]
    if not present:
        raise UserError(f"{where}: the result measured none of {', '.join(MEASURED_KEYS)}; nothing to compare with")
    for key in present:
        _number(data, key, where)
    completed = int(_number(data, "completed", where))
    if completed < 1:
        raise UserError(f"{where}: no request completed; nothing to compare with")
    rate = _number(data, "request_rate", where, allow_inf=True)
    cap = data.get("max_concurrency")
    if cap is None:
        cap = 0
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise UserError(f"{where}: max_concurrency = {cap!r} is not a whole number of requests (or null: no cap)")
    dials, traffic = metadata_dials(data, where)
    dials.update(given)
    kinds = {f.dial: f.where for f in o.engine_flags()}
    deployment = {k: dials.pop(k) for k in list(dials) if kinds[k] == "deployment"}
    sc = replace(base, **deployment)
    own = data.get("batchtui") if isinstance(data.get("batchtui"), dict) else {}
    seed = data.get("seed", own.get("seed"))  # (batchtui sim's key; batchtui bench keeps it under its own)
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        sc = replace(sc, seed=seed)
    sc = sc.with_engine(**dials)
    rows = _detailed(data, where)
    if rows is not None and cap and math.isinf(rate):
        # Every request was due at once and the client sent the next as one finished: its start
        # times are the real server's pace, so the replay queues them all at 0, in the order sent,
        # and lets the cap pace them on the simulated server (what their queue times say too; a
        # file from before vllm bench serve recorded them has only the start times).
        rows = [(0.0, n_in, n_out) for _, n_in, n_out in rows]
    if rows is not None:
        trace = os.path.join(trace_dir, f"run{index}.jsonl")
        with open(trace, "w", encoding="utf-8") as handle:
            for t, n_in, n_out in rows:
                handle.write(json.dumps({"arrival_time": t, "prompt_len": n_in, "output_len": n_out}) + "\n")
        workload = WorkloadSpec(arrival="trace", trace_path=trace, num_prompts=len(rows))
    else:
        mean_in = max(1, round(data["total_input_tokens"] / completed))
        mean_out = max(1, round(data["total_output_tokens"] / completed))
        # The outputs' spread, when the file's latency percentiles imply one (sim.replay_lengths).
        inp, out = LengthSpec(mean=mean_in), output_lengths(data, data["total_output_tokens"] / completed)
        r = traffic.get("random_range_ratio")
        spreads = data.get(LENGTH_SPREAD) if isinstance(data.get(LENGTH_SPREAD), dict) else {}
        if spreads.get("input"):
            inp = _lognormal(spreads["input"])
        if spreads.get("output"):
            out = _lognormal(spreads["output"])
        if r:
            inp = LengthSpec(dist="uniform", mean=mean_in, low=max(1, math.floor(mean_in * (1 - r))),
                             high=max(1, math.ceil(mean_in * (1 + r))))
            out = LengthSpec(dist="uniform", mean=mean_out, low=max(1, math.floor(mean_out * (1 - r))),
                             high=max(1, math.ceil(mean_out * (1 + r))))
        burstiness = data.get("burstiness")
        if isinstance(burstiness, str) and burstiness.strip().lower() in ("inf", "infinity"):
            burstiness = math.inf  # evenly spaced, as a result file writes an infinity
        burstiness = float(burstiness) if isinstance(burstiness, (int, float)) and not isinstance(burstiness, bool) \
            and burstiness > 0 else 1.0
        workload = WorkloadSpec(arrival="gamma", request_rate=rate, num_prompts=completed, input=inp,
                                output=out, burstiness=burstiness)
        strategy = data.get("ramp_up_strategy")
        if strategy:
            start = _number(data, "ramp_up_start_rps", where)
            end = _number(data, "ramp_up_end_rps", where)
            workload = replace(workload, ramp_up_strategy=str(strategy), ramp_up_start_rps=start,
                               ramp_up_end_rps=end, request_rate=math.inf)
    # The client's own costs, when the file states its client (`--metadata client-token-ms=0.4`).
    client = {f"client_{k}_s": traffic[f"client_{k}_ms"] for k in ("request", "token") if f"client_{k}_ms" in traffic}
    sc = replace(sc, workload=replace(workload, max_concurrency=cap, **client),
                 **{field: traffic[field] for field, _ in HOST_METADATA.values() if field in traffic},
                 **{field: traffic[field] for field in BUILD_METADATA.values() if field in traffic})
    metrics = {}
    for key, value in data.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            metrics[key] = float(value)
    positions = data.get("spec_decode_per_position_acceptance_rates")
    if positions is not None and (not isinstance(positions, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in positions)):
        raise UserError(f"{where}: spec_decode_per_position_acceptance_rates = {positions!r} is not a list of "
                        "rates in [0, 1]")
    return MeasuredRun(path, label, sc, metrics, rows is not None, rate, describe_hardware(data, sc),
                       tuple(float(v) for v in positions or ()))


def _lognormal(spread: dict) -> LengthSpec:
    """Lengths drawn around the median a GuideLLM or aiperf file's percentiles give (`loadgens.spread`)."""
    return lognormal_lengths(spread["median"], spread["sigma"], spread["low"], spread["high"] or None)


def _where(path: str, label: str) -> str:
    """How an error names a run: its file, and a GuideLLM report's benchmark (`report.json#2`)."""
    name = Path(path).name
    return str(path) if label == name else str(path) + label[len(name):].split(" ")[0]


def load_runs(paths: list[str], base: Scenario, given: dict, trace_dir: str, profiles,
              from_file: tuple[str, ...] = ()) -> list[MeasuredRun]:
    """Every file as a run, each checked by building it (a dial vLLM refuses is named here)."""
    runs = []
    entries = [(path, label, data) for path in paths for label, data in read_runs(path)]
    for i, (path, label, data) in enumerate(entries):
        run = build_run(path, label, data, base, given, trace_dir, i, from_file)
        try:
            run.scenario.deployment(profiles)
            run.scenario.engine_config(profiles)
            run.scenario.workload.validate()
        except Exception as exc:
            from sim.errors import SimError

            if isinstance(exc, SimError):
                raise UserError(f"{_where(path, label)}: {exc.spelled(FILE_KEYS.get)}") from None
            raise
        runs.append(run)
    return runs
