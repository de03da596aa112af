"""`batchtui trace` writes a case's trace as it runs (`sim.trace.write_trace`), a record at a time,
and `--all` compares one as it runs: the text is the one the whole trace held in memory gives
(`json.dumps(run_case(case))`), and the memory follows the case, not the trace (which lists every
arrived request at every iteration)."""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import trace as trace_module
from sim.errors import SimError
from sim.trace import check_case, compare, load_cases, run_case, write_trace
from tests.examples import examples
from tests.unit.cli_run import run

DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCE_CASES = [case for name in ("vllm-scheduler-cases.json", "vllm-scheduler-cases-prefix-async.json",
                                     "vllm-scheduler-cases-spec.json")
                   for case in load_cases(DATA / name)]
NO_REQUESTS = {"name": "empty", "config": {"block_size": 16, "num_blocks": 10, "max_num_batched_tokens": 64,
                                           "max_num_seqs": 4, "max_model_len": 64}, "requests": []}
INDENTS = (None, 0, 1, 2, 8)


def held(case: dict, indent: int | None) -> str:
    """The trace as it was written before it was streamed: the whole trace, then json.dumps."""
    try:
        return json.dumps(run_case(case), indent=indent)
    except SimError as exc:
        return f"refused: {exc}"


def streamed(case: dict, indent: int | None) -> str:
    out = io.StringIO()
    try:
        write_trace(case, out.write, indent)
    except SimError as exc:
        return f"refused: {exc}"
    return out.getvalue()


@pytest.mark.parametrize("indent", INDENTS)
def test_every_reference_case_and_none_is_streamed_as_it_was_held(indent):
    for case in REFERENCE_CASES + [NO_REQUESTS]:
        assert streamed(case, indent) == held(case, indent), case["name"]


@st.composite
def cases(draw) -> dict:
    """A small case of any kind the format holds: sync or async, chunked prefill or not, prefix
    caching with shared prompt segments, priorities, speculative decoding with accept patterns,
    a tight KV cache (preemptions) or none; some are refused."""
    block_size = draw(st.sampled_from([4, 8, 16]))
    chunked = draw(st.booleans())
    max_model_len = draw(st.integers(32, 160))
    config = {"block_size": block_size, "num_blocks": draw(st.integers(4, 60)),
              "max_num_batched_tokens": draw(st.integers(16, 96)) if chunked else max_model_len + draw(
                  st.integers(0, 64)),
              "max_num_seqs": draw(st.integers(1, 6)), "enable_chunked_prefill": chunked,
              "policy": draw(st.sampled_from(["fcfs", "priority"])),
              "enable_prefix_caching": draw(st.booleans()), "async_scheduling": draw(st.booleans()),
              "max_model_len": max_model_len}
    spec = draw(st.booleans())
    requests = []
    for i in range(draw(st.integers(1, 8))):
        prompt_len = draw(st.integers(1, 60))
        r = {"id": f"r{i}", "arrival_step": draw(st.integers(1, 12)), "prompt_len": prompt_len,
             "output_len": draw(st.integers(1, 12)), "priority": draw(st.integers(0, 2))}
        shared = draw(st.integers(0, prompt_len - 1))
        if shared:
            r["prompt"] = [{"seg": "system", "len": shared}, {"seg": f"own{i}", "len": prompt_len - shared}]
        if spec:
            r["accept"] = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
        requests.append(r)
    case = {"name": "drawn", "config": config, "requests": requests}
    if spec:
        case["speculative_config"] = {"method": "ngram", "num_speculative_tokens": 3,
                                      "prompt_lookup_max": 3, "prompt_lookup_min": 1}
    return case


@settings(max_examples=examples(60))
@given(case=cases(), indent=st.sampled_from(INDENTS))
def test_a_drawn_case_is_streamed_as_it_was_held(case, indent):
    assert streamed(case, indent) == held(case, indent)


@settings(max_examples=examples(40))
@given(case=cases(), data=st.data())
def test_check_case_compares_as_it_runs_as_compare_does_on_the_whole_trace(case, data):
    """`--all` compares each record as it is made: the same verdict and lines as `compare` on the
    whole trace, against the trace itself (passes), a trace with fewer or more steps, or with a
    field changed."""
    try:
        expected = run_case(case)
    except SimError:
        return
    change = data.draw(st.sampled_from(["none", "drop", "extra", "field", "summary"]))
    if change == "drop" and expected["steps"]:
        expected["steps"].pop()
    elif change == "extra":
        expected["steps"].append(dict(expected["steps"][-1] if expected["steps"] else {}, step=0))
    elif change == "field" and expected["steps"]:
        expected["steps"][data.draw(st.integers(0, len(expected["steps"]) - 1))]["free_blocks_end_of_step"] = -1
    elif change == "summary":
        expected["last_step"] += 1
    diffs = compare(expected, run_case(case))
    status, lines = check_case(dict(case, expected=expected))
    assert (status, lines) == (("fail", [f"{len(diffs)} difference(s)"] + diffs) if diffs else ("pass", []))


def test_a_case_refused_before_it_runs_writes_nothing():
    case = next(c for c in REFERENCE_CASES if not c.get("valid_in_real_vllm", True))
    out = io.StringIO()
    with pytest.raises(SimError):
        write_trace(case, out.write)
    assert out.getvalue() == ""


def _case(requests: int, spread: int) -> dict:
    """`requests` requests arriving evenly over `spread` iterations, all fitting at once: a trace of
    about requests x spread / 2 counts per field (each arrived request at each iteration)."""
    config = {"block_size": 16, "num_blocks": 4 * requests + 1, "max_num_batched_tokens": 65_536,
              "max_num_seqs": 4_096, "enable_chunked_prefill": True, "policy": "fcfs",
              "enable_prefix_caching": False, "async_scheduling": False, "max_model_len": 256}
    return {"name": f"spread-{requests}", "config": config,
            "requests": [{"id": f"r{i}", "arrival_step": 1 + i * spread // requests, "prompt_len": 8 + i % 57,
                          "output_len": 1 + i % 8} for i in range(requests)]}


def test_output_is_the_trace_renamed_into_place_and_kept_when_the_case_fails(capsys, tmp_path, monkeypatch):
    case = _case(30, 5)  # arriving by the fifth iteration, done by the thirteenth
    (tmp_path / "case.json").write_text(json.dumps(case))
    target = tmp_path / "trace.json"
    code, out, err = run(capsys, "trace", tmp_path / "case.json", "--output", target, "--indent", "2")
    assert (code, out, err) == (0, "", "")
    assert target.read_text() == held(case, 2) + "\n"
    target.write_text("precious\n")
    monkeypatch.setattr(trace_module, "MAX_STEPS", 5)  # the case stops at its sixth iteration
    code, out, err = run(capsys, "trace", tmp_path / "case.json", "--output", target)
    assert code == 2 and "did not finish within 5 iterations" in err
    assert target.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.json", "trace.json"]  # no temporary file left


def test_output_is_not_for_all(capsys, tmp_path):
    code, _, err = run(capsys, "trace", "--all", DATA / "vllm-scheduler-cases.json", "--output", tmp_path / "x.json")
    assert code == 2 and "--output" in err
    assert not (tmp_path / "x.json").exists()


# The command in a fresh process that reports its peak address space (VmPeak, KB) on stderr.
CHILD = ("import sys\n"
         "from batchtui.cli import main\n"
         "code = main()\n"
         "peak = next(line for line in open('/proc/self/status') if line.startswith('VmPeak:'))\n"
         "print('VMPEAK', peak.split()[1], file=sys.stderr)\n"
         "sys.exit(code)\n")
ROOM_MB = 64
"""The address space the large case is given beyond what a small case of as many iterations
takes. Held whole, its trace (4,000 requests over 500 iterations: 2 million counts per field, 26
MB of JSON) took 108 MB more (the least RLIMIT_AS it ran in, 222 MB against the small case's 114);
streamed, 7 MB more (118 against 111). Measured on the 2-core development machine, 7 December
2026."""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmPeak from /proc")
def test_a_case_whose_trace_is_far_larger_than_it_runs_in_a_capped_address_space(tmp_path):
    """As under `ulimit -v`: the small case's peak address space plus ROOM_MB, which the trace
    held whole does not fit in (the command then says it ran out of memory, exit 1)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", BATCHTUI_NO_PROGRESS="1")
    env.pop("BATCHTUI_TRACEBACK", None)

    def trace(case: dict, limit_kb: int | None) -> tuple[subprocess.CompletedProcess, int]:
        path = tmp_path / f"{case['name']}.json"
        path.write_text(json.dumps(case))

        def cap() -> None:
            if limit_kb is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit_kb << 10, limit_kb << 10))

        with (tmp_path / f"{case['name']}.trace.json").open("w") as out:
            proc = subprocess.run([sys.executable, "-c", CHILD, "trace", str(path)], stdout=out,
                                  stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, preexec_fn=cap,
                                  timeout=120)
        peak = proc.stderr.split("VMPEAK")[-1].split()
        return proc, int(peak[0]) if "VMPEAK" in proc.stderr else 0

    small, small_peak = trace(_case(40, 500), None)
    assert small.returncode == 0 and small_peak > 0, small.stderr
    large, _ = trace(_case(4_000, 500), small_peak + ROOM_MB * 1024)
    assert large.returncode == 0, large.stderr
    written = tmp_path / "spread-4000.trace.json"
    assert written.stat().st_size > 25_000_000
    with written.open("rb") as f:
        f.seek(-40, os.SEEK_END)
        assert f.read().endswith(b'"last_step": 507}\n')
