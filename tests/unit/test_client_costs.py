"""The LiteLLM client measurement (benchmarks/client_costs.py): its stub streams as an engine does,
its reading of the turns tells first come first served from threads taking turns, and without
LiteLLM it measures nothing and says so."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from benchmarks import client_costs, client_sweep


@pytest.mark.wall_clock("servers")
def test_the_stub_streams_one_token_a_tick_as_vllm_frames_it(tmp_path):
    log, port_file = tmp_path / "stub.jsonl", tmp_path / "port"
    stub = subprocess.Popen([sys.executable, client_costs.__file__, "--stub", "--tick-ms", "4", "--log", str(log),
                             "--port-file", str(port_file)], start_new_session=True)
    try:
        for _ in range(200):
            if port_file.exists():
                break
            time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", int(port_file.read_text()), timeout=10)
        body = {"model": "stub", "messages": [{"role": "user", "content": "say r7"}], "max_tokens": 5,
                "stream": True, "stream_options": {"include_usage": True}}
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        events = [line[6:] for line in resp.read().decode().split("\n\n") if line.startswith("data: ")]
        for _ in range(100):
            if log.exists() and log.read_text():
                break
            time.sleep(0.02)
        written = json.loads(log.read_text().splitlines()[0])
    finally:
        os.killpg(stub.pid, signal.SIGTERM)
        stub.wait(10)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    tokens = [c["choices"][0]["delta"]["content"] for c in chunks[1:6]]
    assert tokens == [f" r7t{k}" for k in range(5)]
    assert chunks[6]["choices"][0]["finish_reason"] == "length"
    assert chunks[7]["usage"]["completion_tokens"] == 5
    writes = written["writes"]
    assert len(writes) == 5 and writes[0] >= written["read"]
    # One a tick of 4 ms, on the tick's schedule (a late tick is followed by an early one).
    assert all(b > a for a, b in zip(writes, writes[1:])) and writes[-1] - writes[0] > 0.012


def _run(order):
    """A run and the stub's log: thread 1's request r1 wrote tokens 0-5 before r2's first token;
    `order` is the order the threads read them (each read 1 ms after the one before)."""
    w = {("r1", k): 0.010 + 0.001 * k for k in range(6)}
    w[("r2", 0)] = 0.0165
    w[("r2", 1)] = 0.0175
    reads = {key: 0.020 + 0.001 * i for i, key in enumerate(order)}
    records = [{"tag": tag, "t0": 0.001, "end": 0.040, "thread": n,
                "seen": [(reads[(tag, k)], k) for k in range(len([x for x in w if x[0] == tag]))]}
               for n, tag in ((1, "r1"), (2, "r2"))]
    stub = {tag: {"read": 0.002, "writes": [w[(tag, k)] for k in range(len([x for x in w if x[0] == tag]))]}
            for tag in ("r1", "r2")}
    return {"window": [0.0, 0.050], "records": records}, stub


def test_the_reading_tells_first_come_first_served_from_turns():
    fifo = [("r1", k) for k in range(6)] + [("r2", 0), ("r2", 1)]
    turns = [("r1", 0), ("r2", 0), ("r1", 1), ("r2", 1), ("r1", 2), ("r1", 3), ("r1", 4), ("r1", 5)]
    first = client_costs.analyse(*_run(fifo))
    taking = client_costs.analyse(*_run(turns))
    assert first["fifo_share_p50"] == 1.0
    assert taking["fifo_share_p50"] == pytest.approx(1 / 6)
    assert taking["run_mean"] < first["run_mean"]
    # r2's first token: written at 16.5 ms, read 21 ms (turns) or 26 ms (in order) after the run began
    assert taking["out_p50"] < first["out_p50"]


@pytest.mark.parametrize("module", [client_costs, client_sweep])
def test_without_litellm_it_measures_nothing_and_says_so(tmp_path, capsys, module):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    assert module.main(["--python", str(python)]) == 0
    assert "nothing measured" in capsys.readouterr().out
