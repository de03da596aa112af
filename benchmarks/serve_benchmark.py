"""`batchtui serve` against `batchtui sim`: a real OpenAI client loads the server, and the
simulator replays the same traffic.

The client is the `openai` package (AsyncOpenAI, streaming /v1/completions with token-id prompts,
`ignore_eos`, `stream_options.include_usage`); this script only sends on schedule and measures as
`vllm bench serve` does (TTFT: send to first token; TPOT: (latency - TTFT) / (tokens - 1); output
throughput: tokens / time from the first send to the last answer). The schedule is sim's own
(`sim.workload.generate`: gamma arrivals, random lengths). The server records what it served
(`--record`): the arrivals as its clock stamped them and the lengths, which `batchtui sim
--workload` then replays with the same engine flags. Client figures are in real seconds; times
the server's --time-scale they are simulated seconds, set beside the simulator's.

Usage:
    python benchmarks/serve_benchmark.py --rates 4,16,40 --num-prompts 200 --time-scale 0.25 \\
        --stream-interval 16         # starts a server per rate, loads it, replays in sim, prints both
or against a server of your own (the client's figures only):
    batchtui serve --time-scale 0.25 --record served.jsonl          # terminal 1
    python benchmarks/serve_benchmark.py --base-url http://127.0.0.1:8000 --time-scale 0.25 \\
        --request-rate 16 --num-prompts 200                           # terminal 2
then stop the server (Ctrl-C writes served.jsonl) and `batchtui sim --workload served.jsonl`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Measured:
    ttft: float
    latency: float
    tokens: int
    prompt_tokens: int

    @property
    def tpot(self) -> float | None:
        return (self.latency - self.ttft) / (self.tokens - 1) if self.tokens > 1 else None


def prompt_ids(rng: np.random.Generator, n: int) -> list[int]:
    """A random prompt of `n` token ids, as vllm bench serve's random dataset sends (nothing shared)."""
    return rng.integers(1000, 100000, n).tolist()


async def openai_request(client, model: str, prompt: list[int], output_len: int, delay: float,
                         start: float) -> Measured:
    """One streamed completion through the openai package."""
    wait = start + delay - time.perf_counter()
    if wait > 0:
        await asyncio.sleep(wait)
    sent = time.perf_counter()
    ttft = None
    tokens = prompt_tokens = 0
    stream = await client.completions.create(
        model=model, prompt=prompt, max_tokens=output_len, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].text and ttft is None:
            ttft = time.perf_counter() - sent
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
            prompt_tokens = chunk.usage.prompt_tokens
    latency = time.perf_counter() - sent
    return Measured(ttft if ttft is not None else latency, latency, tokens, prompt_tokens)


async def aiohttp_request(session, url: str, model: str, prompt: list[int], output_len: int, delay: float,
                          start: float) -> Measured:
    """One streamed completion read as raw server-sent events with aiohttp (as vllm bench serve
    reads them: the time of the first event with text, the usage of the last)."""
    wait = start + delay - time.perf_counter()
    if wait > 0:
        await asyncio.sleep(wait)
    body = {"model": model, "prompt": prompt, "max_tokens": output_len, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    sent = time.perf_counter()
    ttft = None
    tokens = prompt_tokens = 0
    async with session.post(url + "/v1/completions", json=body) as resp:
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {await resp.text()}")
        async for line in resp.content:
            if not line.startswith(b"data: {"):
                continue
            if ttft is not None and b'"usage"' not in line:
                continue  # (parsed only for the first token and the usage: the client keeps up)
            data = json.loads(line[6:])
            if ttft is None and data["choices"] and data["choices"][0]["text"]:
                ttft = time.perf_counter() - sent
            if data.get("usage"):
                tokens = data["usage"]["completion_tokens"]
                prompt_tokens = data["usage"]["prompt_tokens"]
    latency = time.perf_counter() - sent
    return Measured(ttft if ttft is not None else latency, latency, tokens, prompt_tokens)


async def load(base_url: str, model: str, specs, client: str = "aiohttp", seed: int = 0) -> tuple[list[Measured], float]:
    """Send `specs` (RequestSpecs: arrival times in real seconds from the start) and measure."""
    rng = np.random.default_rng(seed)
    prompts = [prompt_ids(rng, s.prompt_len) for s in specs]
    gc.collect()
    gc.freeze()  # no long collection of what exists already while measuring
    if client == "openai":
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url=base_url + "/v1", api_key="none", max_retries=0, timeout=600) as oa:
            start = time.perf_counter()
            results = await asyncio.gather(*(openai_request(oa, model, p, s.output_len, s.arrival_time, start)
                                             for s, p in zip(specs, prompts)))
            return list(results), time.perf_counter() - start
    import aiohttp

    from batchtui.loadgen.client import KEEP_ALIVE_S

    # Idle connections are kept for less than the server keeps them (KEEP_ALIVE_S): a request is
    # never sent on one the server is closing (with aiohttp's 15 s, the oldest idle connection,
    # the one reused first, was the one the server closed at 5 s, and a loaded client read the
    # server's close after sending on it: ServerDisconnected).
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEP_ALIVE_S)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        await warm_up(session, base_url, len(specs))
        start = time.perf_counter()
        results = await asyncio.gather(*(aiohttp_request(session, base_url, model, p, s.output_len, s.arrival_time,
                                                         start) for s, p in zip(specs, prompts)))
        return list(results), time.perf_counter() - start


async def probe(base_url: str, model: str, time_scale: float) -> float:
    """`round_trip` with a session of its own."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        return await round_trip(session, base_url, model, time_scale)


async def warm_up(session, base_url: str, n: int) -> None:
    """Open the connections the run will need before it starts (as many as requests, at most
    256), with /health: a new request then finds one idle instead of connecting while the
    others stream."""
    async def ping() -> None:
        async with session.get(base_url + "/health") as resp:
            await resp.read()

    await asyncio.gather(*(ping() for _ in range(min(n, 256))))


async def round_trip(session, base_url: str, model: str, time_scale: float, probes: int = 12) -> float:
    """The client's own round trip on this machine (real seconds, the median of `probes`): one
    request at a time on the idle server, the TTFT the client measures less the TTFT the server
    reports for it in /metrics (the simulated GPU's, divided by the time scale). What the
    client adds to every TTFT: sending, the server waking, reading."""
    from prometheus_client.parser import text_string_to_metric_families

    async def ttft_sum() -> float:
        async with session.get(base_url + "/metrics") as resp:
            text = await resp.text()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "vllm:time_to_first_token_seconds_sum":
                    return sample.value
        raise RuntimeError("no vllm:time_to_first_token_seconds in /metrics")

    rng = np.random.default_rng(12345)
    extra = []
    for _ in range(probes):
        before = await ttft_sum()
        m = await aiohttp_request(session, base_url, model, prompt_ids(rng, 32), 1, 0.0, time.perf_counter())
        engine = (await ttft_sum() - before) / time_scale
        extra.append(m.ttft - engine)
        await asyncio.sleep(0.02)
    return float(np.median(extra))


def traffic(rate: float, num_prompts: int, input_len: int, output_len: int, seed: int = 0):
    """vllm bench serve's random traffic as sim draws it (Poisson arrivals at `rate`)."""
    from sim.workload import LengthSpec, WorkloadSpec, generate

    spec = WorkloadSpec(arrival="gamma", request_rate=rate, num_prompts=num_prompts, burstiness=1.0,
                        input=LengthSpec(mean=input_len), output=LengthSpec(mean=output_len))
    specs = generate(spec, np.random.default_rng(seed), n=num_prompts)
    t0 = specs[0].arrival_time
    return [_shift(s, t0) for s in specs]


def _shift(spec, t0: float):
    from dataclasses import replace

    return replace(spec, arrival_time=spec.arrival_time - t0)


def client_figures(results: list[Measured], duration: float, time_scale: float) -> dict:
    """The client's figures in simulated seconds (real seconds times the time scale)."""
    ttft = np.array([r.ttft for r in results]) * time_scale
    tpot = np.array([r.tpot for r in results if r.tpot is not None]) * time_scale
    tokens = sum(r.tokens for r in results)
    return {"median_ttft_ms": float(np.median(ttft)) * 1e3, "p99_ttft_ms": float(np.percentile(ttft, 99)) * 1e3,
            "median_tpot_ms": float(np.median(tpot)) * 1e3, "p99_tpot_ms": float(np.percentile(tpot, 99)) * 1e3,
            "output_throughput": tokens / (duration * time_scale), "completed": len(results),
            "total_output_tokens": tokens}


def sim_figures(trace: str, engine_flags: list[str]) -> dict:
    """`batchtui sim --workload trace --json` with the server's engine flags."""
    out = subprocess.run([sys.executable, "-m", "batchtui", "sim", "--workload", trace, "--json",
                          "--metric-percentiles", "50,99", *engine_flags],
                         capture_output=True, text=True, cwd=ROOT, check=True, timeout=600)
    return json.loads(out.stdout)


def spawn_server(time_scale: float, record: str, engine_flags: list[str],
                 server_flags: list[str] = ()) -> tuple[subprocess.Popen, str]:
    """A `batchtui serve` on a free port of 127.0.0.1 (it stops with the process group, or after
    ten minutes whatever happens)."""
    cmd = ["timeout", "600", sys.executable, "-m", "batchtui", "serve", "--port", "0", "--time-scale",
           f"{time_scale:g}", "--record", record, *server_flags, *engine_flags]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise RuntimeError(f"batchtui serve did not start: {line}{proc.stderr.read()}")
    url = line.split("http://")[1].split(",")[0]
    return proc, "http://" + url


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def compare(rate: float, num_prompts: int, time_scale: float, input_len: int = 512, output_len: int = 256,
            engine_flags: list[str] = (), seed: int = 0, client: str = "aiohttp",
            stream_interval: int = 1) -> tuple[dict, dict]:
    """Serve, load, stop, replay: (client's figures, simulator's figures) for one rate."""
    specs = traffic(rate, num_prompts, input_len, output_len, seed)
    with tempfile.TemporaryDirectory() as tmp:
        record = os.path.join(tmp, "served.jsonl")
        proc, url = spawn_server(time_scale, record, list(engine_flags),
                                 ["--stream-interval", str(stream_interval)])
        try:
            model = "meta-llama/Llama-3.1-8B-Instruct"
            # Client arrival times are real seconds: the traffic's simulated schedule, scaled.
            scaled = [_scale(s, 1 / time_scale) for s in specs]
            results, duration = asyncio.run(load(url, model, scaled, client, seed))
            # Probed after the run: the probes are not in the traffic the simulator replays
            # (the record has them last; they are cut off below).
            trip = asyncio.run(probe(url, model, time_scale))
        finally:
            stop_server(proc)
        with open(record, encoding="utf-8") as f:
            rows = f.readlines()[:len(specs)]
        with open(record, "w", encoding="utf-8") as f:
            f.writelines(rows)
        # The served engine runs without the simulated API server (its HTTP handling is real,
        # at the time scale), so the replay leaves it out too: its 0.5 ms a request and 2 us a
        # prompt token would otherwise sit in the simulator's TTFT only.
        sim = sim_figures(record, [*engine_flags, "--api-server-count", "0"])
    figures = client_figures(results, duration, time_scale)
    figures["round_trip_ms"] = trip * time_scale * 1e3
    return figures, sim


def _scale(spec, factor: float):
    from dataclasses import replace

    return replace(spec, arrival_time=spec.arrival_time * factor)


KEYS = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "output_throughput")


def table(rows) -> str:
    """Client and simulator side by side, and the client's round trip on this machine (`round_trip`,
    measured after the run: what it adds to every TTFT)."""
    lines = [f"{'rate':>5} {'figure':<22} {'client':>10} {'sim':>10} {'diff':>7}"]
    for rate, client, sim in rows:
        for key in KEYS:
            c, s = client[key], sim[key]
            lines.append(f"{rate:>5g} {key:<22} {c:>10.2f} {s:>10.2f} {100 * (c - s) / s:>+6.1f}%")
        lines.append(f"{rate:>5g} {'client round trip ms':<22} {client['round_trip_ms']:>10.2f}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="4,16,40", help="request rates to run (default 4,16,40)")
    p.add_argument("--num-prompts", type=int, default=200)
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--random-input-len", type=int, default=512)
    p.add_argument("--random-output-len", type=int, default=256)
    p.add_argument("--stream-interval", type=int, default=1,
                   help="the server's --stream-interval (tokens per event after the first)")
    p.add_argument("--client", choices=("aiohttp", "openai"), default="aiohttp",
                   help="raw server-sent events read with aiohttp (default), or the openai package")
    p.add_argument("--base-url", help="load this running server and print the client's figures (real seconds "
                                      "times --time-scale), instead of starting servers and replaying in sim")
    p.add_argument("--request-rate", type=float, default=16.0, help="with --base-url: requests/s (default 16)")
    args, engine_flags = p.parse_known_args()
    if args.base_url:
        specs = traffic(args.request_rate, args.num_prompts, args.random_input_len, args.random_output_len)
        scaled = [_scale(s, 1 / args.time_scale) for s in specs]
        results, duration = asyncio.run(load(args.base_url.rstrip("/"), "meta-llama/Llama-3.1-8B-Instruct", scaled,
                                             args.client))
        figures = client_figures(results, duration, args.time_scale)
        print(f"{len(results)} requests at {args.request_rate:g}/s (simulated), {args.random_input_len}/"
              f"{args.random_output_len} tokens; figures in simulated time (real x {args.time_scale:g})")
        for key in (*KEYS, "total_output_tokens"):
            print(f"  {key:<20} {figures[key]:>10.2f}")
        return
    rows = []
    for rate in (float(r) for r in args.rates.split(",")):
        t = time.perf_counter()
        client, sim = compare(rate, args.num_prompts, args.time_scale, args.random_input_len,
                              args.random_output_len, engine_flags, client=args.client,
                              stream_interval=args.stream_interval)
        rows.append((rate, client, sim))
        print(f"rate {rate:g}: {args.num_prompts} requests in {time.perf_counter() - t:.1f} s of wall time",
              file=sys.stderr)
    print(f"time scale {args.time_scale:g}, {args.num_prompts} requests of "
          f"{args.random_input_len}/{args.random_output_len} tokens per rate; client figures in simulated time")
    print(table(rows))


if __name__ == "__main__":
    main()
