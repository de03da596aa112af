"""`batchtui serve` driven by clients batchtui did not write: the `openai` package (its response
models check the shapes), raw server-sent events read with aiohttp, and /metrics read with
prometheus-client's parser. Each server is a subprocess on a free port of 127.0.0.1, stopped by
the fixture (and by `timeout` whatever happens)."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from batchtui.serve import templates, tokens
from batchtui.serve.prom import E2E_BUCKETS, TTFT_BUCKETS
from sim.workload import estimate_tokens


class _Imported:
    """A module imported when a test first reads from it, the test skipped if it is missing:
    every test process collects this module and one runs its tests, and `openai` alone takes
    about 0.9 s of CPU to import."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(pytest.importorskip(self._name), attr)


openai = _Imported("openai")
aiohttp = _Imported("aiohttp")


# The tests share one server (time scale 4, waiting on the wall clock): as wall-clock tests they
# are in the "wall_clock-servers" xdist group (tests/conftest.py), so one worker starts it once.
pytestmark = pytest.mark.wall_clock("servers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


class Server:
    def __init__(self, *flags: str, record: str | None = None, open_files: tuple[int, int] | None = None) -> None:
        cmd = ["timeout", "300", sys.executable, "-m", "batchtui", "serve", "--port", "0", *flags]
        if record:
            cmd += ["--record", record]
        limit = None
        if open_files is not None:  # (soft, hard): the server cannot raise its descriptors past hard
            def limit():
                resource.setrlimit(resource.RLIMIT_NOFILE, open_files)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                     preexec_fn=limit)
        self.line = self.proc.stdout.readline()
        assert "http://" in self.line, self.line + self.proc.stderr.read()
        self.url = "http://" + self.line.split("http://")[1].split(",")[0]
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> str:
        return self.stop_and_read_errors(both=True)[0]

    def stop_and_read_errors(self, both: bool = False):
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        # (`timeout`, the server's guard, passes the signal on and dies of it: its code is -15)
        assert "batchtui serve: stopped" in out and "Traceback" not in err, err
        return (out, err) if both else err

    def metrics(self) -> dict:
        import urllib.request

        text = urllib.request.urlopen(self.url + "/metrics", timeout=10).read().decode()
        out = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = sample.name if not sample.labels.get("le") else f"{sample.name}[{sample.labels['le']}]"
                if "finished_reason" in sample.labels and sample.labels["finished_reason"] in ("stop", "length", "abort"):
                    key += f"{{{sample.labels['finished_reason']}}}"
                out[key] = sample.value
        return out


@pytest.fixture(scope="module")
def server():
    s = Server("--time-scale", "4")
    yield s
    s.stop()


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=60) as c:
        yield c


def test_startup_line_states_the_time_scale(server):
    assert "time scale 4 (4 times faster than the GPU would be)" in server.line and MODEL in server.line


def test_completion_has_the_asked_length_and_the_stated_prompt_count(client):
    prompt = "The quick brown fox jumps over the lazy dog, twice."
    r = client.completions.create(model=MODEL, prompt=prompt, max_tokens=7, extra_body={"ignore_eos": True})
    assert r.object == "text_completion" and r.model == MODEL
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 7 and estimate_tokens(r.choices[0].text) == 7
    assert r.usage.prompt_tokens == estimate_tokens(prompt) + 1  # and Llama's begin-of-text token
    assert r.usage.prompt_tokens_details.cached_tokens == 0  # prefix caching is on: the field is there
    ids = client.completions.create(model=MODEL, prompt=list(range(100, 140)), max_tokens=2)
    assert ids.usage.prompt_tokens == 40


def test_chat_counts_the_template(client):
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello there"}]
    r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=5)
    tok = tokens.Tokenizer(tokens.LLAMA3)
    want = sum(tok.count(text) for _, text in templates.render("llama3", messages))
    assert r.usage.prompt_tokens == want
    assert r.choices[0].message.role == "assistant" and estimate_tokens(r.choices[0].message.content) == 5


def test_streamed_chat_with_usage(client):
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Count to ten"}], max_completion_tokens=6, stream=True,
        stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert estimate_tokens(text) == 6
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 6


def test_second_turn_of_a_chat_hits_the_prefix_cache(client):
    first = [{"role": "system", "content": " ".join(["rules"] * 200)}, {"role": "user", "content": "hi"}]
    a = client.chat.completions.create(model=MODEL, messages=first, max_tokens=3)
    second = first + [{"role": "assistant", "content": a.choices[0].message.content},
                      {"role": "user", "content": "and then?"}]
    b = client.chat.completions.create(model=MODEL, messages=second, max_tokens=3)
    cached = b.usage.prompt_tokens_details.cached_tokens
    assert 200 <= cached < b.usage.prompt_tokens and cached % 16 == 0


def test_models_and_health(server, client):
    assert [m.id for m in client.models.list().data] == [MODEL]
    import urllib.request

    assert urllib.request.urlopen(server.url + "/health", timeout=10).status == 200


def test_a_mixture_of_experts_is_served_under_its_hugging_face_id():
    """Issue 39: the shipped MoE configs serve by name; /v1/models names the model as vLLM would."""
    import urllib.request

    moe = Server("--model", "openai/gpt-oss-120b", "--time-scale", "4")
    try:
        body = json.loads(urllib.request.urlopen(moe.url + "/v1/models", timeout=10).read())
        assert [m["id"] for m in body["data"]] == ["openai/gpt-oss-120b"]
        request = urllib.request.Request(moe.url + "/v1/completions", method="POST", data=json.dumps(
            {"model": "openai/gpt-oss-120b", "prompt": "hello there", "max_tokens": 3}).encode(),
            headers={"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(request, timeout=30).read())
        assert answer["usage"]["completion_tokens"] == 3
    finally:
        moe.stop()


def test_over_long_requests_get_vllms_400(client):
    with pytest.raises(openai.BadRequestError) as exc:
        client.completions.create(model=MODEL, prompt=[1] * 100, max_tokens=131_073)
    assert exc.value.status_code == 400
    assert ("max_tokens=131073 cannot be greater than max_model_len=131072. Please request fewer output "
            "tokens.") in str(exc.value)
    with pytest.raises(openai.BadRequestError, match="maximum context length is 131072 tokens. However, your "
                                                     "prompt contains 131073 input tokens"):
        client.completions.create(model=MODEL, prompt=[1] * 131073, max_tokens=1)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.completions.create(model="gpt-4", prompt="hi", max_tokens=1)


def test_bad_bodies_get_one_line_errors(server):
    import urllib.error
    import urllib.request

    for body in (b"{not json", b"[1, 2]", json.dumps({"prompt": "", "max_tokens": 3}).encode(),
                 json.dumps({"prompt": "hi", "max_tokens": -2}).encode()):
        req = urllib.request.Request(server.url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, timeout=10)
        assert exc.value.code == 400
        error = json.loads(exc.value.read())["error"]
        assert error["type"] == "BadRequestError" and "\n" not in error["message"]


def test_metrics_parse_with_vllms_names_and_buckets(server, client):
    before = server.metrics()
    for _ in range(3):
        client.completions.create(model=MODEL, prompt=[5] * 64, max_tokens=4)
    m = server.metrics()
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total",
                 "vllm:generation_tokens_total", "vllm:num_preemptions_total", "batchtui:time_scale"):
        assert name in m, name
    assert m["batchtui:time_scale"] == 4
    count = "vllm:time_to_first_token_seconds_count"
    assert m[count] - before.get(count, 0) == 3
    assert m["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"] == 12
    assert m["vllm:prompt_tokens_total"] - before["vllm:prompt_tokens_total"] == 3 * 64
    assert m["vllm:request_success_total{length}"] - before["vllm:request_success_total{length}"] == 3
    assert m["vllm:prefix_cache_hits_total"] > before["vllm:prefix_cache_hits_total"]  # the same prompt thrice
    for le in TTFT_BUCKETS:
        assert f"vllm:time_to_first_token_seconds_bucket[{le}]" in m
    assert f"vllm:e2e_request_latency_seconds_bucket[{E2E_BUCKETS[0]}]" in m
    # Latencies are simulated seconds: a 64-token prefill takes milliseconds on the simulated H100.
    ttft = (m[count] and m["vllm:time_to_first_token_seconds_sum"] / m[count])
    assert 0.001 < ttft < 0.1


def _wait_for(server, test, what: str, timeout: float = 20.0) -> dict:
    end = time.monotonic() + timeout
    while True:
        m = server.metrics()
        if test(m):
            return m
        if time.monotonic() > end:
            raise AssertionError(f"{what}: {m}")
        time.sleep(0.05)


@pytest.mark.parametrize("scheduling", ["--no-async-scheduling", "--async-scheduling"])
def test_a_client_that_disconnects_mid_stream_frees_its_blocks(scheduling):
    s = Server("--time-scale", "1", "--no-enable-prefix-caching", scheduling)
    try:
        async def go():
            async with aiohttp.ClientSession() as session:
                body = {"model": MODEL, "prompt": [7] * 2000, "max_tokens": 20000, "stream": True}
                async with session.post(s.url + "/v1/completions", json=body) as resp:
                    got = 0
                    async for line in resp.content:
                        if line.startswith(b"data: {"):
                            got += 1
                            if got == 5:
                                running = s.metrics()
                                break
                # leaving the block closes the connection mid-stream
            return running

        running = asyncio.run(go())
        assert running["vllm:num_requests_running"] == 1 and running["vllm:kv_cache_usage_perc"] > 0
        m = _wait_for(s, lambda m: m["vllm:num_requests_running"] == 0, "the request still runs")
        assert m["vllm:kv_cache_usage_perc"] == 0
        assert m["batchtui:aborted_requests_total"] == 1
        assert m["vllm:generation_tokens_total"] < 1000
    finally:
        s.stop()


def test_a_non_streaming_client_that_gives_up_is_aborted_too():
    s = Server("--time-scale", "1", "--no-enable-prefix-caching")
    try:
        with openai.OpenAI(base_url=s.url + "/v1", api_key="none", max_retries=0, timeout=0.5) as c:
            with pytest.raises(openai.APITimeoutError):
                c.completions.create(model=MODEL, prompt=[3] * 500, max_tokens=50000)
        m = _wait_for(s, lambda m: m["batchtui:aborted_requests_total"] == 1, "not aborted")
        assert m["vllm:kv_cache_usage_perc"] == 0
    finally:
        s.stop()


def test_clients_that_leave_while_their_tokens_are_written_are_no_server_error():
    """A disconnect that lands while an event is being written (the write meets a closing
    transport) aborts the request quietly: `stop()` finds no traceback on the server's stderr."""
    s = Server("--time-scale", "1", "--no-enable-prefix-caching")
    try:
        async def leave(n: int) -> None:
            async with aiohttp.ClientSession() as session:
                body = {"model": MODEL, "prompt": [7] * 100, "max_tokens": 5000, "stream": True}
                async with session.post(s.url + "/v1/completions", json=body) as resp:
                    got = 0
                    async for line in resp.content:
                        got += line.startswith(b"data: {")
                        if got == n:
                            break

        async def go():
            await asyncio.gather(*(leave(n) for n in (1, 2, 3, 5, 8, 13)))

        asyncio.run(go())
        m = _wait_for(s, lambda m: m["vllm:num_requests_running"] == 0, "a request still runs")
        assert m["batchtui:aborted_requests_total"] == 6
    finally:
        s.stop()


def test_overload_queues_and_serves_everyone(tmp_path):
    record = str(tmp_path / "served.jsonl")
    s = Server("--time-scale", "1", "--max-num-seqs", "2", record=record)
    try:
        async def go():
            async with openai.AsyncOpenAI(base_url=s.url + "/v1", api_key="none", max_retries=0) as c:
                calls = [c.completions.create(model=MODEL, prompt=[i] * 100, max_tokens=100) for i in range(12)]
                task = asyncio.gather(*calls)
                # Two run and the rest queue (not refused). Waited on as a state: under async
                # scheduling a freed seat is taken by the batch after next, so for one iteration
                # in every answer's 0.6 s one runs while the queue waits.
                waiting = await asyncio.to_thread(
                    _wait_for, s, lambda m: m["vllm:num_requests_waiting"] >= 5 and m["vllm:num_requests_running"] == 2,
                    "never two running with the rest queued")
                return waiting, await task

        waiting, results = asyncio.run(go())
        assert waiting["vllm:num_requests_waiting"] + waiting["vllm:num_requests_running"] <= 12
        assert all(r.usage.completion_tokens == 100 for r in results)
    finally:
        s.stop()
    rows = [json.loads(line) for line in open(record)]
    assert len(rows) == 12 and rows[0]["arrival_time"] == 0
    assert all(r["prompt_len"] == 100 and r["output_len"] == 100 for r in rows)


def test_serve_refuses_what_vllm_serve_would(tmp_path):
    def run(*flags):
        return subprocess.run(["timeout", "60", sys.executable, "-m", "batchtui", "serve", *flags],
                              capture_output=True, text=True, cwd=ROOT)

    r = run("--batching", "static")
    assert r.returncode == 2 and "batches continuously" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        port = taken.getsockname()[1]
        r = run("--host", "0.0.0.0", "--port", str(port))  # the exposure rule batchtui web follows too
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
        assert "argument --host: 0.0.0.0 is reachable from other machines" in r.stderr and "--expose" in r.stderr
        r = run("--host", "0.0.0.0", "--port", str(port), "--expose")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert "serving on 0.0.0.0:" in lines[0] and "no login" in lines[0] and "cannot listen" in lines[1]
    assert len(lines) == 2


async def test_the_tui_shows_the_engine_outside_traffic_drives():
    from batchtui.cli.cmd_serve import start
    from batchtui.cli.parser import build_parser
    from batchtui.cli.setup import build_setup
    from batchtui.serve.tui import ServeApp
    from batchtui.widgets.seats import SeatsView

    args = build_parser("serve").parse_args(["serve", "--port", "0", "--time-scale", "0.5", "--tui"])
    args.model = None
    app = ServeApp(lambda: start(args, build_setup(args, traffic=False), MODEL))
    async with app.run_test(size=(100, 40)) as pilot:
        url = "http://" + app.line.split("http://")[1].split(",")[0]
        async with aiohttp.ClientSession() as session:
            body = {"model": MODEL, "prompt": [9] * 300, "max_tokens": 2000, "stream": True}
            async with session.post(url + "/v1/completions", json=body) as resp:
                async for line in resp.content:
                    if line.startswith(b"data: {"):
                        break
                await pilot.pause(0.3)
                seats = app.query_one(SeatsView)
                assert seats.snapshot.running == 1
                assert "1 requests in flight" in str(app.query_one("#status").render())
        await pilot.press("q")
    assert app.served is None  # stopped with the app


def test_a_speculative_server_streams_every_token_and_counts_its_drafts():
    """With --speculative-config a step may bring several tokens: the stream still carries each
    of them, and /metrics has vLLM's vllm:spec_decode_* counters."""
    s = Server("--time-scale", "8", "--speculative-config",
               '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}')
    try:
        with openai.OpenAI(base_url=s.url + "/v1", api_key="none", max_retries=0, timeout=60) as c:
            chunks = list(c.completions.create(model=MODEL, prompt=[5] * 32, max_tokens=40, stream=True,
                                               extra_body={"ignore_eos": True}))
            r = c.completions.create(model=MODEL, prompt=[6] * 32, max_tokens=40, extra_body={"ignore_eos": True})
        assert r.usage.completion_tokens == 40
        assert estimate_tokens("".join(ch.choices[0].text for ch in chunks if ch.choices)) == 40
        m = s.metrics()
        drafts, accepted = m["vllm:spec_decode_num_drafts_total"], m["vllm:spec_decode_num_accepted_tokens_total"]
        assert drafts > 0 and 0 < accepted <= m["vllm:spec_decode_num_draft_tokens_total"] == 3 * drafts
        assert m["vllm:spec_decode_num_accepted_tokens_per_pos_total"] >= 0
        assert m["vllm:generation_tokens_total"] == 80
    finally:
        s.stop()


# -- limits and timeouts (issue 38, item 5); the guard itself: test_serve_guard.py

def _post(url: str, body: bytes) -> tuple[int, bytes, str]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")


def test_stream_is_read_as_vllm_reads_a_boolean(server):
    url = server.url + "/v1/completions"
    status, body, kind = _post(url, json.dumps({"prompt": "hi", "max_tokens": 2, "stream": "false"}).encode())
    assert status == 200 and kind.startswith("application/json") and json.loads(body)["usage"]["completion_tokens"] == 2
    status, body, kind = _post(url, json.dumps({"prompt": "hi", "max_tokens": 2, "stream": 1}).encode())
    assert status == 200 and kind.startswith("text/event-stream") and body.endswith(b"data: [DONE]\n\n")
    status, body, _ = _post(url, json.dumps({"prompt": "hi", "max_tokens": 2, "stream": "maybe"}).encode())
    error = json.loads(body)["error"]
    assert status == 400 and error["type"] == "BadRequestError" and error["param"] == "stream"
    assert error["message"].startswith("stream: Input should be a valid boolean")


def test_a_body_past_the_limit_gets_413(server):
    # The default limit: 32 bytes a token of max_model_len (131,072 tokens: 4 MiB).
    body = json.dumps({"prompt": [1] * (2 * 1024 * 1024), "max_tokens": 1}).encode()
    status, answer, _ = _post(server.url + "/v1/completions", body)
    error = json.loads(answer)["error"]
    assert status == 413 and error["code"] == 413 and "4,194,304 bytes" in error["message"]
    assert urllib.request.urlopen(server.url + "/health", timeout=10).status == 200


def _raise_own_open_files(need: int) -> tuple[int, int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"this test holds {need} sockets; the open-files limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need) if soft != resource.RLIM_INFINITY else soft, hard))
    return soft, hard


def test_two_thousand_idle_connections_leave_health_answering_within_a_second():
    """At 1,024 descriptors (the soft limit issue 38 saw; here the hard one, to which the server
    raises its soft limit of 512), 2,000 connections that send nothing: /health answers within
    1 s throughout, the idle ones are closed after the keep-alive, and standard error stays quiet."""
    old = _raise_own_open_files(2300)
    s = Server("--time-scale", "4", "--timeout-keep-alive", "1", open_files=(512, 1024))
    held = []
    try:
        (server_pid,) = Path(f"/proc/{s.proc.pid}/task/{s.proc.pid}/children").read_text().split()
        limits = Path(f"/proc/{server_pid}/limits").read_text()
        assert [line.split()[3:5] for line in limits.splitlines() if line.startswith("Max open files")] == \
            [["1024", "1024"]]
        slowest = 0.0
        for i in range(2000):
            held.append(socket.create_connection(("127.0.0.1", s.port), timeout=10))
            if i % 200 == 199:
                # The best of three: a loaded machine can hold either process back for a moment;
                # a server that stops answering (as before: at about 1,100) fails all three.
                times = []
                for _ in range(3):
                    start = time.monotonic()
                    assert urllib.request.urlopen(s.url + "/health", timeout=5).status == 200
                    times.append(time.monotonic() - start)
                slowest = max(slowest, min(times))
        assert slowest < 1.0
        # Each idle one is closed by the server: at the keep-alive, or earlier to make room.
        deadline = time.monotonic() + 15
        for sock in held:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                assert sock.recv(1) == b""
            except ConnectionResetError:
                pass
        assert urllib.request.urlopen(s.url + "/health", timeout=5).status == 200
    finally:
        for sock in held:
            sock.close()
        err = s.stop_and_read_errors()
        resource.setrlimit(resource.RLIMIT_NOFILE, old)
    assert len(err.splitlines()) <= 3, err


def test_a_slow_client_and_a_huge_prompt_beside_live_streams():
    """Three streams run while a client sends its headers a byte at a time and another sends a
    24 MB prompt: the streams' tokens keep coming (their longest gap a small part of the time the
    prompt took; counted on the event loop, it held them all that time), the slow client is cut
    off after the keep-alive, and the huge prompt gets vLLM's context-length error with its count."""
    s = Server("--time-scale", "1", "--no-enable-prefix-caching", "--max-request-size", "64M",
               "--timeout-keep-alive", "1")
    words = 24 * 1024 * 1024 // 5
    big = json.dumps({"model": MODEL, "prompt": "word " * words, "max_tokens": 5}).encode()

    async def stream(session, times):
        body = {"model": MODEL, "prompt": [7] * 100, "max_tokens": 6000, "stream": True}
        async with session.post(s.url + "/v1/completions", json=body) as resp:
            async for line in resp.content:
                if line.startswith(b"data: {"):
                    times.append(time.monotonic())

    async def slow_client() -> tuple[int, float]:
        """Bytes of its head sent (a byte every 50 ms: 12 s for all of them) before the server
        closed the connection, and how long that took."""
        start = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
        sent = 0
        try:
            for i in range(len(head)):
                writer.write(head[i:i + 1])
                await writer.drain()
                sent += 1
                try:
                    if await asyncio.wait_for(reader.read(1), 0.05) == b"":
                        break
                except TimeoutError:
                    pass
        except ConnectionError:
            pass
        writer.close()
        return sent, time.monotonic() - start

    async def go():
        async with aiohttp.ClientSession() as session:
            times = [[], [], []]
            streams = [asyncio.create_task(stream(session, t)) for t in times]
            await asyncio.sleep(1.0)
            slow = asyncio.create_task(slow_client())
            start = time.monotonic()
            async with session.post(s.url + "/v1/completions", data=big,
                                    headers={"Content-Type": "application/json"}) as resp:
                answer = resp.status, await resp.json()
            end = time.monotonic()
            cut = await slow
            await asyncio.sleep(0.3)
            for task in streams:
                task.cancel()
            gaps = [b - a for ts in times for a, b in zip(ts, ts[1:]) if start - 0.1 <= a <= end]
            return answer, gaps, cut, end - start

    try:
        (status, answer), gaps, (sent, cut_after), took = asyncio.run(go())
    finally:
        s.stop()
    assert status == 400 and f"your prompt contains {words + 1} input tokens" in answer["error"]["message"]
    # Counted on the event loop, the longest gap was the whole count (2.6 s of 2.7); read in a
    # thread, a twentieth of it whatever the machine's load (0.07 s of 1.8, 0.62 s of 14.1).
    assert gaps and max(gaps) < took / 4, (max(gaps), took)
    assert sent < 100 and cut_after < 4.0  # (its whole head is 242 bytes)


def test_an_ipv6_loopback_host_in_brackets_is_served():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    s = Server("--host", "[::1]", "--time-scale", "4")
    try:
        assert s.url.startswith("http://[::1]:")
        assert urllib.request.urlopen(s.url + "/health", timeout=10).status == 200
    finally:
        s.stop()


def test_sigterm_ends_the_requests_in_flight_and_the_server_at_once():
    """Stopping does not wait for answers that will not come (aiohttp waited a minute, twice, and
    the server lived on until its clients gave up): a stream ends with [DONE], a whole answer
    with 503, and the server exits within seconds."""
    s = Server("--time-scale", "1", "--no-enable-prefix-caching")

    async def go():
        async with aiohttp.ClientSession() as session:
            async def streamed():
                body = {"model": MODEL, "prompt": [7] * 100, "max_tokens": 100000, "stream": True}
                async with session.post(s.url + "/v1/completions", json=body) as resp:
                    lines = [line async for line in resp.content if line.strip()]
                return lines[-1]

            async def whole():
                body = {"model": MODEL, "prompt": [8] * 100, "max_tokens": 100000}
                async with session.post(s.url + "/v1/completions", json=body) as resp:
                    return resp.status, await resp.json()

            tasks = [asyncio.create_task(streamed()), asyncio.create_task(whole())]
            await asyncio.sleep(1.0)
            start = time.monotonic()
            s.proc.send_signal(signal.SIGTERM)
            last, (status, answer) = await asyncio.wait_for(asyncio.gather(*tasks), 20)
            return last, status, answer, time.monotonic() - start

    try:
        last, status, answer, took = asyncio.run(go())
        s.proc.wait(timeout=20)
    finally:
        out = s.stop() if s.proc.poll() is None else s.proc.stdout.read()
    assert last == b"data: [DONE]\n" and status == 503 and answer["error"]["code"] == 503
    assert took < 10 and "batchtui serve: stopped" in out
