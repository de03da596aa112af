"""The figures `vllm bench serve` computes from what its client saw, computed as it computes them
(vLLM 0.33, `vllm/benchmarks/serve.py`: `calculate_metrics` and `benchmark`), under its result
file's keys.

Over the requests that succeeded: TTFT each; TPOT = (latency - TTFT) / (output tokens - 1) for
answers longer than one token (0 for the goodput check of a one-token answer); ITL pooled over
every gap; E2EL the latency. Throughputs are totals over the benchmark's duration (from the start
to the last answer). The peak output throughput counts output events in one-second buckets from
the first request's send, and the peak concurrency the requests active in each such second.
Statistics are numpy's mean, median, std and linear percentiles, in ms, of the metrics asked for
(`--percentile-metrics`) at the percentiles asked for (`--metric-percentiles`).

Times are taken in the served GPU's seconds: real seconds times the server's time scale (1 for
any server but `batchtui serve --time-scale`).
"""

from __future__ import annotations

import math

SECTIONS = ("ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue")
DETAILED = ("input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors",
            "server_queue_times", "server_ttfts")
"""The per-request arrays vllm bench serve keeps only with --save-detailed."""


def pword(q: float) -> str:
    """A percentile as vLLM names its key: 99, 99.9."""
    return str(int(q)) if int(q) == q else str(q)


def stat_keys(name: str, seconds, percentiles) -> dict:
    """mean_, median_, std_ and pNN_ `name`_ms of `seconds` (0 for none), as vLLM computes them."""
    import numpy as np

    values = np.asarray(seconds, dtype=float) if len(seconds) else np.zeros(1)
    out = {f"mean_{name}_ms": float(np.mean(values)) * 1000, f"median_{name}_ms": float(np.median(values)) * 1000,
           f"std_{name}_ms": float(np.std(values)) * 1000}
    for q in percentiles:
        out[f"p{pword(q)}_{name}_ms"] = float(np.percentile(values, q)) * 1000
    return out


def bench_figures(traffic, *, time_scale: float = 1.0, percentile_metrics=("ttft", "tpot", "itl"),
                  percentiles=(99.0,), goodput: dict | None = None, max_concurrency: int | None = None,
                  finite_rate: bool = True) -> dict:
    """vllm bench serve's result keys measured from `traffic` (a `loadgen.traffic.Traffic`):
    totals and throughputs, the per-request arrays (every request sent and finished, in the
    order sent; failed ones with zeros and their error), the peaks, and the statistics of the
    metrics asked for. The detailed arrays are all there: the caller drops `DETAILED` unless
    --save-detailed."""
    import numpy as np

    x = time_scale
    done = traffic.finished
    duration = traffic.duration * x
    ok = [s for s in done if s.outcome.success]
    output_lens, ttfts, tpots, all_tpots, itls, e2els = [], [], [], [], [], []
    total_input = 0
    for s in done:
        o = s.outcome
        if not o.success:
            output_lens.append(0)
            continue
        n = o.output_tokens or (1 + len(o.itl))  # (no usage from the server: its output events)
        output_lens.append(n)
        total_input += _prompt_len(s)
        tpot = 0.0
        if n > 1:
            tpot = (o.latency - o.ttft) * x / (n - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls.extend(g * x for g in o.itl)
        ttfts.append(o.ttft * x)
        e2els.append(o.latency * x)
    total_output = sum(output_lens)
    good = None
    if goodput:
        checks = [(values, goodput[key] / 1000) for key, values in (("ttft", ttfts), ("tpot", all_tpots),
                                                                     ("e2el", e2els)) if key in goodput]
        good = sum(all(v[i] <= slo for v, slo in checks) for i in range(len(ok)))

    def per_second(total: float) -> float:
        return total / duration if duration > 0 else 0.0

    out: dict = {
        "duration": duration, "completed": len(ok), "failed": len(done) - len(ok),
        "total_input_tokens": total_input, "total_output_tokens": total_output,
        "request_throughput": per_second(len(ok)),
        "request_goodput": per_second(good) if good is not None else None,
        "output_throughput": per_second(total_output),
        "total_token_throughput": per_second(total_input + total_output),
        "input_lens": [_prompt_len(s) for s in done],
        "output_lens": output_lens,
        "ttfts": [s.outcome.ttft * x for s in done],
        "itls": [[g * x for g in s.outcome.itl] for s in done],
        "latencies": [s.outcome.latency * x for s in done],
        "start_times": [(s.outcome.start - traffic.start) * x for s in done],
        "queue_times": [s.queue_time for s in done],
        "generated_texts": [s.outcome.generated_text for s in done],
        "errors": [s.outcome.error for s in done],
    }
    out.update(_peaks(ok, traffic.start, x))
    out["rtfx"] = 0.0
    if any(s.outcome.server_queue_time is not None or s.outcome.server_ttft is not None for s in done):
        out["server_queue_times"] = [s.outcome.server_queue_time for s in done]
        out["server_ttfts"] = [s.outcome.server_ttft for s in done]
    series = {"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els}
    if max_concurrency is not None:
        series["client_queue_time"] = [s.queue_time for s in ok]
        if finite_rate:
            series["e2el_including_client_queue"] = [s.outcome.latency * x + s.queue_time for s in ok]
    for name in SECTIONS:
        if name in percentile_metrics and name in series:
            out.update(stat_keys(name, series[name], percentiles))
    return out


def _prompt_len(sent) -> int:
    """The prompt's tokens as the server counted them (usage), else as planned."""
    o = sent.outcome
    return o.prompt_tokens if o is not None and o.prompt_tokens is not None else sent.spec.prompt_len


def _peaks(ok, start: float, x: float) -> dict:
    """vllm bench serve's max_output_tokens_per_s and max_concurrent_requests: output events and
    active requests per one-second bucket from the first successful send."""
    import numpy as np

    if not ok:
        return {"max_output_tokens_per_s": 0.0, "max_concurrent_requests": 0}
    starts = np.array([(s.outcome.start - start) * x for s in ok])
    ends = starts + np.array([s.outcome.latency * x for s in ok])
    first = starts.min()
    seconds = int(math.ceil(ends.max() - first)) + 1
    tokens = np.zeros(seconds)
    for t, s in zip(starts.tolist(), ok):
        o = s.outcome
        times = np.cumsum([t + o.ttft * x] + [g * x for g in o.itl])
        buckets = (times - first).astype(int)
        buckets = buckets[(buckets >= 0) & (buckets < seconds)]
        np.add.at(tokens, buckets, 1)
    return {"max_output_tokens_per_s": float(tokens.max()), "max_concurrent_requests": peak_concurrency(starts, ends)}


def peak_concurrency(starts, ends) -> int:
    """vllm bench serve's max_concurrent_requests: the most requests active in one second, a
    request active in every one-second bucket (from the first start) from its start's to its
    end's. (The simulator's own figure, `sim.metrics`, is the most in flight at one instant.)"""
    import numpy as np

    starts = np.asarray(starts, dtype=float)
    ends = np.asarray(ends, dtype=float)
    if not len(starts):
        return 0
    first = starts.min()
    active = np.zeros(int(math.ceil(ends.max() - first)) + 2)
    np.add.at(active, (starts - first).astype(int), 1)
    np.add.at(active, (ends - first).astype(int) + 1, -1)
    return int(np.cumsum(active).max())


def rps_change_events(workload, sent_times: list[str]) -> list[dict]:
    """vllm bench serve's record of a ramp-up: each whole rate the ramp passes ({"rps",
    "timestamp"}), the first at the start rate, stamped when the request that reached it was sent
    (`sent_times`: ISO times, one per request in the order sent)."""
    from sim.workload import request_rates

    if not workload.ramp_up_strategy or not sent_times:
        return []
    rates = request_rates(workload, workload.num_prompts)
    last = int(workload.ramp_up_start_rps)
    events = [{"rps": last, "timestamp": sent_times[0]}]
    for i, stamp in enumerate(sent_times[:len(rates)]):
        current = int(rates[i])
        if current > last:
            events += [{"rps": rps, "timestamp": stamp} for rps in range(last + 1, current + 1)]
            last = current
    return events


def result_data(*, backend: str, label, model: str, tokenizer: str, num_prompts, meta: dict, workload, rate: float,
                figures: dict, traffic, started, time_scale: float, watch, own: dict, date: str) -> dict:
    """A result file as vllm bench serve writes it: its keys in its order (setup, --metadata,
    traffic, the figures `bench_figures` measured, a ramp-up's events, speculative decoding's
    counters from `watch`, a `loadgen.scrape.ServerWatch`, then the statistics), and `own`
    (batchtui's figures) under the one key "batchtui". `started`: the wall-clock datetime the
    traffic started at; `rate`: the request rate sent (inf for none)."""
    from datetime import timedelta

    w = workload
    data: dict = {"date": date, "endpoint_type": backend, "backend": backend, "label": label,
                  "model_id": model, "tokenizer_id": tokenizer, "num_prompts": num_prompts}
    data.update(meta)
    data.update({"request_rate": rate if math.isfinite(rate) else "inf", "burstiness": float(w.burstiness),
                 "max_concurrency": w.max_concurrency or None})
    if w.ramp_up_strategy:
        data.update({"ramp_up_strategy": w.ramp_up_strategy, "ramp_up_start_rps": w.ramp_up_start_rps,
                     "ramp_up_end_rps": w.ramp_up_end_rps})
    stats = {k: v for k, v in figures.items() if k.startswith(("mean_", "median_", "std_", "p"))
             and k.endswith("_ms") and k.split("_", 1)[1].rsplit("_", 1)[0] in SECTIONS}
    data.update({k: v for k, v in figures.items() if k not in stats})
    if w.ramp_up_strategy:
        stamps = [(started + timedelta(seconds=s.sent / time_scale)).isoformat() for s in traffic.sent]
        data["rps_change_events"] = rps_change_events(w, stamps)
    spec = watch.spec_decode() if watch is not None else None
    if spec is not None:
        data.update(spec)
    data.update(stats)
    data["batchtui"] = own
    return data
