"""InferenceBench's concurrency sweep as its harness runs it, against client_costs.py's stub.

`bench run ... --sweep 1,4,16,64` (github.com/yobitelcomm/bench at 187265b, 2026-05-16, the sweep's
date: cli/src/inferencebench/commands/run.py, `_run_sweep`) runs the points one after another in
one process. Each point is `ClosedLoopDriver.execute`
(harness/src/inferencebench/harness/drivers/closed_loop.py): C new threads, all started at once,
each taking the next request number and calling `litellm.completion(stream=True)` until the
point's time is up; the samples are sorted by request number and the first 3 dropped (the suite's
`warmup.discard_runs`, chatbot-short.yaml), every other one counted, the first wave's included;
TTFT from before the call to the stream's first chunk (harness/client.py); p50 and p99 by
`numpy.percentile(..., method="linear")` (harness/metrics/percentiles.py).

This runs that sequence (one client process, the points in turn, new threads each) against
client_costs.py's stub (a token to every open stream every `--tick-ms`), so what the client adds to
each request's TTFT is measured: its TTFT less the stub's time from reading the request to writing
its first token. Per point it prints that added time over the counted requests (p50, p99, as the
harness computes them), over the first wave (the requests sent before any had ended) and over the
rest, and the first wave's share of the requests above the whole run's p99; each thread's own CPU
in `litellm.completion()` until it returns the stream (`time.thread_time`, medians: sim/client.py's
BUILD_SPREAD is its spread); and the client's garbage collections (a `gc.callbacks` hook: the full
ones, the longest, their share of the time, the requests whose TTFT spans one of 1 ms or more).
`--json` keeps every request's record, for other readings.

    python benchmarks/client_sweep.py --python /tmp/litellm-venv/bin/python [--seconds 4,4,10,30]

LiteLLM: install 1.84.0 (the release on PyPI when the sweep ran) as client_costs.py's text says.
Without it, it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.client_costs import MODEL, TICK_S, closed_loop, has_litellm, with_stub  # noqa: E402

DISCARD = 3
"""Samples dropped by request number (chatbot-short.yaml's warmup.discard_runs)."""


def client_sweep(base: str, points: list[int], seconds: list[float], max_tokens: int) -> list[dict]:
    """The harness's sweep: per point, C new threads in a closed loop for its seconds."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import gc

    import litellm

    pauses: list[tuple[float, float, int]] = []  # (start, end, generation) of every collection
    began = [0.0]

    def hook(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            pauses.append((began[0], time.perf_counter(), info["generation"]))

    gc.callbacks.append(hook)
    out = []
    for point, (c, duration) in enumerate(zip(points, seconds)):
        t_run = time.perf_counter()

        def one(idx: int, tag: str) -> dict:
            c0 = time.thread_time()
            t0 = time.perf_counter()
            first = None
            response = litellm.completion(model=f"openai/{MODEL}", messages=[{"role": "user", "content": f"say {tag}"}],
                                          max_tokens=max_tokens, temperature=0.0, stream=True, timeout=120,
                                          api_key="EMPTY", api_base=base)
            c1 = time.thread_time()
            for chunk in response:
                if first is None:
                    first = time.perf_counter()
                try:
                    _ = chunk.choices[0].delta.content or ""
                except (AttributeError, IndexError, TypeError):
                    pass
                _ = getattr(chunk.choices[0], "finish_reason", None) if chunk.choices else None
                _ = getattr(chunk, "usage", None)
                _ = getattr(chunk, "_hidden_params", {}).get("response_cost")
            end = time.perf_counter()
            return {"idx": idx, "tag": tag, "t0": t0, "first": first, "end": end, "cpu_call": c1 - c0,
                    "cpu": time.thread_time() - c0}

        pool, records = closed_loop(c, lambda: time.perf_counter() - t_run < duration,
                                    lambda idx: one(idx, f"p{point}r{idx}"))
        time.sleep(duration)
        for w in pool:
            w.join(timeout=60)
        records.sort(key=lambda r: r["idx"])
        out.append({"threads": c, "start": t_run, "records": records,
                    "gc": [p for p in pauses if p[0] >= t_run], "objects": len(gc.get_objects())})
    return out


def _pct(values: list[float], q: float) -> float:
    """numpy.percentile(values, q, method="linear"), without numpy."""
    v = sorted(values)
    if not v:
        return float("nan")
    pos = q / 100 * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def analyse(point: dict, stub: dict) -> dict:
    recs = [r for r in point["records"] if r["first"] is not None and r["tag"] in stub]
    first_end = min(r["end"] for r in recs)
    counted = recs[DISCARD:]
    added, wave, rest, ttft = [], [], [], []
    for r in counted:
        s = stub[r["tag"]]
        a = ((r["first"] - r["t0"]) - (s["writes"][0] - s["read"])) * 1e3
        added.append(a)
        ttft.append((r["first"] - r["t0"]) * 1e3)
        (wave if r["t0"] < first_end else rest).append(a)
    p99 = _pct(added, 99)
    wave_recs = [r for r in recs if r["t0"] < first_end]
    rest_recs = [r for r in recs if r["t0"] >= first_end]
    start = min(r["t0"] for r in recs)
    above = [r for r, a in zip(counted, added) if a > p99]
    gcs = point.get("gc", [])
    span = max(r["end"] for r in recs) - start
    long_ = [(a, b) for a, b, _ in gcs if b - a >= 1e-3]
    hit = sum(1 for r in counted if any(a < r["first"] and b > r["t0"] for a, b in long_))
    return {"C": point["threads"], "n": len(counted), "wave_n": len(wave),
            "added_p50": _pct(added, 50), "added_p99": p99, "ttft_p50": _pct(ttft, 50), "ttft_p99": _pct(ttft, 99),
            "wave_p50": _pct(wave, 50), "wave_max": max(wave) if wave else float("nan"),
            "rest_p50": _pct(rest, 50), "rest_p99": _pct(rest, 99), "rest_max": max(rest) if rest else float("nan"),
            "wave_sent": (max(stub[r["tag"]]["read"] for r in wave_recs) - start) * 1e3,
            "wave_call_cpu": _pct([r["cpu_call"] * 1e3 for r in wave_recs], 50),
            "rest_call_cpu": _pct([r["cpu_call"] * 1e3 for r in rest_recs], 50),
            "rest_cpu": _pct([r["cpu"] * 1e3 for r in rest_recs], 50),
            "gc2": sum(1 for *_, g in gcs if g == 2), "gc_max": max((b - a for a, b, _ in gcs), default=0.0) * 1e3,
            "gc_share": sum(b - a for a, b, _ in gcs) / span, "gc_hit": hit, "objects": point.get("objects", 0),
            "above_p99": len(above), "above_p99_in_wave": sum(1 for r in above if r["t0"] < first_end)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=os.environ.get("LITELLM_PYTHON", "/tmp/litellm-venv/bin/python"))
    p.add_argument("--points", default="1,4,16,64")
    p.add_argument("--seconds", default="4,4,10,30", help="each point's closed loop, s (the harness: 120 each)")
    p.add_argument("--tick-ms", type=float, default=TICK_S * 1e3)
    p.add_argument("--json", help="also write the per-request records and figures to this file")
    p.add_argument("--client", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    points = [int(x) for x in a.points.split(",")]
    seconds = [float(x) for x in a.seconds.split(",")]
    if a.client:
        res = client_sweep(a.client, points, seconds, 128)
        Path(a.out).write_text(json.dumps(res))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (os.path.exists(a.python) and has_litellm(a.python)):
        print(f"client_sweep: no litellm in {a.python}: nothing measured (install it as client_costs.py says)")
        return 0
    load0 = os.getloadavg()

    def client(base: str, out: str) -> None:
        subprocess.run([a.python, __file__, "--client", base, "--points", a.points, "--seconds", a.seconds,
                        "--out", out], check=True)

    run, stub = with_stub(a.tick_ms / 1e3, client)
    load1 = os.getloadavg()
    print(f"load average {load0[0]:.2f} before, {load1[0]:.2f} after (2 shared cores); stub tick {a.tick_ms} ms; "
          f"points {a.points}, {a.seconds} s each, one client process")
    print(f"{'C':>3} {'n':>5} {'wave':>4} {'TTFT p50':>8} {'p99':>7} {'added p50':>9} {'p99':>7} {'wave p50':>8} "
          f"{'max':>7} {'rest p50':>8} {'p99':>7} {'max':>7} {'>p99':>4} {'in wave':>7} {'sent':>6} {'call':>5} "
          f"{'rest':>5} {'req':>5} {'gc2':>4} {'gc max':>6} {'gc %':>5} {'hit':>4}")
    rows = []
    for point in run:
        st = analyse(point, stub)
        rows.append(st)
        print(f"{st['C']:>3} {st['n']:>5} {st['wave_n']:>4} {st['ttft_p50']:>8.1f} {st['ttft_p99']:>7.1f} "
              f"{st['added_p50']:>9.1f} {st['added_p99']:>7.1f} {st['wave_p50']:>8.1f} {st['wave_max']:>7.1f} "
              f"{st['rest_p50']:>8.1f} {st['rest_p99']:>7.1f} {st['rest_max']:>7.1f} {st['above_p99']:>4} "
              f"{st['above_p99_in_wave']:>7} {st['wave_sent']:>6.0f} {st['wave_call_cpu']:>5.2f} "
              f"{st['rest_call_cpu']:>5.2f} {st['rest_cpu']:>5.1f} {st['gc2']:>4} {st['gc_max']:>6.1f} "
              f"{st['gc_share'] * 100:>5.2f} {st['gc_hit']:>4}")
    print("ms. n: requests counted (the first 3 by number dropped, as the harness does); wave: of them, sent before "
          "any request had ended; added: the thread's TTFT less the stub's time from reading the request to writing "
          "its first token (what the client adds); >p99: counted requests whose added time is above its p99, and how "
          "many of those are in the first wave; sent: when the stub had read the first wave's last request, from the "
          "point's first call; call: a thread's CPU in litellm.completion() until it returns the stream (median, first "
          "wave and the rest); req: a thread's CPU a request (median, the rest); gc2: the "
          "client's full collections in the point, gc max: its longest collection (any generation), gc %: the share of "
          "the point's time in collections, hit: counted requests whose TTFT spans a collection of 1 ms or more")
    if a.json:
        tmp = a.json + ".tmp"
        Path(tmp).write_text(json.dumps({"rows": rows, "run": run, "stub": stub}))
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
