"""What a LiteLLM client costs, measured: InferenceBench's closed loop against a stub server.

The InferenceBench files in tests/data/published were measured by C Python threads in one process,
each calling `litellm.completion(stream=True)` against vLLM's /v1/chat/completions and reading the
stream chunk by chunk (github.com/yobitelcomm/bench, harness/client.py and
harness/drivers/closed_loop.py). This benchmark runs the same client against a stub server that
streams like an engine, so that everything beyond the stub's own timing is the client's:

- the stub (this file, `--stub`, a separate process: the client's threads do not share its
  interpreter) is an asyncio OpenAI-compatible server; an engine-like clock ticks every
  `--token-ms` (6 ms, about a decode step of Llama 3.1 8B on an H100 at these batch sizes) and on
  each tick every open stream gets its next token as one server-sent event, the first (after the
  role chunk, as vLLM sends it) on the first tick after the request is read; after `max_tokens`
  tokens the last chunk, the usage chunk when asked for, and `[DONE]`. It notes when it read each
  request and when it wrote each token, on the machine's monotonic clock (`time.perf_counter`,
  shared by processes on Linux).
- the client (C threads, each sending its next request when its stream has ended) builds the call
  as the harness does (`openai/<model>`, `api_base`, api_key `EMPTY`, `max_tokens` 128,
  temperature 0, timeout 120 s) and reads each chunk as the harness's loop does (its delta, its
  finish reason, its usage, its hidden cost), noting when each token's chunk reached the thread.

Per C (1, 4, 16, 64) it prints, over a window after a warm-up:

- the client process's CPU time (every thread's) per request and per streamed token, split by
  running each C twice, at `max_tokens` 128 and 2 (the CPU of a run is taken as
  requests x a + tokens x b);
- what the client adds to what the stub did: to TTFT (its TTFT from before the call to the first
  token's chunk, less the stub's time from reading the request to writing that token), split into
  the way in (before the stub has read the request) and the way out (the first token's chunk from
  the stub's write to the thread), and to TPOT (the thread's TPOT less the stub's over the same
  tokens); medians and p99 over requests;
- how the threads take turns: the mean number of tokens a thread reads in a row before another
  thread reads one (1.0: strict turns, one chunk each), and the share of a thread's chunks that
  arrive in the same read as the one before (buffered behind its own work);
- ratios to C=1 of the CPU per token, which travel between machines better than the figures.

LiteLLM is not a dependency of this project. Install the release the published runs used (the one
current on PyPI when they ran, 2026-05-16) in a scratch environment and point `--python` at it:

    python3 -m venv /tmp/litellm-venv && /tmp/litellm-venv/bin/pip install -U pip
    /tmp/litellm-venv/bin/pip install --uploaded-prior-to 2026-05-16T00:00:00Z litellm   # 1.84.0
    python benchmarks/client_costs.py --python /tmp/litellm-venv/bin/python [--seconds 10] [--repeat 2]

Without LiteLLM in that interpreter it says so and exits 0 (nothing measured). The load average is
printed beside the figures: on a shared machine the client's CPU per token grows with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MODEL = "stub"
TICK_S = 0.006

# -- the stub server ---------------------------------------------------------------------------


def _frame(data: bytes) -> bytes:
    """One piece of a chunked HTTP body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(obj) -> bytes:
    return _frame(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


class _Stream:
    __slots__ = ("writer", "rid", "max_tokens", "sent", "read_at", "writes", "usage", "cid", "prompt")

    def __init__(self, writer, rid, max_tokens, read_at, usage, prompt):
        self.writer = writer
        self.rid = rid
        self.max_tokens = max_tokens
        self.sent = 0
        self.read_at = read_at
        self.writes: list[float] = []
        self.usage = usage
        self.cid = f"chatcmpl-{rid}"
        self.prompt = prompt


class StubServer:
    """An engine-like streaming server: one token per open stream per tick."""

    def __init__(self, tick_s: float, log_path: str) -> None:
        self.tick_s = tick_s
        self.streams: list[_Stream] = []
        self.log = open(log_path, "a", buffering=1)
        self.next_id = 0

    def chunk(self, s: _Stream, delta: dict, finish=None) -> bytes:
        return _event({"id": s.cid, "object": "chat.completion.chunk", "created": 0, "model": MODEL,
                       "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    async def ticker(self) -> None:
        loop = asyncio.get_running_loop()
        nxt = loop.time()
        while True:
            nxt += self.tick_s
            delay = nxt - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                nxt = loop.time()
            done = []
            for s in self.streams:
                out = []
                if s.sent == 0:
                    out.append(self.chunk(s, {"role": "assistant", "content": ""}))
                k = s.sent
                out.append(self.chunk(s, {"content": f" {s.prompt}t{k}"}))
                s.sent = k + 1
                last = s.sent >= s.max_tokens
                if last:
                    out.append(self.chunk(s, {}, "length"))
                    if s.usage:
                        out.append(_event({"id": s.cid, "object": "chat.completion.chunk", "created": 0,
                                           "model": MODEL, "choices": [],
                                           "usage": {"prompt_tokens": 8, "completion_tokens": s.sent,
                                                     "total_tokens": 8 + s.sent}}))
                    out.append(_frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                try:
                    s.writer.write(b"".join(out))
                except Exception:  # the client went away
                    done.append(s)
                    continue
                s.writes.append(time.perf_counter())
                if last:
                    done.append(s)
            for s in done:
                self.streams.remove(s)
                self.log.write(json.dumps({"rid": s.rid, "prompt": s.prompt, "read": s.read_at,
                                           "writes": s.writes}) + "\n")

    async def handle(self, reader, writer) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                read_at = time.perf_counter()
                first = head.split(b" ", 2)
                if first[1].endswith(b"/chat/completions"):
                    req = json.loads(body)
                    prompt = req["messages"][-1]["content"].split()[-1]
                    usage = bool((req.get("stream_options") or {}).get("include_usage"))
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                                 b"transfer-encoding: chunked\r\n\r\n")
                    self.next_id += 1
                    self.streams.append(_Stream(writer, self.next_id, int(req.get("max_tokens") or 16),
                                                read_at, usage, prompt))
                else:
                    payload = b'{"object":"list","data":[]}'
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\n\r\n%s" % (len(payload), payload))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main(self, port_file: str) -> None:
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        asyncio.get_running_loop().create_task(self.ticker())
        Path(port_file + ".tmp").write_text(str(port))
        os.replace(port_file + ".tmp", port_file)
        parent = os.getppid()
        while os.getppid() == parent:  # (it ends with the process that started it, however that ends)
            await asyncio.sleep(0.5)


# -- the client (run in the LiteLLM interpreter) ------------------------------------------------


def closed_loop(threads: int, keep_going, one) -> tuple[list[threading.Thread], list[dict]]:
    """`threads` threads, started, each calling `one(number)` (the requests numbered from 0 in the
    order taken) while `keep_going()`: the threads and the list their records go to."""
    lock = threading.Lock()
    counter = [0]
    records: list[dict] = []

    def worker() -> None:
        while keep_going():
            with lock:
                number = counter[0]
                counter[0] += 1
            rec = one(number)
            with lock:
                records.append(rec)

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for w in pool:
        w.start()
    return pool, records


def client_run(base: str, threads: int, seconds: float, warmup: float, max_tokens: int,
               switch_s: float | None = None) -> dict:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if switch_s:
        sys.setswitchinterval(switch_s)
    import litellm  # noqa: F401  (what the harness imports)

    stop = threading.Event()

    def one(tag: str) -> dict:
        t0 = time.perf_counter()
        seen = []  # (time, token index) for each chunk carrying a token
        finish = None
        usage_out = None
        cost = None
        response = litellm.completion(model=f"openai/{MODEL}", messages=[{"role": "user", "content": f"say {tag}"}],
                                      max_tokens=max_tokens, temperature=0.0, stream=True, timeout=120,
                                      api_key="EMPTY", api_base=base)
        first = None
        for chunk in response:
            now = time.perf_counter()
            if first is None:
                first = now
            try:
                text = chunk.choices[0].delta.content or ""
            except (AttributeError, IndexError, TypeError):
                text = ""
            if text:
                for piece in text.split():
                    if piece.startswith(tag + "t"):
                        seen.append((now, int(piece[len(tag) + 1:])))
            reason = getattr(chunk.choices[0], "finish_reason", None) if chunk.choices else None
            if reason:
                finish = reason
            usage = getattr(chunk, "usage", None)
            if usage:
                usage_out = getattr(usage, "completion_tokens", usage_out)
            c = getattr(chunk, "_hidden_params", {}).get("response_cost")
            if c is not None:
                cost = float(c)
        end = time.perf_counter()
        return {"tag": tag, "t0": t0, "first": first, "end": end, "seen": seen, "finish": finish,
                "usage": usage_out, "cost": cost, "thread": threading.get_ident()}

    pool, records = closed_loop(threads, lambda: not stop.is_set(), lambda number: one(f"r{number + 1}"))
    time.sleep(warmup)
    cpu0, t_start = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    cpu1, t_end = time.process_time(), time.perf_counter()
    stop.set()
    for w in pool:
        w.join(timeout=30)
    # Work inside the window: requests begun in it, tokens read in it.
    began = sum(1 for r in records if t_start <= r["t0"] < t_end)
    tokens = sum(1 for r in records for t, _ in r["seen"] if t_start <= t < t_end)
    return {"threads": threads, "max_tokens": max_tokens, "window": [t_start, t_end], "cpu": cpu1 - cpu0,
            "requests": began, "tokens": tokens, "records": records,
            "switch_interval": sys.getswitchinterval(), "litellm": _version()}


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("litellm")
    except Exception:
        return "?"


# -- the driver ---------------------------------------------------------------------------------


def _q(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    k = min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))
    return v[k]


def analyse(run: dict, stub: dict) -> dict:
    t_start, t_end = run["window"]
    recs = [r for r in run["records"] if t_start <= r["t0"] and r["end"] < t_end and r["seen"]]
    ttft, way_in, way_out, tpot, stub_tpot, lag = [], [], [], [], [], []
    for r in recs:
        s = stub.get(r["tag"])
        if s is None or len(s["writes"]) < len(r["seen"]):
            continue
        first_t, first_k = r["seen"][0]
        ttft.append((first_t - r["t0"]) * 1e3)
        way_in.append((s["read"] - r["t0"]) * 1e3)
        way_out.append((first_t - s["writes"][first_k]) * 1e3)
        for t, k in r["seen"]:
            lag.append((t - s["writes"][k]) * 1e3)
        n = len(r["seen"])
        if n > 1:
            tpot.append((r["end"] - first_t) / (n - 1) * 1e3)
            stub_tpot.append((s["writes"][n - 1] - s["writes"][0]) / (n - 1) * 1e3)
    # Turn-taking: every token read in the window, in time order, with its thread.
    reads = sorted((t, r["thread"]) for r in run["records"] for t, _ in r["seen"] if t_start <= t < t_end)
    runs, cur = [], 0
    for i, (_, th) in enumerate(reads):
        if i and th != reads[i - 1][1]:
            runs.append(cur)
            cur = 0
        cur += 1
    if cur:
        runs.append(cur)
    # First come first served or turns: when a request's first token is written, the tokens the
    # stub wrote before it and the threads have not read yet are its backlog; a first-come-first-
    # served reader reads them all before it, threads taking turns read some of them.
    pairs = sorted((s["writes"][k], t) for r in run["records"] if (s := stub.get(r["tag"]))
                   for t, k in r["seen"] if k < len(s["writes"]))
    writes = [w for w, _ in pairs]
    ahead = []
    for r in recs:
        s = stub.get(r["tag"])
        if s is None:
            continue
        first_t, first_k = r["seen"][0]
        w0 = s["writes"][first_k]
        before = pairs[:bisect.bisect_left(writes, w0)]
        backlog = [t for _, t in before if t > w0]
        if len(backlog) >= 4:
            ahead.append(sum(1 for t in backlog if t < first_t) / len(backlog))
    handover = _handover_ranks(run["records"], stub, t_start, t_end)
    return {"n": len(ttft), "ttft_p50": _q(ttft, .5), "ttft_p99": _q(ttft, .99),
            "in_p50": _q(way_in, .5), "in_p99": _q(way_in, .99), "out_p50": _q(way_out, .5), "out_p99": _q(way_out, .99),
            "tpot_p50": _q(tpot, .5), "stub_tpot_p50": _q(stub_tpot, .5), "lag_p50": _q(lag, .5), "lag_p99": _q(lag, .99),
            "run_mean": statistics.fmean(runs) if runs else float("nan"),
            "fifo_share_p50": _q(ahead, .5), "fifo_cases": len(ahead),
            "handover_rank": statistics.fmean(handover) if handover else float("nan"), "handovers": len(handover)}


def _handover_ranks(records, stub, t_start, t_end) -> list[float]:
    """Who reads next when a thread stops reading: at each read by another thread than the read
    before it, the threads with a chunk written and unread are ranked by how long each has waited
    (since its oldest unread chunk was written, or since its own last read if later); the reader's
    rank among them over their number less one: 0 when the longest waiter always reads next (first
    come first served among the waiting threads), 0.5 on average when the next is any of them."""
    chunks: dict = {}  # thread -> [(read, write)] in read order
    for r in records:
        s = stub.get(r["tag"])
        if s is None:
            continue
        chunks.setdefault(r["thread"], []).extend((t, s["writes"][k]) for t, k in r["seen"] if k < len(s["writes"]))
    threads = {}
    for th, pairs in chunks.items():
        pairs.sort()
        threads[th] = ([t for t, _ in pairs], [w for _, w in pairs])
    reads = sorted((t, th) for th, (ts, _) in threads.items() for t in ts if t_start <= t < t_end)
    ranks = []
    for i in range(1, len(reads)):
        t, th = reads[i]
        if th == reads[i - 1][1]:
            continue
        waits = {}
        for other, (ts, ws) in threads.items():
            if other == reads[i - 1][1]:
                continue
            k = bisect.bisect_left(ts, t)  # its oldest chunk not read before t
            if k < len(ts) and ws[k] < t:
                waits[other] = max(ws[k], ts[k - 1]) if k else ws[k]
        if th in waits and len(waits) > 1:
            mine = waits[th]
            ranks.append(sum(1 for w in waits.values() if w < mine) / (len(waits) - 1))
    return ranks


def with_stub(tick_s: float, client) -> tuple[dict, dict]:
    """The stub in a process of its own, ended on the way out: `client(base_url, out_path)` runs the
    client against it and writes its run to `out_path`; returns (that run, the stub's log by prompt)."""
    with tempfile.TemporaryDirectory() as tmp:
        log, port_file = os.path.join(tmp, "stub.jsonl"), os.path.join(tmp, "port")
        stub = subprocess.Popen([sys.executable, __file__, "--stub", "--tick-ms", str(tick_s * 1e3), "--log", log,
                                 "--port-file", port_file])
        try:
            for _ in range(200):
                if os.path.exists(port_file):
                    break
                time.sleep(0.05)
            port = Path(port_file).read_text()
            out = os.path.join(tmp, "run.json")
            client(f"http://127.0.0.1:{port}/v1", out)
            run = json.loads(Path(out).read_text())
        finally:
            stub.terminate()
            stub.wait(10)
        stubs = {}
        for line in Path(log).read_text().splitlines():
            d = json.loads(line)
            stubs[d["prompt"]] = d
    return run, stubs


def measure(python: str, threads: int, max_tokens: int, seconds: float, warmup: float, tick_s: float,
            switch_ms: float | None = None) -> tuple[dict, dict]:
    def client(base: str, out: str) -> None:
        subprocess.run([python, __file__, "--client", base, "--threads", str(threads),
                        "--seconds", str(seconds), "--warmup", str(warmup), "--max-tokens", str(max_tokens),
                        "--out", out] + (["--switch-ms", str(switch_ms)] if switch_ms else []), check=True)

    return with_stub(tick_s, client)


def has_litellm(python: str) -> bool:
    return subprocess.run([python, "-c", "import litellm"], capture_output=True,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}).returncode == 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=os.environ.get("LITELLM_PYTHON", "/tmp/litellm-venv/bin/python"),
                   help="an interpreter with litellm installed (see the module's text)")
    p.add_argument("--threads", default="1,4,16,64")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=2.0)
    p.add_argument("--tick-ms", type=float, default=TICK_S * 1e3)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--switch-ms", type=float, help="the client's sys.setswitchinterval, ms (Python's default: 5)")
    p.add_argument("--json", help="also write every figure to this file")
    # internal: the stub and the client processes
    p.add_argument("--stub", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--log", help=argparse.SUPPRESS)
    p.add_argument("--port-file", help=argparse.SUPPRESS)
    p.add_argument("--client", help=argparse.SUPPRESS)
    p.add_argument("--max-tokens", type=int, default=128, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.stub:
        asyncio.run(StubServer(a.tick_ms / 1e3, a.log).main(a.port_file))
        return 0
    if a.client:
        res = client_run(a.client, int(a.threads), a.seconds, a.warmup, a.max_tokens,
                         a.switch_ms / 1e3 if a.switch_ms else None)
        Path(a.out).write_text(json.dumps(res))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # (the stub is ended on the way out)
    if not (os.path.exists(a.python) and has_litellm(a.python)):
        print(f"client_costs: no litellm in {a.python}: nothing measured (install it as this file's text says)")
        return 0
    tick = a.tick_ms / 1e3
    rows = []
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"(2 shared cores); stub tick {a.tick_ms} ms")
    print(f"{'C':>3} {'rep':>3} {'us/req':>7} {'us/tok':>7} {'x C=1':>6} {'TTFT p50':>8} {'p99':>6} {'in p50':>6} "
          f"{'out p50':>7} {'p99':>6} {'TPOT':>6} {'stub':>5} {'lag p50':>7} {'p99':>6} {'run':>5} {'fifo':>5} {'next':>5} "
          f"{'load':>5}")
    base_tok = None
    for rep in range(a.repeat):
        for c in [int(x) for x in a.threads.split(",")]:
            long, stub_long = measure(a.python, c, 128, a.seconds, a.warmup, tick, a.switch_ms)
            short, _ = measure(a.python, c, 2, a.seconds / 2, a.warmup, tick, a.switch_ms)
            # cpu = requests x a + tokens x b, for both runs
            r1, k1, c1 = long["requests"], long["tokens"], long["cpu"]
            r2, k2, c2 = short["requests"], short["tokens"], short["cpu"]
            det = r1 * k2 - r2 * k1
            per_req = (c1 * k2 - c2 * k1) / det if det else float("nan")
            per_tok = (r1 * c2 - r2 * c1) / det if det else float("nan")
            st = analyse(long, stub_long)
            if c == 1:
                base_tok = per_tok  # (each repeat's own C=1)
            load = os.getloadavg()[0]
            row = {"C": c, "repeat": rep, "cpu_per_request_us": per_req * 1e6, "cpu_per_token_us": per_tok * 1e6,
                   "cpu_per_token_all_us": c1 / max(k1, 1) * 1e6, "requests": r1, "tokens": k1,
                   "cpu_share": c1 / (long["window"][1] - long["window"][0]),
                   "ratio_to_c1": per_tok / base_tok if base_tok else float("nan"), "load": load,
                   "litellm": long["litellm"], **st}
            rows.append(row)
            print(f"{c:>3} {rep:>3} {row['cpu_per_request_us']:>7.0f} {row['cpu_per_token_us']:>7.0f} "
                  f"{row['ratio_to_c1']:>6.2f} {st['ttft_p50']:>8.2f} {st['ttft_p99']:>6.1f} {st['in_p50']:>6.2f} "
                  f"{st['out_p50']:>7.2f} {st['out_p99']:>6.1f} {st['tpot_p50']:>6.2f} {st['stub_tpot_p50']:>5.2f} "
                  f"{st['lag_p50']:>7.2f} {st['lag_p99']:>6.1f} {st['run_mean']:>5.2f} {st['fifo_share_p50']:>5.2f} "
                  f"{st['handover_rank']:>5.2f} {load:>5.2f}", flush=True)
    print(f"litellm {rows[0]['litellm'] if rows else '?'}, Python {sys.version.split()[0]}; "
          "us/req, us/tok: the client process's CPU (all threads) per request and per token; TTFT: the thread's; "
          "in: its call to the stub's read; out: the first token's chunk from the stub's write to the thread; "
          "lag: every token's; TPOT: the thread's, stub: the stub's own over the same tokens; run: tokens a thread "
          "reads in a row; fifo: the median share of a first token's backlog (tokens written before it, unread then) "
          "read before it, 1 for first come first served; next: the mean rank, by how long each has waited, of the "
          "thread that reads next among those waiting (0: the longest waiter always, 0.5: any of them); all in ms "
          "but the CPU")
    if a.json:
        tmp = a.json + ".tmp"
        Path(tmp).write_text(json.dumps(rows, indent=1))
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
