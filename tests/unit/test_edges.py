"""Hostile input at the edges of the command line (issue 22): files that never end, numbers past
what the simulator holds, a standard output that cannot be written. Each answer is a result or one
line, in bounded memory: runs that could grow do so in a child process with its address space
capped, and files are written only under tmp_path."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from batchtui.cli import main
from tests.examples import examples
from tests.unit.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
MEMORY_CAP = 1536 << 20  # bytes of address space a child may map (numpy and the app need ~700 MB)


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def batchtui(*argv: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """`batchtui ARGV` in a child whose memory is capped."""
    env = dict(os.environ, BATCHTUI_NO_PROGRESS="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "batchtui", *argv], capture_output="stdout" not in kwargs,
                          text=True, timeout=timeout, preexec_fn=kwargs.pop("preexec_fn", _cap_memory), env=env,
                          cwd=kwargs.pop("cwd", ROOT), **kwargs)


def one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err


# -- 1. bounded, interruptible reads of user files -----------------------------------------------

DEVICE_READERS = [
    ("sim", "--dataset-name", "sharegpt", "--dataset-path", "{f}", "--num-prompts", "5"),
    ("sim", "--dataset-name", "custom", "--dataset-path", "{f}", "--num-prompts", "5"),
    ("sim", "--workload", "{f}"),
    ("sim", "--profiles", "{f}", "--num-prompts", "5"),
    ("sim", "--scenario", "{f}", "--num-prompts", "5"),
    ("calibrate", "{f}", "--gpu", "h100", "--output", "{tmp}/out.toml"),
    ("compare", "{f}"),
    ("trace", "--all", "{f}"),
    ("search", "--offline", "100", "--resume", "{f}", "--output", "{tmp}/s.jsonl"),
    ("search", "--offline", "100", "--output", "{f}"),
]


@pytest.mark.parametrize("argv", DEVICE_READERS, ids=lambda a: " ".join(a[:3]))
def test_an_endless_device_is_refused_at_once(argv, tmp_path):
    args = [a.format(f="/dev/zero", tmp=tmp_path) for a in argv]
    t0 = time.monotonic()
    done = batchtui(*args, timeout=60)
    assert done.returncode == 2 and one_line(done.stderr), done.stderr[-600:]
    assert "/dev/zero" in done.stderr and "not a regular file" in done.stderr
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "out.toml").exists()


def test_random_bytes_stop_at_once_and_ctrl_c_is_heard(tmp_path):
    """The issue's case: /dev/urandom as a ShareGPT file ran to 14 GB and ignored SIGINT."""
    child = subprocess.Popen([sys.executable, "-m", "batchtui", "sim", "--dataset-name", "sharegpt",
                              "--dataset-path", "/dev/urandom", "--num-prompts", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             preexec_fn=_cap_memory, env=dict(os.environ, BATCHTUI_NO_PROGRESS="1"))
    time.sleep(3)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode in (2, 130) and one_line(err), err[-600:]


def test_a_file_over_its_kind_cap_is_refused_unread(tmp_path):
    from sim.userfiles import KINDS, size_text

    big = tmp_path / "huge.toml"
    with open(big, "wb") as f:  # sparse: no disk used
        f.truncate(KINDS["profiles"].max_bytes + 1)
    done = batchtui("sim", "--profiles", str(big), "--num-prompts", "3")
    assert done.returncode == 2 and one_line(done.stderr)
    assert size_text(KINDS["profiles"].max_bytes) in done.stderr and "huge.toml" in done.stderr


def test_a_search_journal_over_its_cap_is_refused_unread(tmp_path):
    """A 2 GB sparse file given as a journal read 2.1 GB (issue 38): now refused by its size."""
    from sim.userfiles import KINDS, size_text

    big = tmp_path / "huge.jsonl"
    with open(big, "wb") as f:
        f.truncate(2 << 30)
    done = batchtui("search", "--offline", "100", "--resume", str(big), "--output", str(tmp_path / "s.jsonl"))
    assert done.returncode == 2 and one_line(done.stderr), done.stderr
    assert size_text(KINDS["journal"].max_bytes) in done.stderr and "argument --resume" in done.stderr
    assert not (tmp_path / "s.jsonl").exists()


def _pipe(tmp_path: Path, name: str, chunk: bytes, total: int | None, stop: threading.Event) -> Path:
    """A named pipe fed `chunk` until `total` bytes (None: until `stop`)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)

    def feed():
        try:
            with open(fifo, "wb") as f:
                sent = 0
                while not stop.is_set() and (total is None or sent < total):
                    f.write(chunk)
                    sent += len(chunk)
        except (BrokenPipeError, OSError):
            pass

    threading.Thread(target=feed, daemon=True).start()
    return fifo


def test_a_pipe_is_read_up_to_its_kind_cap(tmp_path):
    from sim.userfiles import KINDS

    stop = threading.Event()
    fifo = _pipe(tmp_path, "profiles.toml", b"# a comment line that never ends the file\n" * 1000,
                 KINDS["profiles"].max_bytes * 4, stop)
    try:
        done = batchtui("sim", "--profiles", str(fifo), "--num-prompts", "3", timeout=60)
    finally:
        stop.set()
    assert done.returncode == 2 and one_line(done.stderr) and "holds more than" in done.stderr


@pytest.mark.parametrize("argv", [
    ("sim", "--dataset-name", "sharegpt", "--dataset-path", "{f}", "--num-prompts", "5"),
    ("calibrate", "{f}", "--gpu", "h100", "--output", "{tmp}/out.toml"),
], ids=["sharegpt", "calibrate"])
def test_a_pipe_of_nul_bytes_is_refused_at_its_first_chunk(tmp_path, argv):
    """NUL bytes are UTF-8, but no format read here holds one: they read 1 GiB before (issue 38)."""
    fifo = tmp_path / "nuls.json"
    os.mkfifo(fifo)
    sent = [0]
    stop = threading.Event()

    def feed():
        chunk = b"\0" * (1 << 16)
        try:
            with open(fifo, "wb") as f:
                while not stop.is_set():
                    f.write(chunk)
                    sent[0] += len(chunk)
        except OSError:  # the reader went away
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        done = batchtui(*[a.format(f=fifo, tmp=tmp_path) for a in argv], timeout=60)
    finally:
        stop.set()
    assert done.returncode == 2 and one_line(done.stderr), done.stderr
    assert "NUL bytes" in done.stderr and "nuls.json" in done.stderr
    feeder.join(10)
    assert sent[0] < 16 << 20  # a chunk and the pipe's buffer, not a gigabyte
    assert not (tmp_path / "out.toml").exists()


def test_a_pipe_of_a_small_trace_is_read_whole(tmp_path):
    stop = threading.Event()
    line = json.dumps({"arrival_time": 0.0, "prompt_len": 100, "output_len": 10}).encode() + b"\n"
    fifo = _pipe(tmp_path, "trace.jsonl", line, len(line) * 7, stop)
    done = batchtui("sim", "--workload", str(fifo), "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["completed"] == 7


def test_ctrl_c_stops_an_endless_stream(tmp_path):
    """A trace pipe that never ends (blank lines: no memory grows) is read until Ctrl-C."""
    stop = threading.Event()
    fifo = _pipe(tmp_path, "endless.jsonl", b"\n" * 4096, None, stop)
    child = subprocess.Popen([sys.executable, "-m", "batchtui", "sim", "--workload", str(fifo)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             preexec_fn=_cap_memory, env=dict(os.environ, BATCHTUI_NO_PROGRESS="1"))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until it reads the pipe
            fds = Path(f"/proc/{child.pid}/fd")
            if any(os.readlink(fd) == str(fifo) for fd in fds.iterdir() if fd.is_symlink()):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        assert child.poll() is None, child.communicate()[1]
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=20)
    finally:
        stop.set()
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130 and err.strip() == "batchtui: interrupted", err[-600:]


def test_lines_are_streamed_with_their_numbers(tmp_path):
    from sim.userfiles import read_lines

    f = tmp_path / "t.jsonl"
    f.write_bytes(b"\xef\xbb\xbfa\r\nb\n\nc")
    assert list(read_lines(f, "trace")) == [(1, "a"), (2, "b"), (3, ""), (4, "c")]


def test_deep_nesting_is_one_line(capsys, tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    for flag in ("--scenario", "--profiles"):
        code, _, err = run(capsys, "sim", flag, str(deep), "--num-prompts", "3")
        assert code == 2 and one_line(err) and "nested too deeply" in err, err
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100000 + "]" * 100000)
    code, _, err = run(capsys, "compare", str(deep_json))
    assert code == 2 and one_line(err), err


# -- 2. memory and time follow the work, not simulated time --------------------------------------

@pytest.mark.parametrize("argv, completed, duration", [
    (("--think-time", "1e8", "--turns", "2", "--num-prompts", "1"), 2, 1e8),  # was 2.38 GB and 38 s
    (("--request-rate", "1e-8", "--num-prompts", "5"), 5, 1e8),  # was a MemoryError
], ids=["think-time", "request-rate"])
def test_a_long_simulated_time_costs_no_memory(argv, completed, duration):
    done = batchtui("sim", *argv, "--json", timeout=120)
    assert done.returncode == 0, done.stderr[-600:]
    result = json.loads(done.stdout)
    assert result["completed"] == completed and result["duration"] > duration


def test_peak_token_rate_is_counted_in_the_seconds_that_hold_tokens():
    from sim.metrics import MetricsCollector

    tracemalloc.start()
    try:
        m = MetricsCollector()
        m.on_arrival(0.0)
        m.on_iteration(0.0, 0.5, 3, 1, "none", 3, 0)
        m.on_iteration(5e8, 5e8 + 0.25, 2, 1, "none", 2, 0)
        m.on_iteration(5e8 + 0.25, 5e8 + 0.5, 2, 1, "none", 2, 0)
        m.on_decode_iterations(9e8, [9e8 + 0.1 * k for k in range(1, 30)], [0.1] * 29, 1, 1, "none")
        import numpy as np

        m.on_decode_iterations(9.5e8, np.array([9.5e8 + 3.0 * k for k in range(1, 5)]),
                               np.array([3.0] * 4), 7, 1, "none")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing proportional to 9.5e8 seconds
    assert m.summary(9.5e8 + 12)["max_output_tokens_per_s"] == 10.0  # 0.1 s decodes: 10 in one second


def test_a_long_schedule_is_refused_naming_the_flag(capsys):
    for argv, flag in ((["--request-rate", "1e-300", "--num-prompts", "1"], "--request-rate"),
                       (["--think-time", "1e12", "--turns", "3", "--num-prompts", "1"], "--think-time")):
        code, _, err = run(capsys, "sim", *argv)
        assert code == 2 and one_line(err) and f"argument {flag}:" in err, err


# -- 4. a failing run never replaces a file ------------------------------------------------------

@pytest.mark.parametrize("argv", [("sim", "--num-prompts", "5", "--per-request", "keep.csv"),
                                  ("sweep", "--request-rates", "2,4", "--num-prompts", "10", "--jobs", "1",
                                   "--random-input-len", "16", "--random-output-len", "4", "--json", "--csv",
                                   "keep.csv")], ids=["sim", "sweep"])
# (The sweep's requests are short: its saturation search runs thousands of them, 3.5 s of CPU at
# the default 1024 in / 128 out, 0.5 s at 16 / 4; what is checked is the failing write.)
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_a_full_or_closed_stdout_keeps_the_file(argv, stdout, tmp_path):
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    if stdout == "full":
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full")
        with open("/dev/full", "w") as full:
            done = batchtui(*argv, cwd=tmp_path, stdout=full, stderr=subprocess.PIPE)
        why = "No space left on device"
    else:
        done = batchtui(*argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        preexec_fn=lambda: (_cap_memory(), os.close(1)))
        why = "closed"
    err = done.stderr
    assert done.returncode == 1 and one_line(err) and "standard output" in err and why in err, err
    assert keep.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]  # no temporary left


def test_files_are_renamed_only_after_stdout_is_written(capsys, tmp_path, monkeypatch):
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    seen = []

    class Watch:
        def write(self, text):
            seen.append(keep.read_text())
            return len(text)

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Watch())
    assert main(["sim", "--num-prompts", "3", "--per-request", str(keep)]) == 0
    assert seen and set(seen) == {"precious\n"}
    assert keep.read_text().startswith("request_id,")


# -- 5. one-line refusals, never an internal error or a silent clamp -----------------------------

def test_the_issues_internal_errors_are_refusals(capsys, tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("[workload]\nnum_prompts = 9223372036854775807\n")
    cases = [
        (["sim", "--scenario", str(big)], "num_prompts"),
        (["sweep", "--request-rates", "1e308", "--num-prompts", "10"], "--request-rates"),
        (["plan", "--peak-rate", "1e308", "--ttft-p99", "500"], "--peak-rate"),
        (["sim", "--max-concurrency", "99999999999999999999", "--num-prompts", "3"], "--max-concurrency"),
    ]
    for argv, named in cases:
        t0 = time.monotonic()
        code, _, err = run(capsys, *argv)
        assert code == 2 and one_line(err) and named in err, (argv, err)
        assert time.monotonic() - t0 < 10, argv  # refused before the work, not after it


def test_a_block_count_of_zero_in_a_scenario_is_refused_not_unset(capsys, tmp_path):
    """`num_gpu_blocks_override = 0` was silently read as unset (issue 38); the flag refuses 0."""
    scenario = tmp_path / "zero.toml"
    scenario.write_text("num_gpu_blocks_override = 0\n")
    code, _, err = run(capsys, "sim", "--scenario", str(scenario), "--num-prompts", "3")
    assert code == 2 and one_line(err), err
    assert "num_gpu_blocks_override = 0 is not allowed: a whole number of blocks >= 2" in err
    code, _, err = run(capsys, "sim", "--num-gpu-blocks-override", "0", "--num-prompts", "3")
    assert code == 2 and "--num-gpu-blocks-override" in err


def test_an_empty_token_list_is_an_empty_prompt_not_several():
    from batchtui.serve.tokens import PromptError, completion_prompts

    with pytest.raises(PromptError, match="Either prompt or prompt_embeds must be provided and non-empty"):
        completion_prompts({"prompt": []})
    assert completion_prompts({"prompt": ["one", "two"]}) == ["one", "two"]
    assert completion_prompts({"prompt": [1, 2, 3]}) == [[1, 2, 3]]


def test_a_case_whose_expected_steps_is_a_string_fails_as_a_case(capsys, tmp_path):
    cases = json.loads((ROOT / "tests/data/vllm-scheduler-cases.json").read_text())["cases"]
    case = dict(cases[0], expected=dict(cases[0]["expected"], steps="oops"))
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"cases": [case]}))
    code, out, err = run(capsys, "trace", "--all", str(f))
    assert code == 1 and err == "" and "expected.steps" in out and "0 passed, 1 failed" in out


def test_the_issues_silent_clamps_are_refusals(capsys):
    cases = [
        (["--input-dist", "lognormal", "--input-sigma", "1e300"], "--input-sigma"),
        (["--burstiness", "1e-300", "--request-rate", "1"], "--burstiness"),
        (["--input-len", "10000000000"], "--random-input-len"),
        (["--request-rate", "1e400"], "--request-rate"),
    ]
    for argv, flag in cases:
        code, _, err = run(capsys, "sim", "--num-prompts", "3", *argv)
        assert code == 2 and one_line(err) and f"argument {flag}:" in err, (argv, err)


# -- 5. the property: every numeric flag, any number ---------------------------------------------

from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NUMBERS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e400", "-1e400", "1e308", "1e-300", "-1", "0", "1e20",
                     "99999999999999999999", "-99999999999999999999", "2147483648", "0.5", "1e-9"]),
    st.integers(-2**70, 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)

# flag -> (the other flags it needs, its other spellings)
NUMERIC_FLAGS = {
    "--request-rate": ((), ()),
    "--burstiness": (("--request-rate", "1"), ()),
    "--max-concurrency": ((), ()),
    "--random-input-len": ((), ("--input-len",)),
    "--random-output-len": ((), ("--output-len",)),
    "--random-range-ratio": ((), ()),
    "--burst-size": (("--arrival", "bursts", "--request-rate", "10"), ()),
    "--input-len-min": (("--input-dist", "uniform"), ()),
    "--input-len-max": (("--input-dist", "uniform"), ()),
    "--input-sigma": (("--input-dist", "lognormal"), ()),
    "--output-sigma": (("--output-dist", "lognormal"), ()),
    "--seed": ((), ()),
    "--random-prefix-len": ((), ()),
    "--prefix-repetition-num-prefixes": (("--dataset-name", "prefix_repetition"), ()),
    "--prefix-repetition-suffix-len": (("--dataset-name", "prefix_repetition"), ()),
    "--prefix-repetition-prefix-len": (("--dataset-name", "prefix_repetition"), ()),
    "--prefix-repetition-output-len": (("--dataset-name", "prefix_repetition"), ()),
    "--turns": ((), ()),
    "--think-time": (("--turns", "2"), ()),
    "--ramp-up-start-rps": (("--ramp-up-strategy", "linear", "--ramp-up-end-rps", "10"), ()),
    "--ramp-up-end-rps": (("--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"), ()),
    "--max-num-seqs": ((), ()),
    "--max-num-batched-tokens": ((), ()),
    "--max-model-len": ((), ()),
    "--long-prefill-token-threshold": ((), ()),
    "--gpu-memory-utilization": ((), ()),
    "--block-size": ((), ()),
    "--num-gpu-blocks-override": ((), ()),
    "--tensor-parallel-size": ((), ()),
    "--max-batch-size": (("--batching", "static"), ()),
    "--max-queue-delay-ms": (("--batching", "dynamic"), ()),
}


@pytest.fixture
def capped_memory():
    """This process's address space capped to what it maps now plus 2 GiB, for the test's length."""
    size = next(int(line.split()[1]) * 1024 for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmSize:"))
    old = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (size + (2 << 30), old[1]))
    yield
    resource.setrlimit(resource.RLIMIT_AS, old)


def _honest(flag: str, text: str, r: dict) -> None:
    """A result that ran: the number asked for is the number used (no silent clamp)."""
    value = float(text)
    n = r["num_prompts"]
    from sim.limits import MAX_SPAN_S

    assert r["duration"] <= 2 * MAX_SPAN_S  # a run's span is within what the simulator holds
    if flag == "--request-rate" and value != float("inf"):
        assert r["request_rate"] == value and r["duration"] >= n / value * (1 - 1e-9)
    if flag == "--burstiness":
        assert r["burstiness"] == value and r["duration"] >= n * (1 - 1e-9)
    if flag == "--max-concurrency":
        assert r["max_concurrency"] == value and r["max_concurrent_requests"] <= value
    if flag == "--random-input-len" and r["completed"] == n:
        assert r["total_input_tokens"] == n * value
    if flag == "--random-output-len" and r["completed"] == n:
        assert r["total_output_tokens"] == n * value
    if flag == "--seed":
        assert r["seed"] == value
    if flag == "--max-num-seqs":
        assert r["max_running"] <= value
    if flag == "--num-gpu-blocks-override":
        assert r["kv_cache_usable_blocks"] == value - 1
    if flag == "--think-time" and r["completed"] == 2 * n:
        assert r["duration"] >= value


@settings(derandomize=True, max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(flag=st.sampled_from(sorted(NUMERIC_FLAGS)), text=NUMBERS)
# Found by the property: the dataset's lengths were named by --random-input-len, which that
# dataset refuses.
@example(flag="--prefix-repetition-suffix-len", text="99999999999999999999")
@example(flag="--prefix-repetition-output-len", text="3e9")
def test_any_number_to_any_numeric_flag_is_a_result_or_one_line_naming_it(capsys, capped_memory, flag, text):
    needs, spellings = NUMERIC_FLAGS[flag]
    code, out, err = run(capsys, "sim", "--num-prompts", "3", *needs, f"{flag}={text}", "--json")
    if code == 2:
        assert one_line(err), err
        # the flag, or (a rule between two settings, such as vLLM's budget of a token per seat,
        # or a ramp's end below its start) the setting it sets by name, or the flag it clashes with
        companions = [a for a in needs if a.startswith("--")]
        names = [flag, *spellings, *companions] + [f.lstrip("-").replace("-", "_") for f in (flag, *spellings)]
        assert any(name in err for name in names), err
        return
    assert code == 0, err
    _honest(flag, text, json.loads(out))


# A small case every field of which the property below sets in turn (vLLM's case layout).
CASE = {"name": "drawn", "config": {"block_size": 16, "num_blocks": 40, "max_num_batched_tokens": 256,
                                    "max_num_seqs": 4, "max_model_len": 512},
        "requests": [{"id": "a", "arrival_step": 1, "prompt_len": 40, "output_len": 8},
                     {"id": "b", "arrival_step": 2, "prompt_len": 100, "output_len": 4}]}
CASE_FIELDS = [("config", key) for key in ("block_size", "num_blocks", "usable_blocks", "max_num_batched_tokens",
                                            "max_num_seqs", "long_prefill_token_threshold", "max_model_len",
                                            "watermark", "max_num_scheduled_tokens", "max_num_active_seqs")] + [
               ("request", key) for key in ("arrival_step", "prompt_len", "output_len", "priority")]


def _case_text(where: str, key: str, text: str) -> str:
    """CASE as JSON with the field set to the number as written (a string when it is no JSON number)."""
    marker = "__DRAWN__"
    case = json.loads(json.dumps(CASE))
    (case["config"] if where == "config" else case["requests"][0])[key] = marker
    try:
        json.loads(text)
        literal = text
    except ValueError:
        literal = json.dumps(text)
    return json.dumps(case).replace(json.dumps(marker), literal)


@settings(derandomize=True, max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(CASE_FIELDS), text=NUMBERS)
@example(field=("request", "arrival_step"), text="1000000000000000")  # ran 40 s and 1 GB (issue 38)
@example(field=("request", "output_len"), text="1000000000")
@example(field=("config", "num_blocks"), text="1000000000000")
@example(field=("config", "block_size"), text="0")  # was refused as num_blocks' fault
def test_any_number_in_any_field_of_a_trace_case_is_a_trace_or_one_line_naming_it(capsys, capped_memory, tmp_path_factory,
                                                                                  field, text):
    """The numeric flags' property, for `trace`'s case fields: a trace, or one line that names
    the field, in bounded time and memory."""
    where, key = field
    path = tmp_path_factory.mktemp("case") / "case.json"
    path.write_text(_case_text(where, key, text))
    t0 = time.monotonic()
    code, out, err = run(capsys, "trace", str(path))
    assert time.monotonic() - t0 < 30
    if code == 2:
        assert one_line(err), err
        flag = "--" + key.replace("_", "-")  # a rule vLLM's config states names the flag
        # the field, or the flag of a rule vLLM's config states, or the request refused
        assert key in err or flag in err or (key == "usable_blocks" and "num_blocks" in err) \
            or (where == "config" and "max_num_batched_tokens" in err and "max_num_seqs" in err) \
            or (where == "request" and "request a rejected" in err), err
        return
    assert code == 0, err
    assert json.loads(out)["last_step"] >= 1


def test_the_issues_trace_refusals_say_what_is_wrong(capsys, tmp_path):
    """Issue 38: the case's numbers refused as they are, the sum shown as it is."""
    cases = [
        (("request", "arrival_step", "1000000000000000"), "arrival_step must be a whole number from 1 to 100,000"),
        (("config", "num_blocks", "1000000000000"), "num_blocks = 1000000000000 is not allowed: a whole number from "
                                                    "0 to 10,000,000"),
    ]
    for (where, key, text), said in cases:
        path = tmp_path / f"{key}.json"
        path.write_text(_case_text(where, key, text))
        code, _, err = run(capsys, "trace", str(path))
        assert code == 2 and one_line(err) and said in err, err
    small = json.loads(json.dumps(CASE))
    small["config"].update(num_blocks=10, max_model_len=256)
    small["requests"][0]["output_len"] = 1_000_000_000
    path = tmp_path / "long.json"
    path.write_text(json.dumps(small))
    code, _, err = run(capsys, "trace", str(path))
    assert code == 2 and one_line(err), err
    assert "it needs 16 KV blocks (255 tokens: it stops at max_model_len (256) - 1)" in err  # not 40 + 1e9 - 1 = 255


# -- 8. Ctrl-C while starting ----------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["sim", "--num-prompts", "3"], ["--step", "2"], ["--help"]],
                         ids=["sim", "tutorial", "help"])
def test_ctrl_c_while_importing_is_one_line(argv, capsys, monkeypatch):
    """Ctrl-C while the command line imports what it needs (the parser, a subcommand, the app):
    one line and 130, not the imports' traceback. (Before Python runs batchtui at all, in its own
    start-up, the interpreter answers SIGINT itself.)"""
    import batchtui.cli.parser as parser

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(parser, "parser_for", interrupted)
    assert main(argv) == 130
    out, err = capsys.readouterr()
    assert err == "batchtui: interrupted\n" and out == ""


ENDLESS_REFUSED = """
import sys
from sim.engine import MAX_REFUSED_IN_A_ROW, Engine
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec

cause = sys.argv[1]
if cause == "max_model_len":  # every prompt longer than the model's context
    scenario = Scenario(workload=WorkloadSpec(arrival="poisson", request_rate=50.0, num_prompts=0,
                                              input=LengthSpec(mean=200_000), output=LengthSpec(mean=10)))
else:  # every request larger than the whole KV cache (static batching has no max_model_len check)
    scenario = Scenario(num_gpu_blocks_override=10, engine={"batching": "static"},
                        workload=WorkloadSpec(arrival="poisson", request_rate=50.0, num_prompts=0,
                                              input=LengthSpec(mean=1000), output=LengthSpec(mean=10)))
engine = Engine(scenario, live=True)
assert engine.step() is None and not engine.done
assert engine.metrics.rejected >= MAX_REFUSED_IN_A_ROW
before = engine.time
engine.run(max_iterations=1)
assert engine.iteration == 0 and engine.time > before and not engine.done
print("returned")
"""


@pytest.mark.parametrize("cause", ["max_model_len", "kv_cache"])
def test_an_endless_stream_whose_every_arrival_is_refused_does_not_hang_step(cause):
    """Live, endless traffic whose every request is refused left nothing to run, ever: step()
    skipped from one refused arrival to the next forever. It now returns None after
    MAX_REFUSED_IN_A_ROW of them (the run is not done; the clock is past them). In a child
    process: without the fix it would hang (the timeout only ends it)."""
    result = subprocess.run([sys.executable, "-c", ENDLESS_REFUSED, cause], capture_output=True, text=True,
                            timeout=300, cwd=ROOT, preexec_fn=_cap_memory)
    assert result.returncode == 0 and result.stdout.strip() == "returned", result.stderr[-2000:]


@pytest.mark.parametrize("table", ["[defaults]\neta_mfu = 1e-300", "[defaults]\noverhead_s = 1e300",
                                   "[gpus.h100-sxm]\nhbm_bandwidth = 1e-300", "[defaults]\nfrontend_request_s = 1e300"])
def test_a_profile_whose_times_run_past_what_a_run_holds_is_refused_in_one_line(table, tmp_path, capsys):
    """A bandwidth or an efficiency near zero was an internal error (OverflowError: cannot
    convert float infinity to integer), a host cost of 1e300 s a run whose duration had three
    hundred digits (and numpy's overflow warnings): refused before the run, naming what to check."""
    (tmp_path / "p.toml").write_text(table + "\n")
    code, out, err = run(capsys, "sim", "--profiles", tmp_path / "p.toml", "--num-prompts", 3)
    assert code == 2 and one_line(err) and out == "", err
    assert "s of simulated time a run holds: check the profile's" in err and table.split("\n")[1].split(" ")[0] in err
