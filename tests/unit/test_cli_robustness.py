"""The command line never loses a user's file and never prints a traceback.

The property test feeds random argument lists and random files (JSON Lines traces, scenario TOML,
scheduler cases, ShareGPT JSON) to every subcommand. In CI it runs a fixed, derandomized set of
examples (the same every run); the `thorough` and `dev` profiles draw more (tests/examples.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from batchtui.cli import main
from batchtui.cli.output import output_file
from tests.examples import examples
from tests.unit.cli_run import run

# The suite's profile (tests/conftest.py) sets derandomization and scales the count.
PROFILE = settings(max_examples=examples(200), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# -- never lose a file -------------------------------------------------------------------------


def test_a_failing_run_leaves_the_output_file_as_it_was(capsys, tmp_path):
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    # Every request fails (longer than max_model_len): the run itself succeeds; a bad config fails.
    code, _, err = run(capsys, "sim", "--num-prompts", "5", "--max-model-len", "100", "--block-size", "3",
                       "--per-request", str(keep))
    assert code == 2 and err.count("\n") == 1
    assert keep.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]  # no temporary left behind


def test_the_file_appears_whole_only_when_the_run_succeeds(capsys, tmp_path, monkeypatch):
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    keep.chmod(0o640)
    seen = []

    from batchtui.cli import runner

    real = runner.run_once

    def watching(*args, **kwargs):
        result = real(*args, **kwargs)
        seen.append(keep.read_text())  # after the run, before the rename
        return result

    monkeypatch.setattr(runner, "run_once", watching)
    code, out, _ = run(capsys, "sim", "--num-prompts", "7", "--per-request", str(keep))
    assert code == 0 and seen == ["precious\n"]
    assert len(keep.read_text().splitlines()) == 8
    assert stat.S_IMODE(keep.stat().st_mode) == 0o640  # the file keeps its permissions


def test_a_read_only_file_a_directory_and_a_missing_directory_are_refused(capsys, tmp_path):
    ro = tmp_path / "ro.csv"
    ro.write_text("mine\n")
    ro.chmod(0o444)
    for path, why in ((ro, "the file is read-only"), (tmp_path, "it is a directory"),
                      (tmp_path / "no" / "r.csv", "No such file or directory")):
        code, _, err = run(capsys, "sim", "--num-prompts", "3", "--per-request", str(path))
        assert code == 2 and why in err and err.count("\n") == 1, err
    assert ro.read_text() == "mine\n"


def test_a_full_disk_is_one_line_and_exit_1(capsys, tmp_path, monkeypatch):
    if Path("/dev/full").exists():  # a character device: written as a stream
        code, _, err = run(capsys, "sim", "--num-prompts", "3", "--per-request", "/dev/full")
        assert code == 1 and "No space left on device" in err and err.count("\n") == 1
    keep = tmp_path / "sweep.csv"
    keep.write_text("old\n")
    import errno

    import batchtui.cli.output as output

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

        def close(self):
            self.handle.close()

    real_fdopen = output.os.fdopen
    monkeypatch.setattr(output.os, "fdopen", lambda *a, **k: Full(real_fdopen(*a, **k)))
    code, _, err = run(capsys, "sweep", "--request-rates", "4,8", "--num-prompts", "20", "--jobs", "1",
                       "--random-input-len", "16", "--random-output-len", "4", "--csv", str(keep))  # (short: cheap)
    assert code == 1 and "cannot write" in err and "No space left on device" in err and err.count("\n") == 1
    assert keep.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv"]


def test_dash_means_standard_output_and_a_device_is_never_replaced(capsys):
    code, out, _ = run(capsys, "sim", "--num-prompts", "4", "--per-request", "-")
    assert code == 0 and out.startswith("request_id,pool,arrival_s")
    before = os.stat("/dev/null")
    code, _, _ = run(capsys, "sim", "--num-prompts", "4", "--per-request", "/dev/null")
    after = os.stat("/dev/null")
    assert code == 0 and stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_output_file_never_unlinks_what_it_did_not_make(tmp_path):
    target = tmp_path / "t.json"
    target.write_text("kept")
    with pytest.raises(RuntimeError):
        with output_file(str(target), "--x") as sink:
            sink.write("half")
            raise RuntimeError("the run failed")
    assert target.read_text() == "kept" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


# -- malformed inputs: one line, never a traceback ------------------------------------------------


@pytest.mark.parametrize(("content", "argv", "needle"), [
    ('{"name": "x", "config": null, "requests": []}', ["trace", "{f}"], "config = None"),
    ('{"name": "x", "config": {"block_size": 16, "num_blocks": 10, "max_num_batched_tokens": 64, '
     '"max_num_seqs": 4, "max_model_len": 64}, "requests": 5}', ["trace", "{f}"], "requests = 5"),
    ('{"cases": [1, 2]}', ["trace", "--all", "{f}"], "case 1 is not a case object"),
    ('{"config": {"block_size": "16"}, "requests": []}', ["trace", "{f}"], "block_size"),
    ('[[[[', ["trace", "{f}"], "not valid JSON"),
    ('{"arrival_time": 1e308, "prompt_len": 5, "output_len": 2}', ["sim", "--workload", "{f}"],
     "later than a trace may run"),
    ('{"timestamp": 5, "input_length": 5, "output_length": 2, "hash_ids": ["a"]}', ["sim", "--workload", "{f}"],
     "hash_ids must be a list of whole numbers"),
    ('[{"conversations": "no"}]', ["sim", "--dataset-name", "sharegpt", "--dataset-path", "{f}"],
     "no request in the dataset passes"),
    ('gpu = 3\n', ["sim", "--scenario", "{f}"], "gpu = 3 is not allowed"),
])
def test_malformed_files_are_one_line_errors(capsys, tmp_path, content, argv, needle):
    f = tmp_path / "input.json"
    f.write_text(content)
    code, _, err = run(capsys, *[a.replace("{f}", str(f)) for a in argv])
    assert code == 2, err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


# -- the property ---------------------------------------------------------------------------------

FLAG_VALUES = {
    "--num-prompts": st.sampled_from(["1", "3", "12", "0", "-4", "x", "1e3"]),
    "--request-rate": st.sampled_from(["inf", "5", "40", "0", "-1", "nan", "1e308", "fast"]),
    "--random-input-len": st.sampled_from(["1", "64", "300", "0", "99999999"]),
    "--random-output-len": st.sampled_from(["1", "8", "40", "0"]),
    "--random-range-ratio": st.sampled_from(["0", "0.5", "0.99", "1", "-0.1"]),
    "--burstiness": st.sampled_from(["1", "0.1", "inf", "0", "nan"]),
    "--max-num-seqs": st.sampled_from(["1", "4", "256", "0", "5000"]),
    "--max-num-batched-tokens": st.sampled_from(["16", "512", "8192", "1"]),
    "--max-model-len": st.sampled_from(["64", "4k", "32K", "200k", "1.5K", "0"]),
    "--block-size": st.sampled_from(["1", "16", "24", "512"]),
    "--num-gpu-blocks-override": st.sampled_from(["2", "30", "1000", "99999999"]),
    "--gpu-memory-utilization": st.sampled_from(["0.5", "0.92", "1", "2"]),
    "--kv-cache-dtype": st.sampled_from(["auto", "bfloat16", "fp8", "int4"]),
    "--tensor-parallel-size": st.sampled_from(["1", "2", "3"]),
    "--gpu": st.sampled_from(["h100-sxm", "NVIDIA H100 80GB HBM3", "a100-80gb", "tpu"]),
    "--model": st.sampled_from(["meta-llama/Llama-3.1-8B-Instruct", "bge-large-embedder", "llama-3.1-70b", "x"]),
    "--batching": st.sampled_from(["continuous", "static", "dynamic", "sequential", "magic"]),
    "--enable-chunked-prefill": st.just(None),
    "--no-enable-chunked-prefill": st.just(None),
    "--long-prefill-token-threshold": st.sampled_from(["0", "8", "100000"]),
    "--scheduling-policy": st.sampled_from(["fcfs", "priority", "lifo"]),
    "--seed": st.sampled_from(["0", "7", "-1"]),
    "--goodput": st.sampled_from(["ttft:100", "tpot:5", "e2el:x"]),
    "--metric-percentiles": st.sampled_from(["50,99", "0", "99.9"]),
    "--percentile-metrics": st.sampled_from(["ttft,e2el", "nope"]),
    "--ramp-up-strategy": st.sampled_from(["linear", "exponential", "cubic"]),
    "--ramp-up-start-rps": st.sampled_from(["1", "0", "10"]),
    "--ramp-up-end-rps": st.sampled_from(["2", "20"]),
    "--dataset-name": st.sampled_from(["random", "sharegpt", "custom", "timed_trace", "hf"]),
    "--dataset-path": st.sampled_from(["{jsonl}", "{sharegpt}", "{case}", "{missing}"]),
    "--workload": st.sampled_from(["{jsonl}", "{case}", "{toml}", "{missing}"]),
    "--scenario": st.sampled_from(["{toml}", "{jsonl}", "{missing}"]),
    "--per-request": st.sampled_from(["{out}", "{keep}", "-"]),
    "--save-result": st.just(None),
    "--result-filename": st.sampled_from(["{out}", "{keep}"]),
    "--json": st.just(None),
    "--jobs": st.sampled_from(["1", "0"]),
    "--request-rates": st.sampled_from(["2,inf", "1,,2", "5"]),
    "--max-num-seqs-values": st.sampled_from(["1,4", "0"]),
    "--csv": st.sampled_from(["{out}", "{keep}"]),
    "--ttft-p99": st.sampled_from(["500", "0", "1e-9"]),
    "--tpot-p99": st.sampled_from(["50", "1"]),
    "--peak-rate": st.sampled_from(["3", "-2"]),
    "--offline": st.sampled_from(["3", "0"]),
    "--gpus": st.sampled_from(["h100-sxm", "l4,a100-80gb", ",", "tpu"]),
    "--tensor-parallel-sizes": st.sampled_from(["1,2", "3"]),
    "--all": st.sampled_from(["{case}", "{jsonl}"]),
}
COMMANDS = ("sim", "sweep", "plan", "search", "trace", "steps")

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True),
                         st.text(max_size=8))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["arrival_time", "prompt_len", "output_len", "timestamp", "input_length", "output_length", "hash_ids",
         "config", "requests", "cases", "conversations", "value", "prompt", "block_size", "num_blocks",
         "max_num_seqs", "max_num_batched_tokens", "max_model_len", "expected", "name"]), inner, max_size=5)),
    max_leaves=12)


@st.composite
def files(draw):
    """Contents for each kind of input file: mostly plausible, sometimes garbage."""
    line = st.fixed_dictionaries({"arrival_time": st.floats(0, 5), "prompt_len": st.integers(1, 400),
                                  "output_len": st.integers(1, 30)})
    mooncake = st.fixed_dictionaries({"timestamp": st.integers(0, 5000), "input_length": st.integers(1, 400),
                                      "output_length": st.integers(1, 30),
                                      "hash_ids": st.lists(st.integers(0, 9), max_size=3)})
    jsonl = draw(st.one_of(
        st.lists(st.one_of(line, mooncake), min_size=1, max_size=6).map(
            lambda rows: "\n".join(json.dumps(r) for r in rows)),
        st.lists(json_values, max_size=4).map(lambda rows: "\n".join(json.dumps(r) for r in rows)),
        st.text(max_size=40)))
    sharegpt = draw(st.one_of(
        st.lists(st.fixed_dictionaries({"conversations": st.lists(st.fixed_dictionaries(
            {"from": st.just("human"), "value": st.text(min_size=0, max_size=60)}), max_size=3)}),
            max_size=5).map(json.dumps),
        json_values.map(json.dumps), st.text(max_size=30)))
    case = draw(st.one_of(json_values.map(json.dumps), st.just(json.dumps({
        "name": "c", "config": {"block_size": 16, "num_blocks": draw(st.integers(0, 20)),
                                "max_num_batched_tokens": draw(st.integers(0, 64)),
                                "max_num_seqs": draw(st.integers(0, 4)), "max_model_len": draw(st.integers(0, 128))},
        "requests": [{"id": "a", "arrival_step": 1, "prompt_len": draw(st.integers(-1, 60)),
                      "output_len": draw(st.integers(0, 4))}]}))))
    toml = draw(st.one_of(
        st.sampled_from(['gpu = "a100-80gb"\n[workload]\nnum_prompts = 4\n',
                         '[engine]\nmax_num_seqs = 2\n[workload]\nnum_prompts = 0\n',
                         '[workload]\nrequest_rate = "x"\n', 'seed = -3\n', '[workload.input]\nmean = 0\n']),
        st.text(max_size=30)))
    return {"jsonl": jsonl, "sharegpt": sharegpt, "case": case, "toml": toml}


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(COMMANDS))
    flags = draw(st.lists(st.sampled_from(sorted(FLAG_VALUES)), max_size=6, unique=True))
    argv = [command]
    if command == "trace" and draw(st.booleans()):
        argv.append(draw(st.sampled_from(["{case}", "{jsonl}", "{missing}"])))
    for flag in flags:
        value = draw(FLAG_VALUES[flag])
        argv += [flag] if value is None else [flag, value]
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--", "-x", "--no-such", "sim", "é"])))
    # Keep runs small: a run of the default thousand requests is not what this test is about.
    if command in ("sim", "sweep", "plan", "search") and "--num-prompts" not in flags:
        argv += ["--num-prompts", "6"]
    if command in ("plan", "search") and "--jobs" not in flags:
        argv += ["--jobs", "1", "--seeds", "1"]
    if command == "search":  # its journal and table in the test's folder, short confirmations
        argv += ["--output", "{journal}", "--confirm-prompts", "12", "--confirm", "1"]
        if not {"--ttft-p99", "--tpot-p99", "--offline"} & set(flags):
            argv += ["--tpot-p99", "50", "--peak-rate", "3"]
    return argv


@pytest.fixture
def tiny_plan(monkeypatch):
    from sim import rate_plan

    monkeypatch.setattr(rate_plan, "PLAN_MIN_PROMPTS", 1)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW", 4)
    monkeypatch.setattr(rate_plan, "PLAN_MIN_WINDOW_S", 0.0)
    monkeypatch.setattr(rate_plan, "PLAN_NUM_PROMPTS", 12)
    monkeypatch.setattr(rate_plan, "PLAN_CONFIRM_PROMPTS", 12)
    monkeypatch.setattr(rate_plan, "ROUTER_MIN_PER_REPLICA", 6)
    monkeypatch.setattr(rate_plan, "ROUTER_MIN_SECONDS", 0.5)
    from sim import curves

    monkeypatch.setattr(curves, "STEADY_MAX_REQUESTS", 60)
    from sim import search

    monkeypatch.setattr(search, "SCREEN_PROMPTS", 12)
    monkeypatch.setattr(search, "SCREEN_WINDOW", 4)
    monkeypatch.setattr(search, "SCREEN_WINDOW_S", 0.0)


@PROFILE
@given(contents=files(), argv=command_lines())
def test_any_command_line_exits_0_1_or_2_with_one_line_and_keeps_every_file(
        capsys, tmp_path_factory, tiny_plan, contents, argv):
    d = tmp_path_factory.mktemp("inputs")
    paths = {}
    for kind, text in contents.items():
        p = d / f"input.{kind}"
        p.write_text(text)
        paths[kind] = p
    keep = d / "keep.csv"
    keep.write_text("precious\n")
    paths["keep"] = keep
    paths["out"] = d / "new-output.txt"
    paths["missing"] = d / "missing.file"
    paths["journal"] = d / "search.jsonl"
    before = {p: p.read_bytes() for p in d.iterdir()}
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) if a.startswith("{") else a for a in argv]
    with contextlib.chdir(d):  # a file written where the command runs (--save-result's) lands here
        code, out, err = run(capsys, *argv)
    event(f"{argv[0]} exit {code}")
    assert "Traceback" not in err and "Traceback" not in out
    if code == 0:
        pass
    elif code == 1:
        # A failure: plan or search found no rate meeting the SLO, trace --all found a
        # difference, or the lessons could not be loaded; anything else exiting 1 is a bug.
        assert argv[0] in ("plan", "search", "trace", "steps") and "internal error" not in err, (argv, err)
    else:
        assert code == 2, (argv, code, err)
        assert err.count("\n") == 1 and ": error: " in err, (argv, err)
    for p, data in before.items():
        if p == keep and code == 0 and str(keep) in argv:
            continue  # asked to replace it, and the command succeeded
        assert p.exists() and p.read_bytes() == data, (argv, p)
    made = {paths["out"], paths["journal"], d / "search.json"}  # what the command was asked to write
    if "--save-result" in argv:  # vLLM's name for the result, in the folder the command ran in
        made |= set(d.glob("batchtui-*.json"))
    leftovers = [p.name for p in d.iterdir() if p not in before and p not in made]
    assert not leftovers, (argv, leftovers)  # no temporary file left behind


# -- the entry point ------------------------------------------------------------------------------


def test_the_tutorial_path_imports_neither_numpy_nor_the_simulator():
    """`batchtui` with no subcommand hands over to the app before numpy or sim is imported."""
    code = (
        "import sys, batchtui.tui as tui\n"
        "def handed_over(args):\n"
        "    bad = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'sim', 'steps'))\n"
        "    print('LOADED', bad)\n"
        "    return 0\n"
        "tui.run_app = handed_over\n"
        "from batchtui.cli import main\n"
        "sys.exit(main(['--step', '3']))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout
    help_text = subprocess.run([sys.executable, "-m", "batchtui", "--help"], capture_output=True, text=True,
                               timeout=120)
    assert help_text.returncode == 0 and "sim" in help_text.stdout and "plan" in help_text.stdout


def test_a_reader_that_goes_away_is_not_an_error():
    """`batchtui sim --json | head -1`: the pipe closes early; no error line, exit 0."""
    proc = subprocess.Popen([sys.executable, "-m", "batchtui", "sim", "--num-prompts", "300", "--json",
                             "--save-detailed"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == ""


def test_running_out_of_memory_names_what_the_command_can_be_given_less_of(capsys, tmp_path, monkeypatch):
    """A trace case too big for memory said "fewer --num-prompts?", a flag trace does not have:
    it names the case's requests; a command with --num-prompts still names that, and one with
    neither names nothing."""
    import sim.trace

    case = json.loads(Path("tests/data/vllm-scheduler-cases.json").read_text())["cases"][0]
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(sim.trace, "write_trace", no_memory)  # (what `trace CASE` runs)
    code, _, err = run(capsys, "trace", path)
    assert code == 1 and err == "batchtui: error: not enough memory for this run (fewer or shorter requests in the case file?)\n"
    monkeypatch.setattr("batchtui.cli.cmd_sim.build_setup", no_memory)
    code, _, err = run(capsys, "sim", "--num-prompts", "3")
    assert code == 1 and err == "batchtui: error: not enough memory for this run (fewer --num-prompts?)\n"
    import argparse

    from batchtui.cli import run_command

    capsys.readouterr()  # (a command with neither, such as compare)
    assert run_command(no_memory, argparse.Namespace(func=no_memory)) == 1
    assert capsys.readouterr().err == "batchtui: error: not enough memory for this run\n"
