"""`vllm bench serve`'s result block, written once: its rows in its order (`benchmark_rows`, for
`batchtui sim`'s block and `batchtui bench`'s), one run's figure in a row (`row_value`), the lines
laid out as vLLM lays them (labels padded to 40 columns, sections centred in 50), and the block
with a measured and a simulated column side by side (`side_by_side_block`)."""

from __future__ import annotations

import math

from ..loadgen.measure import pword

WIDTH = 50
LABEL = 40


def header_line(title: str, fill: str) -> str:
    return f"{title:{fill}^{WIDTH}}"


def figure_line(label: str, value) -> str:
    if isinstance(value, float):
        value = f"{value:.2f}"
    return f"{label:<{LABEL}} {value}".rstrip()


SECTIONS = {"ttft": ("TTFT", "Time to First Token"),
            "tpot": ("TPOT", "Time per Output Token (excl. 1st token)"),
            "itl": ("ITL", "Inter-token Latency"),
            "e2el": ("E2EL", "End-to-end Latency")}
CLIENT_SECTIONS = {"client_queue_time": ("Client Queue Time", "Client-side Queueing"),
                   "e2el_including_client_queue": ("E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency")}
"""vllm bench serve's client-side metrics, printed (when asked for) under --max-concurrency; the
queue-inclusive E2EL only at a finite rate."""
DEFAULT_PERCENTILE_METRICS = ("ttft", "tpot", "itl")
DEFAULT_METRIC_PERCENTILES = (99.0,)


def benchmark_rows(values: dict, *, generates: bool = True, workload=None,
                   percentile_metrics=DEFAULT_PERCENTILE_METRICS, percentiles=DEFAULT_METRIC_PERCENTILES,
                   goodput: bool = False) -> list[tuple]:
    """`vllm bench serve`'s result block as rows, in its order: ("=", title) or ("-", title) for a
    section's header, and (label, key) for a figure, `key` a key of the result dict (or a
    function of it). `values` (one run's figures) says which optional sections there are. An
    encoder (a pooling model, `generates` False) has no generation lines, as vLLM's embedding
    benchmark."""
    rows: list[tuple] = [("=", " Serving Benchmark Result "), ("Successful requests:", "completed"),
                         ("Failed requests:", "failed")]
    if workload is not None and workload.max_concurrency:
        rows.append(("Maximum request concurrency:", lambda m: workload.max_concurrency))
    if (workload is not None and workload.arrival != "trace" and not workload.ramp_up_strategy
            and math.isfinite(workload.request_rate)):
        rows.append(("Request rate configured (RPS):", lambda m: float(workload.request_rate)))
    rows += [("Benchmark duration (s):", "duration"), ("Total input tokens:", "total_input_tokens")]
    if generates:
        rows.append(("Total generated tokens:", "total_output_tokens"))
    rows.append(("Request throughput (req/s):", "request_throughput"))
    if goodput:
        rows.append(("Request goodput (req/s):", "request_goodput"))
    if generates:
        rows += [("Output token throughput (tok/s):", "output_throughput"),
                 ("Peak output token throughput (tok/s):", "max_output_tokens_per_s")]
    rows += [("Peak concurrent requests:", lambda m: float(m["max_concurrent_requests"])),
             ("Total token throughput (tok/s):", "total_token_throughput")]
    shown = [k for k in SECTIONS if k in percentile_metrics] if generates else ["e2el"]
    sections = [(key, *SECTIONS[key]) for key in shown]
    sections += [(key, short, title) for key, (short, title) in CLIENT_SECTIONS.items()
                 if key in percentile_metrics and f"mean_{key}_ms" in values]
    for key, short, title in sections:
        rows += [("-", title), (f"Mean {short} (ms):", f"mean_{key}_ms"), (f"Median {short} (ms):", f"median_{key}_ms")]
        rows += [(f"P{pword(q)} {short} (ms):", f"p{pword(q)}_{key}_ms") for q in percentiles]
    if "spec_decode_num_drafts" in values:  # as vllm bench serve prints it from vLLM's counters
        rows += [("-", "Speculative Decoding"), ("Acceptance rate (%):", "spec_decode_acceptance_rate"),
                 ("Acceptance length:", "spec_decode_acceptance_length"), ("Drafts:", "spec_decode_num_drafts"),
                 ("Draft tokens:", "spec_decode_draft_tokens"), ("Accepted tokens:", "spec_decode_accepted_tokens"),
                 ("Per-position acceptance (%):", None)]
        rows += [(f"  Position {i}:", lambda m, i=i: 100.0 * _position(m, i))
                 for i in range(len(values["spec_decode_per_position_acceptance_rates"]))]
    return rows


def _position(m: dict, i: int) -> float:
    rates = m.get("spec_decode_per_position_acceptance_rates") or []
    return rates[i] if i < len(rates) else math.nan


def row_value(m: dict, key):
    """A row's figure in one run's result dict (None when the run has none)."""
    if key is None:
        return None
    if callable(key):
        return key(m)
    return m.get(key)


SETTINGS = ("Maximum request concurrency:", "Request rate configured (RPS):")
"""Rows of `benchmark_rows` that are the traffic's settings, not figures."""


def side_by_side_block(rows: list[tuple], measured: dict, simulated: dict | None,
                       server_rows: list[tuple] = ()) -> str:
    """`vllm bench serve`'s block (`benchmark_rows`) with a measured run's figures where vLLM
    prints them, and beside each the simulator's for the same traffic and its error (simulated /
    measured - 1, as `compare` gives it); then `server_rows` (label, measured, simulated): what
    the server's /metrics said beside what the simulator saw."""
    def shown(value) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.2f}" if math.isfinite(value) else "-"
        return str(value)

    def line(label: str, meas, sim) -> str:
        if simulated is None:
            return figure_line(label, meas)
        error = ""
        if isinstance(meas, (int, float)) and isinstance(sim, (int, float)) and meas and math.isfinite(meas) \
                and math.isfinite(sim):
            error = f"{sim / meas - 1:+.1%}"
        return f"{label:<{LABEL}} {shown(meas):<10} {shown(sim):<10} {error:>7}".rstrip()

    out = []
    for label, key in rows:
        if label in SETTINGS:  # the same on both sides: no error to show
            out.append(figure_line(label, row_value(measured, key)) if simulated is None else
                       f"{label:<{LABEL}} {shown(row_value(measured, key)):<10} {shown(row_value(measured, key))}")
        elif label in ("=", "-"):
            out.append(header_line(key, label))
            if label == "=" and simulated is not None:
                out.append(f"{'':<{LABEL}} {'measured':<10} {'simulated':<10} {'error':>7}")
        elif key is None:
            out.append(label)
        else:
            out.append(line(label, row_value(measured, key),
                            row_value(simulated, key) if simulated is not None else None))
    if server_rows:
        out.append(header_line("Server (/metrics)" + (" | Simulator" if simulated is not None else ""), "-"))
        out += [line(label, meas, sim) for label, meas, sim in server_rows]
    out.append("=" * WIDTH)
    return "\n".join(out)
