"""The `vllm serve` and `vllm bench serve` command lines that reproduce a simulated setup on a
real GPU: every dial the simulation assumed, spelled from the engine flag table."""

from __future__ import annotations

import json
import math
import shlex

from . import options as o
from .flag_table import dest


def hf_id(model) -> str:
    """The name `vllm serve` takes: the profile's Hugging Face id, else its own id."""
    return model.hf_id or model.id


def serve_dials(setup, config=None) -> dict:
    """flag -> value for every vllm serve dial the simulation ran with (bools as themselves)."""
    config = config or setup.config
    sc = setup.scenario
    values = {**{k: getattr(sc, k) for k in ("tensor_parallel_size", "kv_cache_dtype", "gpu_memory_utilization",
                                             "block_size", "num_gpu_blocks_override", "quantization",
                                             "kv_cache_memory_bytes", "enforce_eager", "speculative_config",
                                             "enable_expert_parallel")},
              **config.to_dict()}
    if values["kv_cache_dtype"] == "bf16":
        values["kv_cache_dtype"] = "bfloat16"
    out = {}
    for f in o.engine_flags():
        if not f.vllm or values.get(f.dial) is None:
            continue
        out[f.flag] = values[f.dial]
    return out


def _words(dials: dict) -> list[str]:
    words = []
    for flag, value in dials.items():
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, str):
            words += [flag, shlex.quote(value)]  # (a JSON config, quoted for the shell)
        else:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return words


def serve_command(setup) -> str:
    return " ".join(["vllm", "serve", hf_id(setup.deployment.model), *_words(serve_dials(setup))])


def llm_call(setup, config) -> str:
    """The same dials as arguments of vLLM's offline `LLM` class."""
    kwargs = {"model": hf_id(setup.deployment.model)}
    for flag, value in serve_dials(setup, config).items():
        if flag == "--api-server-count":  # (vllm serve's own: the LLM class has no API server, nor takes it)
            continue
        kwargs[dest(flag)] = json.loads(value) if flag == "--speculative-config" else value  # (a dict there)
    return "LLM(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def _trace_words(w, rate: float) -> list[str]:
    """vllm bench serve's flags reading a trace as the workload `w` does: its hash block and its
    time unit, when not vLLM's defaults, the unit scaled to send the trace at `rate` requests/s
    (0 or inf: at its own timing), as the simulator rescales it."""
    from sim.workload import VLLM_TRACE_BLOCK_TOKENS, VLLM_TRACE_SEC_MULTIPLIER, load_trace

    multiplier = w.trace_sec_multiplier
    if rate and math.isfinite(rate):
        base = load_trace(w.trace_path, w.hash_block_size, w.trace_sec_multiplier)
        span = base[-1].arrival_time - base[0].arrival_time
        if span > 0:
            multiplier *= (len(base) - 1) / span / rate
    words = []
    if w.hash_block_size != VLLM_TRACE_BLOCK_TOKENS:
        words += ["--timed-trace-chunk-hash-size", str(w.hash_block_size)]
    if multiplier != VLLM_TRACE_SEC_MULTIPLIER:
        words += ["--timed-trace-sec-multiplier", f"{multiplier:.6g}"]
    return words


def _range_ratio(spec) -> float | None:
    """The --random-range-ratio that draws these lengths (0 fixed), or None when none does."""
    if spec.dist == "fixed":
        return 0.0
    if spec.dist == "uniform" and spec.mean:
        high = spec.high or max(spec.low, 2 * spec.mean - spec.low)
        if spec.mean - spec.low == high - spec.mean:
            return (high - spec.mean) / spec.mean
    return None


def bench_lengths_note(w) -> str | None:
    """Why the `bench_command` line does not send this traffic's lengths, or None when it does:
    vllm bench serve's random dataset draws prompts and answers uniform within one
    --random-range-ratio of their means (the line gives the prompts')."""
    if w.arrival == "trace" or w.dataset != "random":
        return None
    ratio = _range_ratio(w.input)
    odd = [f"{name} ({spec.dist})" for name, spec in (("prompts", w.input), ("answers", w.output))
           if _range_ratio(spec) is None or _range_ratio(spec) != ratio]
    if not odd:
        return None
    return (f"vllm bench serve's random dataset draws lengths uniform within one --random-range-ratio, so this "
            f"line does not send these {' and '.join(odd)}: to verify on this traffic, send your own requests "
            "(--dataset-name custom with --dataset-path).")


def bench_command(setup, rate: float, num_prompts: int, goodput: dict | None = None) -> str:
    """`vllm bench serve` sending this traffic at `rate` to the server `serve_command` starts."""
    w = setup.scenario.workload
    words = ["vllm", "bench", "serve", "--model", hf_id(setup.deployment.model)]
    from sim.workload import is_timed_trace

    timed = w.arrival == "trace" and is_timed_trace(w.trace_path)
    if w.arrival == "trace":
        words += ["--dataset-name", "timed_trace", "--dataset-path", w.trace_path]
        words += _trace_words(w, rate if timed else 0.0)
    elif w.dataset != "random":
        words += ["--dataset-name", w.dataset, "--dataset-path", w.dataset_path]
        if w.dataset_output_len:
            words += [f"--{w.dataset}-output-len", str(w.dataset_output_len)]
    elif w.num_prefixes > 1 and w.prefix_len and w.input.dist == w.output.dist == "fixed":
        words += ["--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", str(w.prefix_len),
                  "--prefix-repetition-suffix-len", str(w.input.mean), "--prefix-repetition-num-prefixes",
                  str(w.num_prefixes), "--prefix-repetition-output-len", str(w.output.mean)]
    else:
        words += ["--dataset-name", "random", "--random-input-len", str(w.input.mean),
                  "--random-output-len", str(w.output.mean)]
        if w.prefix_len:
            words += ["--random-prefix-len", str(w.prefix_len)]
        if w.input.dist == "uniform" and w.input.mean:
            words += ["--random-range-ratio", f"{(w.input.high - w.input.mean) / w.input.mean:.3g}"]
    words += ["--num-prompts", str(num_prompts)]
    if not timed:  # (vllm bench serve sends a timed trace at its timestamps, whatever the rate)
        words += ["--request-rate", "inf" if math.isinf(rate) else f"{rate:.2f}"]
    if w.arrival == "gamma" and w.burstiness != 1:
        words += ["--burstiness", f"{w.burstiness:g}"]
    if w.max_concurrency:
        words += ["--max-concurrency", str(w.max_concurrency)]
    if goodput:
        words += ["--goodput", *(f"{k}:{v:g}" for k, v in goodput.items())]
    words += ["--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
              "--seed", str(setup.scenario.seed), "--save-result"]
    return " ".join(shlex.quote(x) if x != shlex.quote(x) and not x.startswith("--") else x for x in words)
