"""Plain-text and machine-readable output of the headless commands.

The result block is `vllm bench serve`'s (its rows and layout: `report_block`), so numbers can be
read side by side with a real benchmark; the simulator's own figures follow in a section of their
own. No colour and no Rich: the output is meant to be piped.
"""

from __future__ import annotations

import csv
import math
import textwrap

from sim.reports import BINDING_LIMITS

from ..limit_words import LIMIT_WORDS
from .exits import UserError
from .options import flagged
from ..loadgen.measure import pword, stat_keys
from .report_block import (CLIENT_SECTIONS, DEFAULT_METRIC_PERCENTILES, DEFAULT_PERCENTILE_METRICS, WIDTH,
                           benchmark_rows, figure_line, header_line, row_value)

# Sweep and CSV columns: (metrics key, heading, format)
SWEEP_COLUMNS = (
    ("request_throughput", "req/s", "{:.2f}"),
    ("output_throughput", "out tok/s", "{:.0f}"),
    ("median_ttft_ms", "TTFT p50", "{:.1f}"),
    ("p99_ttft_ms", "TTFT p99", "{:.1f}"),
    ("median_tpot_ms", "TPOT p50", "{:.2f}"),
    ("p99_tpot_ms", "TPOT p99", "{:.2f}"),
    ("mean_running", "running", "{:.1f}"),
    ("num_preemptions", "preempt", "{:d}"),
)


def refuse_unserved(runs: list[tuple[dict, str]], n: int) -> None:
    """Every request of every run failed (each run its metrics and its first failure's error):
    nothing was measured, and the reason is the user's (prompts longer than --max-model-len, say),
    said in one line as a mistake, as `sweep` and `plan` say it."""
    if runs and all(metrics["completed"] == 0 and error for metrics, error in runs):
        raise UserError(f"every one of the {n} requests failed, so nothing can be measured: {runs[0][1]}")


def rate_text(rate: float) -> str:
    if math.isinf(rate):
        return "inf"
    return f"{rate:g}"


SEATS = "engine.max_num_seqs"


def seats_words(seats) -> str:
    """A number of seats (or "swept", "as below") as reports say it: the dial's name in the app,
    vLLM's keyword beside it ("1024 seats (max_num_seqs)")."""
    from sim.dials import label_of

    label, keyword = label_of(SEATS), SEATS.rsplit(".", 1)[1]
    if not isinstance(seats, int):
        return f"{label} {seats} ({keyword})"
    return f"{seats} {label.removesuffix('s') if seats == 1 else label} ({keyword})"  # ("1 seat")


def setup_text(scenario, deployment, config, swept: str | None = None, *, lead: str = "Simulated",
               traffic: bool = True) -> str:
    """One paragraph saying what was simulated (`lead` first); `swept` names the dial a sweep
    varies; `traffic` False leaves the traffic out."""
    model, gpu = deployment.model, deployment.gpu
    tp = deployment.tensor_parallel_size
    on = f"{tp} x {gpu.name}" if tp > 1 else f"one {gpu.name}"
    if deployment.expert_parallel:  # (the experts whole on each GPU, not split: --enable-expert-parallel)
        on += " with expert parallelism"
    if config.batching == "continuous":
        dials = (f"continuous batching, {seats_words({'max_num_seqs': 'swept', 'offline': 'as below'}.get(swept, config.max_num_seqs))}, "
                 f"max_num_batched_tokens {config.max_num_batched_tokens}, chunked prefill "
                 f"{'on' if config.enable_chunked_prefill else 'off'}, prefix caching "
                 f"{'on' if config.caches_prefixes else 'off'}")
        if config.long_prefill_token_threshold:
            dials += f", long_prefill_token_threshold {config.long_prefill_token_threshold}"
        if config.scheduling_policy != "fcfs":
            dials += f", {config.scheduling_policy} scheduling"
    elif config.batching == "sequential":
        dials = "sequential serving (one request at a time)"
    elif config.batching == "static":
        dials = f"static batching, batches of up to {config.max_batch_size}"
    else:
        dials = (f"dynamic batching, batches of up to {config.max_batch_size} "
                 f"after at most {config.max_queue_delay * 1000:g} ms")
    if model.has_kv_cache:
        dtype = "" if scenario.kv_cache_dtype == "auto" else f"{scenario.kv_cache_dtype} "  # ("auto": the model's)
        cache = (f"{dtype}KV cache {deployment.usable_blocks:,} blocks of {deployment.block_size} "
                 f"({deployment.kv_cache_tokens:,} tokens)")
        layout = deployment.kv_layout
        if layout.window_groups:  # (vLLM's hybrid KV cache manager: sim.profiles.KvLayout)
            cache += (f", a block being {layout.group_layers} layers' KV: a request holds its tokens' blocks "
                      f"and at most {layout.window_groups * layout.window_blocks} more for its sliding window "
                      f"of {model.window_tokens}")
    else:
        cache = "no KV cache (encoder)"
    spec = scenario.speculative() if config.batching == "continuous" else None
    if spec is not None:
        dials += f"; speculative decoding {spec.describe()}"
    text = f"{lead} {model.name} on {on}: {dials}; {cache}."
    if traffic:
        shown = traffic_text(scenario.workload, swept)
        if not model.has_kv_cache:  # an encoder answers in one pass: output lengths do not apply
            shown = shown.rsplit(" / ", 1)[0] + " (one pass each)"
        text += f" Traffic: {shown}, seed {scenario.seed}."
    return textwrap.fill(text, width=100)


def _length_text(spec) -> str:
    if spec.dist == "fixed":
        return f"{spec.mean}"
    if spec.dist == "uniform":
        high = spec.high or max(spec.low, 2 * spec.mean - spec.low)
        return f"{spec.low}-{high} (uniform)"
    if spec.dist == "lognormal":
        return f"~{spec.mean} (lognormal, sigma {spec.sigma:g})"
    return f"{spec.mean} or {spec.long_len} ({spec.long_share:.0%} long)"


def traffic_text(w, swept: str | None = None) -> str:
    from sim.workload import VLLM_TRACE_BLOCK_TOKENS

    if w.arrival == "trace":
        text = f"the trace {w.trace_path}"
        if w.trace_requests:
            text += f" ({w.trace_requests} requests, repeated as needed)"
        if w.trace_sec_multiplier != 1 or w.hash_block_size != VLLM_TRACE_BLOCK_TOKENS:
            text += f" (timestamps x {w.trace_sec_multiplier:g} s, {w.hash_block_size}-token hash blocks)"
        if swept == "request_rate":
            return text + " rescaled to the swept rate"
        if w.trace_rate:
            return text + f" rescaled to {rate_text(w.trace_rate)} req/s"
        return text + " at its own timing"
    if swept == "request_rate":
        when = "arrivals at the swept rate" + _burst_text(w)
    elif w.arrival == "gamma" and w.ramp_up_strategy:
        when = (f"a {w.ramp_up_strategy} ramp from {w.ramp_up_start_rps:g} to {w.ramp_up_end_rps:g} "
                f"req/s{_burst_text(w)}")
    elif w.arrival == "all-at-once" or math.isinf(w.request_rate):
        when = "all sent at once"
    elif w.arrival == "gamma":
        when = f"{rate_text(w.request_rate)} req/s{_burst_text(w)}"
    elif w.arrival == "poisson":
        when = f"Poisson arrivals at {rate_text(w.request_rate)} req/s"
    elif w.arrival == "constant":
        when = f"one every {1 / w.request_rate:.3g} s ({rate_text(w.request_rate)} req/s)"
    else:
        when = f"bursts of {w.burst_size} at {rate_text(w.request_rate)} req/s on average"
    if w.dataset != "random":
        out = f"{w.dataset_output_len} out" if w.dataset_output_len else "answers as in the file"
        lengths = f"lengths from the {w.dataset} dataset {w.dataset_path} ({out})"
    else:
        lengths = f"{_length_text(w.input)} in / {_length_text(w.output)} out"
    if w.prefix_len:
        lengths = f"{w.prefix_len} tokens of shared prefix + {lengths}"
        if w.num_prefixes > 1:
            lengths += f" (one of {w.num_prefixes} prefixes)"
    if w.turns > 1:
        when = when.replace(" req/s", " conversations/s")
        return (f"{w.num_prompts} conversations of {w.turns} turns, {when}, {lengths} a turn, the next turn "
                f"{w.think_time:g} s after an answer")
    return f"{w.num_prompts} requests, {when}, {lengths}"


def _burst_text(w) -> str:
    if w.arrival != "gamma":
        return f" ({w.arrival})"
    if w.burstiness == 1:
        return " (Poisson)"
    if math.isinf(w.burstiness):
        return " (evenly spaced)"
    return f" (gamma gaps, burstiness {w.burstiness:g})"


def client_queue_metrics(records, workload, percentiles=DEFAULT_METRIC_PERCENTILES) -> dict:
    """vllm bench serve's client-side figures over the completed requests, in ms: how long each
    waited at the client for a slot under --max-concurrency (`client_queue_time`) and, at a
    finite rate, its E2E latency with that wait (`e2el_including_client_queue`): mean, median,
    std and pNN (p90 and p99 always), as vLLM computes them (numpy, linear percentiles). Empty
    without a cap."""
    if workload is None or not workload.max_concurrency:
        return {}
    queued = records.column("client_queue_time")
    series = {"client_queue_time": queued}
    if workload.arrival != "trace" and math.isfinite(workload.request_rate):
        series["e2el_including_client_queue"] = records.column("e2e") + queued
    out = {}
    for key, values in series.items():
        out.update(stat_keys(key, values, sorted(set(percentiles) | {90.0, 99.0})))
    return out


def result_block(summary, config, deployment, *, workload=None, percentile_metrics=DEFAULT_PERCENTILE_METRICS,
                 percentiles=DEFAULT_METRIC_PERCENTILES, goodput: bool = False) -> str:
    """`vllm bench serve`'s result block, line for line, then the simulator's own section. An
    encoder (a pooling model) prints no generation lines, as vLLM's embedding benchmark."""
    m = dict(summary.metrics)
    if any(k in percentile_metrics for k in CLIENT_SECTIONS):
        m.update(client_queue_metrics(summary.records, workload, percentiles))
    out = []
    for label, key in benchmark_rows(m, generates=deployment.model.has_kv_cache, workload=workload,
                                     percentile_metrics=percentile_metrics, percentiles=percentiles,
                                     goodput=goodput):
        if label in ("=", "-"):
            out.append(header_line(key, label))
        elif key is None:
            out.append(label)
        else:
            out.append(figure_line(label, row_value(m, key)))
    out.append(header_line("Simulator", "-"))
    out.extend(simulator_lines(summary, config, deployment))
    out.append("=" * WIDTH)
    return "\n".join(out)


def simulator_lines(summary, config, deployment) -> list[str]:
    m = summary.metrics
    lines = []
    if deployment.model.has_kv_cache:
        lines.append(figure_line("Max ITL (ms):", m["max_itl_ms"]))
    lines += [figure_line("Engine iterations:", f"{summary.iterations:,}"),
             figure_line("Mean running batch:", m["mean_running"]),
             figure_line("Max running batch:", m["max_running"])]
    if deployment.model.has_kv_cache:
        used = round(m["peak_kv_usage"] * deployment.usable_blocks)
        lines.append(figure_line("Peak KV cache use (%):",
                           f"{m['peak_kv_usage'] * 100:.1f}  ({used:,} of {deployment.usable_blocks:,} blocks)"))
    lines.append(figure_line("Preemptions:", m["num_preemptions"]))
    if deployment.model.has_kv_cache and config.caches_prefixes:
        queries, hits = m.get("prefix_cache_queries", 0), m.get("prefix_cache_hits", 0)
        lines.append(figure_line("Prefix cache hit rate (%):",
                           f"{m.get('prefix_cache_hit_rate', 0.0) * 100:.1f}  ({hits:,} of {queries:,} prompt tokens)"))
    counts = m["binding_limit_counts"]
    total = sum(counts.values())
    if total:
        top = max(BINDING_LIMITS, key=lambda k: (counts.get(k, 0), k == "none"))
        lines.append(figure_line("Binding limit (most often):",
                           f"{top}, {counts[top] / total:.0%} of iterations"))
        words = LIMIT_WORDS[top].sentence
        if top == "max_num_seqs" and config.batching != "continuous":
            words = "the batch was full ({engine.max_batch_size}) or running while requests waited"
        lines.append(f"  ({flagged(words)})")
        lines.append(figure_line("Binding limit counts:",
                           ", ".join(f"{k} {counts.get(k, 0):,}" for k in BINDING_LIMITS)))
    if config.batching in ("static", "dynamic", "sequential"):
        lines.append(figure_line("Padding share of seats (%):", f"{m['padding_share'] * 100:.1f}"))
    if m.get("rejected"):
        lines.append(figure_line("Rejected requests:", m["rejected"]))
    if len(summary.pools) > 1:
        for name, p in summary.pools.items():
            lines.append(figure_line(f"Pool {name} (completed):", p["completed"]))
            lines.append(figure_line("  TTFT p50 / p99 (ms):", f"{p['median_ttft_ms']:.2f} / {p['p99_ttft_ms']:.2f}"))
            lines.append(figure_line("  TPOT p50 / p99 (ms):", f"{p['median_tpot_ms']:.2f} / {p['p99_tpot_ms']:.2f}"))
    return lines


# -- machine-readable ------------------------------------------------------------------------------

def json_safe(value):
    """Replace infinities (not valid JSON) with the string "inf", as vLLM's result files do."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


BACKEND = "batchtui-sim"
PERCENTILE_KEYS = ("ttft", "tpot", "itl", "e2el")


def bench_result(run, setup, *, date: str, label: str | None = None, percentiles=DEFAULT_METRIC_PERCENTILES,
                 detailed: bool = False, metadata: dict | None = None) -> dict:
    """The result `vllm bench serve --save-result` writes, with every key a simulation can fill
    (run metadata, totals, throughputs, goodput, peaks, mean/median/std/pNN of TTFT, TPOT, ITL
    and E2EL, `latencies`, and with `detailed` the other per-request arrays), then what only the
    simulator knows. Per-request arrays are in order of arrival, failed requests included (as
    vLLM lists them: zeros and their error); they may be numpy arrays (`dump_json` streams them)."""
    import numpy as np

    m = run.metrics
    sc, d, config = setup.scenario, setup.deployment, setup.config
    w = sc.workload
    rate = (w.trace_rate or math.inf) if w.arrival == "trace" else w.request_rate
    out: dict = {
        "date": date, "endpoint_type": BACKEND, "backend": BACKEND, "label": label or BACKEND,
        "model_id": d.model.hf_id or d.model.id, "tokenizer_id": d.model.hf_id or d.model.id,
        "num_prompts": m["completed"] + m["failed"],
    }
    # The client's own work, when it has any, in the entries `compare` replays a file's client
    # from (`--metadata client-request-ms=...`, as --client-request-ms writes them: ms), so a
    # simulated file replays with the client it ran; the user's own entries below win.
    for key, seconds in (("client-request-ms", w.client_request_s), ("client-token-ms", w.client_token_s)):
        if seconds:
            out[key] = f"{seconds * 1e3:.12g}"
    out.update(metadata or {})
    out.update({"request_rate": rate if math.isfinite(rate) else "inf",
                "burstiness": w.burstiness if w.arrival == "gamma" else (1.0 if w.arrival == "poisson" else None),
                "max_concurrency": w.max_concurrency or None})
    if w.ramp_up_strategy:
        out.update({"ramp_up_strategy": w.ramp_up_strategy, "ramp_up_start_rps": w.ramp_up_start_rps,
                    "ramp_up_end_rps": w.ramp_up_end_rps})
    for key in ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
                "request_throughput", "request_goodput", "output_throughput", "total_token_throughput"):
        out[key] = m[key]

    recs = run.records
    arrivals = recs.column("arrival_time")
    failed = run.failed
    all_arrivals = np.concatenate([arrivals, np.array([f.arrival_time for f in failed], dtype=float)])
    order = send_order(recs, failed)
    n_ok = len(arrivals)

    def by_arrival(ok_values, failed_values, dtype=float):
        merged = np.concatenate([np.asarray(ok_values, dtype=dtype), np.asarray(failed_values, dtype=dtype)])
        return merged[order]

    zeros = [0.0] * len(failed)
    latencies = by_arrival(recs.column("e2e"), zeros)
    if detailed:
        ids = [r.request_id for r in recs] if run.token_times is not None else []
        out["input_lens"] = by_arrival(recs.column("prompt_len"), [f.prompt_len for f in failed], int)
        out["output_lens"] = by_arrival(recs.column("output_len"), [0] * len(failed), int)
        out["ttfts"] = by_arrival(recs.column("ttft"), zeros)
        if run.token_times is not None:
            times = run.token_times
            gaps = [np.diff(times.get(rid, [])).tolist() for rid in ids] + [[] for _ in failed]
            out["itls"] = [gaps[i] for i in order]
        out["latencies"] = latencies
        out["start_times"] = all_arrivals[order]
        errors = [""] * n_ok + [f.error for f in failed]
        out["errors"] = [errors[i] for i in order]
        out["generated_texts"] = [""] * len(order)
        out["num_cached_tokens"] = by_arrival(recs.column("num_cached_tokens"), [0] * len(failed), int)
    else:
        out["latencies"] = latencies
    # Seconds each waited at the client for a slot (--max-concurrency) before it was sent.
    out["queue_times"] = by_arrival(recs.column("client_queue_time"), zeros)
    out["max_output_tokens_per_s"] = m["max_output_tokens_per_s"]
    out["max_concurrent_requests"] = m["max_concurrent_requests"]
    out["rtfx"] = 0.0
    for key in PERCENTILE_KEYS:
        out[f"mean_{key}_ms"] = m[f"mean_{key}_ms"]
        out[f"median_{key}_ms"] = m[f"median_{key}_ms"]
        out[f"std_{key}_ms"] = m[f"std_{key}_ms"]
        for q in sorted(set(percentiles) | {90.0, 99.0}):
            out[f"p{pword(q)}_{key}_ms"] = m[f"p{pword(q)}_{key}_ms"]
    out.update(client_queue_metrics(recs, w, percentiles))
    # What only the simulator sees.
    out.update({
        "max_itl_ms": m["max_itl_ms"], "mean_running": m["mean_running"], "max_running": m["max_running"],
        "peak_kv_usage": m["peak_kv_usage"], "num_preemptions": m["num_preemptions"],
        "padding_share": m["padding_share"], "binding_limit_counts": m["binding_limit_counts"],
        "iterations": run.iterations, "gpu": d.gpu.id, "model": d.model.id,
        "tensor_parallel_size": d.tensor_parallel_size, "seed": sc.seed,
        "kv_cache_usable_blocks": d.usable_blocks, "engine": config.to_dict(),
        # vLLM's prefix cache counters, in prompt tokens looked up and found at first admission
        "prefix_cache_queries": m.get("prefix_cache_queries", 0), "prefix_cache_hits": m.get("prefix_cache_hits", 0),
        "prefix_cache_hit_rate": m.get("prefix_cache_hit_rate", 0.0),
    })
    for key in SPEC_DECODE_KEYS:  # (vllm bench serve's keys, present only with speculative decoding)
        if key in m:
            out[key] = m[key]
    spec = sc.speculative() if config.batching == "continuous" else None
    if spec is not None:  # as text, the way a --metadata speculative_config=JSON entry holds it
        out["speculative_config"] = spec.text
    if len(run.summary.pools) > 1:
        out["pools"] = run.summary.pools
    return out


SPEC_DECODE_KEYS = ("spec_decode_acceptance_rate", "spec_decode_acceptance_length", "spec_decode_num_drafts",
                    "spec_decode_draft_tokens", "spec_decode_accepted_tokens",
                    "spec_decode_per_position_acceptance_rates")


def send_order(records, failed) -> np.ndarray:
    """The order `vllm bench serve` lists requests in its per-request arrays: the order it sent
    them (its tasks in the order made, each when its request came due, before any wait for a
    --max-concurrency slot), not the order they finished. `records` (finished first, then
    `failed`) are sorted by the moment each came due (its arrival less its client queue time),
    then by request id (the workloads number requests in the order they send them), then as
    they finished; a request at rate inf is due at 0 with all the others, so only the ids order
    them."""
    import numpy as np

    due = np.concatenate([records.column("arrival_time") - records.column("client_queue_time"),
                          np.array([f.arrival_time for f in failed], dtype=float)])
    numbers = np.concatenate([records.id_numbers(), _id_numbers([f.request_id for f in failed])]).astype(float)
    numbers[numbers < 0] = np.inf  # an id that is no number: after the numbered ones due with it
    return np.lexsort((np.arange(len(due)), numbers, due))


def _id_numbers(ids: list[str]) -> np.ndarray:
    """Request ids as numbers where the id is one written plainly (as `RecordTable.id_numbers`
    reads them), -1 for the others."""
    import numpy as np

    return np.array([int(i) if i.isascii() and i.isdigit() and str(int(i)) == i else -1 for i in ids],
                    dtype=np.int64)


def dump_json(sink, data: dict, indent: int | None = 2) -> None:
    """Write `data` as JSON, streaming long arrays (numpy arrays, long lists) in pieces instead of
    building one string; infinities are written as "inf", as vLLM's result files do."""
    import json

    import numpy as np

    pad = " " * indent if indent else ""
    sep = ",\n" if indent else ", "
    sink.write("{\n" if indent else "{")
    for n, (key, value) in enumerate(data.items()):
        sink.write((sep if n else "") + pad + json.dumps(key) + ": ")
        if isinstance(value, np.ndarray):
            value = value.tolist() if len(value) <= 4096 else value
        if isinstance(value, (np.ndarray, list)) and len(value) > 4096:
            sink.write("[")
            for start in range(0, len(value), 4096):
                piece = value[start:start + 4096]
                piece = piece.tolist() if isinstance(piece, np.ndarray) else piece
                sink.write((", " if start else "") + json.dumps(json_safe(piece))[1:-1])
            sink.write("]")
        else:
            sink.write(json.dumps(json_safe(value), indent=None))
    sink.write("\n}\n" if indent else "}\n")


PER_REQUEST_FIELDS = ("request_id", "pool", "arrival_s", "prompt_len", "output_len", "ttft_ms",
                      "tpot_ms", "e2e_ms", "preemptions", "max_itl_ms", "finish_reason", "num_cached_tokens")


class PerRequestCsv:
    """One CSV row per finished request, written as the run goes (in order of finishing; the
    arrival_s column gives arrival order); tpot_ms is empty for one-token answers."""

    def __init__(self, handle) -> None:
        self.rows = 0
        self._writer = csv.writer(handle, lineterminator="\n")
        self._writer.writerow(PER_REQUEST_FIELDS)

    def __call__(self, r) -> None:
        self._writer.writerow([
            r.request_id, r.pool, f"{r.arrival_time:.6f}", r.prompt_len, r.output_len,
            f"{r.ttft * 1000:.3f}", "" if r.tpot is None else f"{r.tpot * 1000:.3f}",
            f"{r.e2e * 1000:.3f}", r.num_preemptions, f"{r.max_itl * 1000:.3f}", r.finish_reason,
            r.num_cached_tokens,
        ])
        self.rows += 1


def flat_metrics(metrics: dict) -> dict:
    """The scalar metrics, with binding_limit_counts spread over binding_<limit> columns."""
    out = {}
    for k, v in metrics.items():
        if isinstance(v, dict):
            if k == "binding_limit_counts":
                out.update({f"binding_{name}": v.get(name, 0) for name in BINDING_LIMITS})
            continue
        if isinstance(v, list):  # speculative decoding's acceptance by position: a column each
            out.update({f"{k}_{i}": x for i, x in enumerate(v)})
            continue
        out[k] = v
    return out


# -- tables --------------------------------------------------------------------------------------

def table(headings, rows, notes=None) -> str:
    """Right-aligned columns under a ruled heading; `notes` (one per row) trail the rows."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headings)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headings, widths)),
             "  ".join("-" * w for w in widths)]
    for i, row in enumerate(rows):
        note = notes[i] if notes else ""
        lines.append(("  ".join(c.rjust(w) for c, w in zip(row, widths)) + "  " + note).rstrip())
    return "\n".join(lines)


def sweep_table(swept: str, values, summaries, knee: int | None, bounded=None) -> str:
    """One row per point; the knee row is marked, and so are points without a steady state."""
    head = "rate" if swept == "request_rate" else "seqs"
    headings = [head] + [h for _, h, _ in SWEEP_COLUMNS]
    rows = [[rate_text(v) if swept == "request_rate" else f"{v}"]
            + [fmt.format(s.metrics[key]) for key, _, fmt in SWEEP_COLUMNS]
            for v, s in zip(values, summaries)]
    notes = ["<- knee" if i == knee else ("unbounded: the queue grows" if bounded and not bounded[i] else "")
             for i in range(len(rows))]
    return table(headings, rows, notes) + "\n(TTFT and TPOT in ms; running = mean running batch)"


# -- plans ---------------------------------------------------------------------------------------

PLAN_STAGES = {"saturation": "all queued at once (whole run)", "bisect": "bisection",
               "floor": "near idle", "coarse": ""}


def plan_table(plan) -> str:
    """Every point the SLO search ran, by rate, with the saturation run last."""
    points = sorted(plan.points, key=lambda p: p.rate) + [plan.saturated]
    rows, notes = [], []
    for p in points:
        w, m = p.window, p.summary.metrics
        # At a steady rate Little's law gives the batch: rate x time in the system.
        running = m["mean_running"] if math.isinf(p.rate) else p.rate * w["mean_e2e_ms"] / 1000
        rows.append((rate_text(round(p.rate, 2)), str(m["completed"]), str(w["count"]),
                     f"{w['p99_ttft_ms']:.1f}", f"{w['p99_tpot_ms']:.2f}", f"{running:.0f}",
                     "meets" if p.ok else "misses"))
        notes.append("<- highest meeting the SLO" if plan.best is p else PLAN_STAGES[p.stage])
    heads = ("rate", "requests", "window", "TTFT p99", "TPOT p99", "running", "SLO")
    return (table(heads, rows, notes)
            + "\n(p99s in ms over the steady window: requests arriving one median E2E after the"
            + "\n first arrival and before the last; running = rate x mean E2E)")


def plan_point_json(p) -> dict:
    m, w = p.summary.metrics, p.window
    return {"request_rate": p.rate, "stage": p.stage, "meets_slo": p.ok, "misses": p.misses,
            "num_prompts": m["completed"], "window_requests": w["count"],
            "p99_ttft_ms": w["p99_ttft_ms"], "p99_tpot_ms": w["p99_tpot_ms"],
            "median_ttft_ms": w["median_ttft_ms"], "median_tpot_ms": w["median_tpot_ms"],
            "run": {k: m[k] for k in ("request_throughput", "output_throughput", "p99_ttft_ms",
                                      "p99_tpot_ms", "mean_running", "num_preemptions")}}


def offline_table(results, best) -> str:
    """One row per number of seats tried for an offline job."""
    from sim.dials import label_of

    heads = (label_of(SEATS), "budget", "job time (s)", "out tok/s", "running", "preempt")
    rows = [(str(c.max_num_seqs), str(c.max_num_batched_tokens), f"{s.metrics['duration']:.1f}",
             f"{s.metrics['output_throughput']:.0f}", f"{s.metrics['mean_running']:.1f}",
             str(s.metrics["num_preemptions"])) for _, c, s in results]
    notes = [why + ("  <- best" if s is best else "") for why, _, s in results]
    return table(heads, rows, notes)


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{int(minutes)} min {s:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{int(hours)} h {int(minutes)} min"
