"""`batchtui serve` under misbehaving clients: the figures of the manual's "Limits" paragraph (docs/serve.md).

Two measurements, each on a server of its own (a subprocess on a free loopback port):

- idle connections: the server started at `--open-files` descriptors (soft and hard: it cannot
  raise them), then N connections that send nothing, /health timed every 200 of them; prints the
  slowest /health and the lines the server wrote to standard error;
- a huge prompt beside live streams: three streams of a long answer run, then one client sends
  a text prompt of `--prompt-mb` MB (over the context: refused with vLLM's 400 once counted);
  prints how long it took to refuse and the streams' longest gap between two events before and
  while it was read.

Say the machine's load (`uptime`) beside the figures. `--root DIR` runs another checkout's
`batchtui` (e.g. an export of main) to set its figures beside these.

Usage:
    python benchmarks/serve_abuse.py --connections 2000 --open-files 1024 --prompt-mb 24
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def start(root: str, flags: list[str], open_files: int | None = None) -> tuple[subprocess.Popen, str]:
    def limit():
        if open_files:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    proc = subprocess.Popen([sys.executable, "-m", "batchtui", "serve", "--port", "0", *flags], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    line = proc.stdout.readline()
    if "http://" not in line:
        raise SystemExit(line + proc.stderr.read())
    return proc, "http://" + line.split("http://")[1].split(",")[0]


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def idle_connections(root: str, count: int, open_files: int, flags: list[str]) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 300)), hard))
    proc, url = start(root, flags, open_files)
    port = int(url.rsplit(":", 1)[1])
    held, slowest, failed = [], 0.0, 0
    try:
        for i in range(count):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                failed += 1
            if i % 200 == 199:
                begin = time.monotonic()
                try:
                    urllib.request.urlopen(url + "/health", timeout=5).read()
                    slowest = max(slowest, time.monotonic() - begin)
                except OSError:
                    slowest = float("inf")
    finally:
        for sock in held:
            sock.close()
        err = stop(proc)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(f"{count} idle connections at {open_files} descriptors: slowest /health {slowest * 1000:.0f} ms, "
          f"{failed} connections failed, {len(err.splitlines())} lines on standard error")


def huge_prompt(root: str, megabytes: int, flags: list[str]) -> None:
    proc, url = start(root, ["--no-enable-prefix-caching", *flags])
    big = json.dumps({"model": MODEL, "prompt": "word " * (megabytes * 1024 * 1024 // 5), "max_tokens": 5}).encode()

    async def stream(session, times):
        body = {"model": MODEL, "prompt": [7] * 100, "max_tokens": 6000, "stream": True}
        async with session.post(url + "/v1/completions", json=body) as resp:
            async for line in resp.content:
                if line.startswith(b"data: {"):
                    times.append(time.monotonic())

    async def go():
        import aiohttp

        async with aiohttp.ClientSession() as session:
            times = [[], [], []]
            tasks = [asyncio.create_task(stream(session, t)) for t in times]
            await asyncio.sleep(1.0)
            begin = time.monotonic()
            async with session.post(url + "/v1/completions", data=big,
                                    headers={"Content-Type": "application/json"}) as resp:
                status = resp.status
                await resp.read()
            end = time.monotonic()
            await asyncio.sleep(0.3)
            for task in tasks:
                task.cancel()
            gaps = [(a, b - a) for ts in times for a, b in zip(ts, ts[1:])]
            before = max((g for a, g in gaps if a < begin - 0.1), default=0.0)
            during = max((g for a, g in gaps if begin - 0.1 <= a <= end), default=0.0)
            return status, end - begin, before, during

    try:
        status, took, before, during = asyncio.run(go())
    finally:
        stop(proc)
    print(f"a {megabytes} MB prompt beside 3 streams: answered {status} in {took:.2f} s; the streams' longest "
          f"gap {before * 1000:.0f} ms before it, {during * 1000:.0f} ms while it was read")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--connections", type=int, default=2000)
    p.add_argument("--open-files", type=int, default=1024)
    p.add_argument("--prompt-mb", type=int, default=24)
    p.add_argument("--root", default=ROOT, help="the checkout whose batchtui is run (default: this one)")
    args = p.parse_args()
    new = args.root == ROOT
    idle_connections(args.root, args.connections, args.open_files, ["--timeout-keep-alive", "1"] if new else [])
    huge_prompt(args.root, args.prompt_mb, ["--max-request-size", f"{args.prompt_mb * 2}M"] if new else [])
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
