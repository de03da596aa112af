"""`batchtui bench`: a load generator for OpenAI-compatible servers, run in this process against a
`batchtui serve` subprocess and against a stand-in for vLLM (tests/unit/fake_vllm.py: /tokenize,
vLLM's /metrics names, faults on demand).

What it must give: the result file `vllm bench serve --save-result` writes (its keys, read from
vLLM 0.33's source into tests/data/vllm-bench-result-keys.txt, and batchtui's own under one key),
the traffic `batchtui sim` runs for the same flags (arrivals, lengths), prompts of exact token
counts through /tokenize, failures counted and said in one line a kind, the server's /metrics,
and Ctrl-C keeping what finished."""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.closed_loop import Server
from tests.unit.cli_run import run
from tests.unit.fake_vllm import MODEL as FAKE_MODEL
from tests.unit.fake_vllm import FakeVllm, toy_tokens

ROOT = Path(__file__).resolve().parents[2]
KEYS = ROOT / "tests" / "data" / "vllm-bench-result-keys.txt"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
wall_clock = pytest.mark.wall_clock("servers")


@pytest.fixture(scope="module")
def served():
    s = Server("--time-scale", "4", "--stream-interval", "4")
    yield s
    s.stop()


def vllm_keys() -> list[tuple[str, str, str]]:
    rows = []
    for line in KEYS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            kind, key, condition = (part.strip() for part in line.split("|", 2))
            rows.append((kind, key, condition))
    return rows


def expected_keys(*, metadata=(), ramp=False, detailed=False, cap=None, finite_rate=True, spec=False,
                  metrics=("ttft", "tpot", "itl"), percentiles=("99",)) -> list[str]:
    """The keys vllm bench serve writes for a generation run with these settings, in its order,
    from the fixture: each condition it states is decided here (an unknown one fails the test, so
    a new condition in vLLM's source is seen)."""
    decide = {
        "always": True,
        "args.ramp_up_strategy is not None": ramp,
        "isinstance(metrics, BenchmarkMetrics)": True,
        "not (isinstance(metrics, BenchmarkMetrics))": False,
        "_get_server_metrics_results() is not empty": False,
        "probe_stats is not None": False,
        "rps_change_events": ramp,
        "spec_decode_stats is not None": spec,
        "diffusion_stats is not None": False,
        "task_type == TaskType.GENERATION and tokenizer": True,
        "queue_times is not None": cap is not None,
        "e2els_including_queue is not None": cap is not None and finite_rate,
        "not args.save_detailed": not detailed,
    }
    rows = vllm_keys()
    for _, _, condition in rows:
        if not condition.startswith("args.metadata") and not condition.startswith("the metric"):
            assert condition in decide, f"a condition vLLM's source has that this test does not know: {condition}"
    dropped = {key for kind, key, condition in rows if kind == "detailed" and decide[condition]}
    out = []
    for kind, key, condition in rows:
        if kind == "setup" and key == "{metadata}":
            out += list(metadata)
        elif kind in ("setup", "result") and decide[condition] and key not in dropped:
            out.append(key)
    templates = [key for kind, key, _ in rows if kind == "metric"]
    for kind, metric, condition in rows:
        if kind == "metric-call" and decide[condition] and metric in metrics:
            for template in templates:
                if "{percentile}" in template:
                    out += [template.format(metric=metric, percentile=p) for p in percentiles]
                else:
                    out.append(template.format(metric=metric))
    return out


def result_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def assert_vllm_keys(data: dict, expected: list[str]) -> None:
    """Every key vLLM writes, in its order, and nothing else but batchtui's own key."""
    ours = [k for k in data if k != "batchtui"]
    assert ours == expected, (sorted(set(ours) ^ set(expected)), ours)
    assert isinstance(data["batchtui"], dict)


# -- against batchtui serve -------------------------------------------------------------------------

@wall_clock
def test_against_batchtui_serve_the_result_file_has_vllms_keys(served, tmp_path, capsys):
    """Three runs with different flags: each file has exactly the keys vLLM 0.33's serve.py
    writes for them (tests/data/vllm-bench-result-keys.txt), in its order."""
    common = ["bench", "--base-url", served.url, "--random-input-len", 64, "--random-output-len", 8, "--save-result",
              "--result-dir", tmp_path, "--no-simulate"]
    code, out, err = run(capsys, *common, "--num-prompts", 6, "--request-rate", 20, "--result-filename", "plain.json")
    assert code == 0, err
    assert_vllm_keys(result_of(tmp_path / "plain.json"), expected_keys())

    code, out, err = run(capsys, *common, "--num-prompts", 6, "--request-rate", 40, "--max-concurrency", 2,
                         "--save-detailed", "--percentile-metrics", "ttft,tpot,itl,e2el,client_queue_time,"
                         "e2el_including_client_queue", "--metric-percentiles", "50,90,99", "--goodput", "ttft:500",
                         "--metadata", "gpu=h100-sxm", "note=x", "--max-num-seqs", 256, "--result-filename",
                         "capped.json")
    assert code == 0, err
    data = result_of(tmp_path / "capped.json")
    # (the engine flags given describe the server: kept as --metadata entries, which calibrate reads)
    assert data["max-num-seqs"] == "256"
    assert_vllm_keys(data, expected_keys(metadata=("max-num-seqs", "gpu", "note"), detailed=True, cap=2,
                                         metrics=("ttft", "tpot", "itl", "e2el", "client_queue_time",
                                                  "e2el_including_client_queue"), percentiles=("50", "90", "99")))
    assert data["max_concurrency"] == 2 and data["request_goodput"] is not None and data["gpu"] == "h100-sxm"

    code, out, err = run(capsys, *common, "--num-prompts", 8, "--ramp-up-strategy", "linear", "--ramp-up-start-rps", 10,
                         "--ramp-up-end-rps", 30, "--result-filename", "ramp.json")
    assert code == 0, err
    data = result_of(tmp_path / "ramp.json")
    assert_vllm_keys(data, expected_keys(ramp=True))
    assert [e["rps"] for e in data["rps_change_events"]] == list(range(10, 31))


SLOW_SCALE = 0.5
"""The time scale of the server whose measured TPOT and throughput are held to the simulator's: a
chunk read late by this process, on a busy machine, moves the measured times by that wall-clock
lateness times the scale. At 4 (the shared server's) a loaded CI run measured output throughput
779 tokens/s against 958 (load 6-7) and TPOT 4.66 ms against 6.17 (load 10): the first token
read late, the rest bunched. At 0.5 the same lateness moves them an eighth as much; the run lasts
about 3 s of real time."""


@wall_clock
def test_the_traffic_is_what_batchtui_sim_runs_and_the_simulated_column_is_sims(tmp_path, capsys):
    """The same flags, the same requests: bench's detailed lengths (the server's own counts) are
    sim's, request for request in the order sent, and the simulated column beside the measured
    one is `batchtui sim`'s result for those flags. (128 tokens out, on a server at SLOW_SCALE: a
    delivery some ms late on a busy machine moves the measured TPOT by that many ms times the
    scale over the request's 127 gaps; with 12 out, at scale 4, TPOT and throughput moved up to
    6 % at a load average of 6, with 64 out TPOT 11 % at 15.)"""
    traffic = ["--num-prompts", 10, "--request-rate", 30, "--random-input-len", 200, "--random-output-len", 128,
               "--random-range-ratio", 0.5, "--seed", 7]
    with Server("--time-scale", str(SLOW_SCALE), "--stream-interval", "4") as slow:
        code, out, err = run(capsys, "bench", "--base-url", slow.url, *traffic, "--save-result", "--save-detailed",
                             "--result-filename", tmp_path / "b.json")
    assert code == 0, err
    bench = result_of(tmp_path / "b.json")
    code, sim_out, err = run(capsys, "sim", *traffic, "--save-detailed", "--json")
    sim = json.loads(sim_out)
    order = sorted(range(10), key=lambda i: sim["start_times"][i])
    assert bench["input_lens"] == [sim["input_lens"][i] for i in order]
    assert bench["output_lens"] == [sim["output_lens"][i] for i in order]
    assert bench["completed"] == 10 and bench["batchtui"]["seed"] == 7
    assert bench["batchtui"]["time_scale"] == SLOW_SCALE  # read off the server's /metrics: times are the served GPU's
    assert bench["median_tpot_ms"] == pytest.approx(sim["median_tpot_ms"], rel=0.1)
    assert bench["output_throughput"] == pytest.approx(sim["output_throughput"], rel=0.1)
    simulated = bench["batchtui"]["simulated"]
    for key in ("median_ttft_ms", "median_tpot_ms", "output_throughput", "total_input_tokens"):
        assert simulated[key] == pytest.approx(sim[key]), key
    line = next(l for l in out.splitlines() if l.startswith("Median TPOT (ms):"))
    assert f"{sim['median_tpot_ms']:.2f}" in line.split()[4:6]
    assert "measured   simulated" in out and f"Time scale {SLOW_SCALE:g}" in out


@wall_clock
def test_ctrl_c_keeps_what_finished_and_exits_130(served, tmp_path):
    """SIGINT while requests are in flight: the result of the finished ones is written, the
    report printed, and the command says so in one line and exits 130 (SIGTERM: 143)."""
    for sig, code, word in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")):
        path = tmp_path / f"{word}.json"
        proc = subprocess.Popen([sys.executable, "-m", "batchtui", "bench", "--base-url", served.url, "--num-prompts",
                                 "400", "--request-rate", "8", "--random-input-len", "64", "--random-output-len", "400",
                                 "--save-result", "--result-filename", str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            # Once three requests of this run have finished on the server (the command has started
            # and sent, however slowly a busy machine starts it; the first answer read back by
            # then), with the rest in flight.
            finished = served.metric("vllm:request_success_total") + 3
            deadline = time.monotonic() + 60
            while served.metric("vllm:request_success_total") < finished and time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.1)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == code, err
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"batchtui: {word}: ") and "requests sent had finished" in last, err
        assert "Traceback" not in err
        data = result_of(path)
        assert 0 < data["completed"] < 400 and data["batchtui"]["interrupted"] is True
        assert data["batchtui"]["unfinished"] > 0 and "simulated" not in data["batchtui"]
        assert "Serving Benchmark Result" in out


# -- against a stand-in for vLLM ---------------------------------------------------------------------

@wall_clock
def test_tokenize_gives_every_prompt_its_planned_length(tmp_path, capsys):
    """With /tokenize (a tokenizer that is not batchtui's rule, adding a BOS token) every prompt
    the server counts is the planned length: words it counts as one token, the BOS counted in."""
    path = tmp_path / "r.json"
    with FakeVllm() as server:
        code, out, err = run(capsys, "bench", "--base-url", server.url, "--num-prompts", 12, "--random-input-len", 100,
                             "--random-output-len", 5, "--random-range-ratio", 0.5, "--save-result", "--save-detailed",
                             "--result-filename", path, "--no-simulate")
        bodies = list(server.bodies)
    assert code == 0, err
    said = " ".join(out.split())  # (the lines before the block are wrapped)
    assert "Prompts: exact: words the server's /tokenize counts as one token each" in said
    assert "special token the server adds to a prompt counted in" in said
    code, sim_out, _ = run(capsys, "sim", "--num-prompts", 12, "--random-input-len", 100, "--random-output-len", 5,
                           "--random-range-ratio", 0.5, "--save-detailed", "--json")
    planned = json.loads(sim_out)["input_lens"]
    data = result_of(path)
    assert sorted(data["input_lens"]) == sorted(planned)  # the server's own counts
    assert sorted(toy_tokens(b["prompt"]) + 1 for b in bodies) == sorted(planned)
    assert all(b["ignore_eos"] is True and b["stream"] is True and b["model"] == FAKE_MODEL for b in bodies)
    assert "The server counted" not in out


@wall_clock
def test_without_tokenize_the_rule_is_said_and_the_servers_counts_recorded(tmp_path, capsys):
    path = tmp_path / "r.json"
    with FakeVllm(tokenize=False) as server:
        code, out, err = run(capsys, "bench", "--base-url", server.url, "--num-prompts", 6, "--random-input-len", 80,
                             "--random-output-len", 4, "--save-result", "--save-detailed", "--result-filename", path,
                             "--no-simulate")
        bodies = list(server.bodies)
    assert code == 0, err
    assert "Prompts: a word a token: the server has no /tokenize route" in " ".join(out.split())
    data = result_of(path)
    counted = [toy_tokens(b["prompt"]) + 1 for b in bodies]
    assert sorted(data["input_lens"]) == sorted(counted) and data["total_input_tokens"] == sum(counted)
    assert all(len(b["prompt"].split()) == 80 for b in bodies)
    assert re.search(r"The server counted \+\d+\.\d% prompt tokens against the plan", out)
    assert data["batchtui"]["prompts"].startswith("a word a token")


@wall_clock
def test_failures_are_counted_as_vllm_counts_them_and_said_once_a_kind(tmp_path, capsys):
    """HTTP errors and answers cut short fail their requests (zeros and the error in the arrays),
    the others are measured; one line each kind of error, with its count."""
    path = tmp_path / "r.json"
    with FakeVllm(fail_every=4, cut_every=5) as server:
        code, out, err = run(capsys, "bench", "--base-url", server.url, "--num-prompts", 20, "--random-input-len", 20,
                             "--random-output-len", 6, "--save-result", "--save-detailed", "--result-filename", path,
                             "--no-simulate", "--max-concurrency", 1)
    assert code == 0, err
    data = result_of(path)
    assert data["completed"] == 12 and data["failed"] == 8
    errors = [e for e in data["errors"] if e]
    assert sum(e == "HTTP 503: the engine is overloaded" for e in errors) == 5
    assert len(errors) == 8 and sum(e.endswith("broke off the answer after 2 events") for e in errors) == 3
    # (as vLLM keeps them: a refused request has no TTFT, one cut short the TTFT it had; neither a latency)
    assert all(t == 0.0 for t, e in zip(data["ttfts"], data["errors"]) if e.startswith("HTTP"))
    assert all(t > 0.0 for t, e in zip(data["ttfts"], data["errors"]) if "broke off" in e)
    assert all(t == 0.0 for t, e in zip(data["latencies"], data["errors"]) if e)
    assert "Failed requests: 8 (2 kinds of error)" in out and "  5 x HTTP 503: the engine is overloaded" in out
    assert "Traceback" not in out + err


@wall_clock
def test_a_server_that_goes_away_mid_run_fails_the_rest_in_one_line(tmp_path, capsys):
    path = tmp_path / "r.json"
    server = FakeVllm().start()
    timer = threading.Timer(0.6, server.stop)
    timer.start()
    try:
        code, out, err = run(capsys, "bench", "--base-url", server.url, "--num-prompts", 40, "--request-rate", 25,
                             "--random-input-len", 20, "--random-output-len", 20, "--save-result", "--save-detailed",
                             "--result-filename", path, "--no-simulate")
    finally:
        timer.cancel()
        server.stop()
    data = result_of(path)
    assert data["completed"] + data["failed"] == 40 and data["failed"] > 0
    assert any("(connection refused)" in e for e in data["errors"])
    kinds = [line for line in out.splitlines() if re.match(r"  \d+ x ", line)]
    assert kinds and all(len(line) < 200 for line in kinds)
    assert "Traceback" not in out + err
    assert code == (0 if data["completed"] else 1)


def test_a_server_that_is_not_there_is_one_line_and_no_file(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port held bound and never listened on: nothing else can listen there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        path = tmp_path / "r.json"
        code, out, err = run(capsys, "bench", "--port", port, "--num-prompts", 3, "--save-result",
                             "--result-filename", path)
    assert code == 1 and not path.exists()
    assert err.strip() == f"batchtui: error: cannot connect to 127.0.0.1:{port} (connection refused)"


@wall_clock
def test_speculative_decodings_keys_come_from_the_servers_counters(tmp_path, capsys):
    path = tmp_path / "r.json"
    with FakeVllm(spec=True) as server:
        code, out, err = run(capsys, "bench", "--base-url", server.url, "--num-prompts", 4, "--random-input-len", 20,
                             "--random-output-len", 4, "--save-result", "--result-filename", path, "--no-simulate")
    assert code == 0, err
    data = result_of(path)
    assert_vllm_keys(data, expected_keys(spec=True))
    assert data["spec_decode_num_drafts"] == 12 and data["spec_decode_draft_tokens"] == 24
    assert data["spec_decode_acceptance_rate"] == pytest.approx(50.0)
    assert data["spec_decode_per_position_acceptance_rates"] == pytest.approx([2 / 3, 1 / 3])
    assert "Acceptance rate (%):" in out
    counters = data["batchtui"]["server_metrics"]["counters"]
    assert counters["vllm:generation_tokens"] == 16 and counters["vllm:prompt_tokens"] == data["total_input_tokens"]


@wall_clock
def test_chat_backend_sends_messages_and_times_the_first_content(tmp_path, capsys):
    path = tmp_path / "r.json"
    with FakeVllm() as server:
        code, out, err = run(capsys, "bench", "--base-url", server.url, "--backend", "openai-chat", "--num-prompts", 3,
                             "--random-input-len", 30, "--random-output-len", 5, "--temperature", 0, "--top-k", -1,
                             "--save-result", "--save-detailed", "--result-filename", path, "--no-simulate")
        bodies = list(server.bodies)
    assert code == 0, err
    assert all(b["messages"][0]["role"] == "user" and b["max_completion_tokens"] == 5 for b in bodies)
    assert all(b["temperature"] == 0 and b["top_k"] == -1 for b in bodies)
    data = result_of(path)
    assert data["output_lens"] == [5, 5, 5] and all(len(itl) == 4 for itl in data["itls"])
    assert data["endpoint_type"] == "openai-chat"


def test_mistakes_are_one_line(capsys, tmp_path):
    """Refused before anything is sent (a result that could not be written included)."""
    for argv, words in ((("--port", 1, "--save-result", "--result-filename", tmp_path),
                         f"argument --result-filename: cannot write {tmp_path}: it is a directory"),
                        (("--port", 1, "--result-dir", tmp_path), "argument --result-filename/--result-dir: needs"),
                        (("--backend", "tgi"), "argument --backend: tgi is not one batchtui bench speaks"),
                        (("--backend", "openai-chat", "--endpoint", "/v1/completions"),
                         "argument --endpoint: --backend openai-chat calls a path ending in chat/completions"),
                        (("--base-url", "localhost:8000"), "argument --base-url: 'localhost:8000' is not an http"),
                        (("--extra-body", "[1]"), "argument --extra-body: expected a JSON object"),
                        (("--header", "oops"), "argument --header: expected KEY=VALUE")):
        code, out, err = run(capsys, "bench", *argv, "--num-prompts", 2)
        assert code == 2 and err.strip().startswith(f"batchtui: error: {words}"), err


def test_every_client_flag_is_a_vllm_bench_serve_flag():
    """bench's own flags are vllm bench serve's spellings (tests/data/vllm-flags.txt), and a
    pasted `vllm bench serve` line is bench's command line."""
    from batchtui.cli.parser import build_parser, pasted

    bench_flags = {line.split()[1] for line in (ROOT / "tests/data/vllm-flags.txt").read_text().splitlines()
                   if line.startswith("bench ")}
    parser = build_parser("bench")
    sub = next(a for a in parser._actions if a.dest == "command").choices["bench"]
    group = next(g for g in sub._action_groups if g.title.startswith("the server"))
    own = {s for a in group._group_actions for s in a.option_strings}
    assert own and own <= bench_flags, own - bench_flags
    argv = pasted(["bench", "vllm", "bench", "serve", "--backend", "vllm", "--base_url", "http://x:1", "--num-prompts",
                   "5", "--ignore-eos", "--seed", "3"])
    args = parser.parse_args(argv)
    assert (args.backend, args.base_url, args.num_prompts, args.ignore_eos, args.seed) == ("vllm", "http://x:1", 5,
                                                                                           True, 3)


@given(st.lists(st.tuples(st.floats(0, 20), st.floats(0, 8)), min_size=1, max_size=40))
def test_peak_concurrency_is_vllms_count(spans):
    """measure.peak_concurrency against vllm bench serve's loop (each request counted in every
    second bucket from its start's to its end's)."""
    from batchtui.loadgen.measure import peak_concurrency

    starts = [s for s, _ in spans]
    ends = [s + d for s, d in spans]
    first = min(starts)
    buckets = [0] * (int(math.ceil(max(ends) - first)) + 1)
    for s, e in zip(starts, ends):
        for second in range(int(s - first), int(e - first) + 1):
            buckets[second] += 1
    assert peak_concurrency(starts, ends) == max(buckets)


@wall_clock
def test_prompts_carry_what_the_plan_shares(tmp_path, capsys):
    """A shared prefix is the same text in every prompt (and one run's prompts are not the
    next's); a conversation's next turn holds the answer the server gave; a dataset's prompts are
    the file's text."""
    def prompts(*flags) -> list[dict]:
        with FakeVllm() as server:
            code, out, err = run(capsys, "bench", "--base-url", server.url, "--no-simulate", *flags)
            assert code == 0, err
            return list(server.bodies)

    shared = ["--num-prompts", 6, "--random-prefix-len", 40, "--random-input-len", 10, "--random-output-len", 3]
    first, again = prompts(*shared), prompts(*shared)
    heads = {" ".join(b["prompt"].split()[:39]) for b in first}  # (the BOS is counted in the prefix)
    assert len(heads) == 1 and len({b["prompt"] for b in first}) == 6
    assert not heads & {" ".join(b["prompt"].split()[:39]) for b in again}

    chat = prompts("--backend", "openai-chat", "--num-prompts", 2, "--turns", 3, "--think-time", 0.01,
                   "--random-input-len", 8, "--random-output-len", 4)
    turns = sorted(((len(b["messages"]), b["messages"]) for b in chat), key=lambda t: t[0])
    assert [n for n, _ in turns] == [1, 1, 3, 3, 5, 5]
    for n, messages in turns[2:]:
        assert [m["role"] for m in messages] == ["user", "assistant"] * (n // 2) + ["user"]
        assert all(m["content"] == " tok" * 4 for m in messages[1::2])  # the answers as generated

    data = tmp_path / "custom.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"question number {i} about batching"}) + "\n" for i in range(4)))
    custom = prompts("--dataset-name", "custom", "--dataset-path", data, "--num-prompts", 4, "--custom-output-len", 3)
    assert sorted(b["prompt"] for b in custom) == sorted(f"question number {i} about batching" for i in range(4))
    assert all(b["max_tokens"] == 3 and "ignore_eos" not in b for b in custom)  # (vLLM's default for a file)


def test_engine_flags_given_are_kept_as_metadata_calibrate_reads():
    """The engine flags given to bench describe the server: written as --metadata entries, in
    the flags' own units, they read back as the dials given (as calibrate and compare read them)."""
    from batchtui.cli import options as o
    from batchtui.cli.cmd_bench import engine_metadata
    from batchtui.cli.measured import metadata_dials
    from batchtui.cli.parser import parser_for

    args = parser_for("bench").parse_args(["bench", "--max-num-seqs", "256", "--max-queue-delay-ms", "7",
                                           "--no-async-scheduling", "--kv-cache-dtype", "fp8", "-tp", "2"])
    written = engine_metadata(args)
    assert written["max-num-seqs"] == "256" and written["max-queue-delay-ms"] == "7"
    dials, _ = metadata_dials(written, "result.json")
    assert dials == o.given_dials(args)


def test_a_long_sessions_answers_are_kept_for_its_last_conversations_only(monkeypatch):
    """A live session's traffic never ends: the answers later turns send back are kept for the
    last KEPT_CONVERSATIONS conversations answered, a conversation answered again kept longest."""
    from batchtui.loadgen import prompts as prompts_module
    from sim.workload import RequestSpec

    monkeypatch.setattr(prompts_module, "KEPT_CONVERSATIONS", 3)
    prompts = prompts_module.Prompts(salt="s")

    def turn(conversation: str, number: int) -> RequestSpec:
        return RequestSpec(f"{conversation}-{number}", 0.0, 8, 4, turn=number, conversation=conversation)

    for conversation in ("c0", "c1", "c2"):
        prompts.answered(turn(conversation, 1), f"{conversation} one")
    prompts.answered(turn("c0", 2), "c0 two")  # c0 answered last now
    prompts.answered(turn("c3", 1), "c3 one")  # c1 answered longest ago: forgotten
    prompts.answered(RequestSpec("single", 0.0, 8, 4), "no conversation")  # no later turn sends it
    assert prompts.answers == {"c0/a1": "c0 one", "c0/a2": "c0 two", "c2/a1": "c2 one", "c3/a1": "c3 one"}
    for _ in range(100):
        prompts.answered(turn("c9", 1), "again")
    assert len(prompts.answers) == 4
    # A turn of a forgotten conversation sends words in its answer's place, as many as planned.
    third = RequestSpec("c1-3", 0.0, 20, 4, turn=3, conversation="c1", prompt_segments=(("c1/q1", 5), ("c1/a1", 4)))
    (role, text), = prompts.parts(third)
    assert role == "user" and len(text.split()) == 9
