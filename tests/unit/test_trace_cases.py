"""The continuous scheduler against traces produced by vLLM 0.33.0's own scheduler (synchronous
cases, and the async-scheduling and prefix-caching cases of the second file)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sim.errors import RequestRejected
from sim.trace import check_case, compare, load_cases, run_case

CASES_FILE = Path(__file__).resolve().parents[1] / "data" / "vllm-scheduler-cases.json"
CASES = load_cases(CASES_FILE)
MORE_FILE = Path(__file__).resolve().parents[1] / "data" / "vllm-scheduler-cases-prefix-async.json"
MORE_CASES = load_cases(MORE_FILE)


@pytest.mark.parametrize("case", MORE_CASES, ids=lambda c: c["name"])
def test_async_and_prefix_caching_cases(case):
    actual = run_case(case)
    assert compare(case["expected"], actual) == []
    assert [s["step"] for s in actual["steps"]] == list(range(1, len(actual["steps"]) + 1))
    if case["config"]["enable_prefix_caching"]:
        assert actual["num_cached_tokens"] == case["expected"]["num_cached_tokens"]
        for e, a in zip(case["expected"]["steps"], actual["steps"]):
            for key in ("prefix_hit_tokens", "cached_blocks", "evictable_blocks"):
                assert a[key] == e[key], (e["step"], key)


def test_prefix_fields_are_compared():
    """A wrong hit count, cached-block count or num_cached_tokens is a difference."""
    case = json.loads(json.dumps(next(c for c in MORE_CASES if c["name"].startswith("P01"))))
    assert check_case(case) == ("pass", [])
    case["expected"]["num_cached_tokens"]["B"] = 48
    case["expected"]["steps"][1]["prefix_hit_tokens"] = {"B": 48}
    case["expected"]["steps"][2]["evictable_blocks"] = 2
    status, lines = check_case(case)
    assert status == "fail"
    text = "\n".join(lines)
    assert "num_cached_tokens" in text and "step 2: prefix_hit_tokens" in text and "step 3: evictable_blocks" in text


def test_the_same_prompts_without_caching_hit_nothing():
    """Turning the cache off in a prefix case schedules every prompt token again."""
    case = json.loads(json.dumps(next(c for c in MORE_CASES if c["name"].startswith("P01"))))
    case["config"]["enable_prefix_caching"] = False
    actual = run_case(case)
    assert "num_cached_tokens" not in actual and "cached_blocks" not in actual["steps"][0]
    assert actual["steps"][1]["scheduled_tokens"] == {"A": 1, "B": 76}


def test_the_second_file_holds_async_cases_without_prefix_caching():
    plain_async = [c for c in MORE_CASES if c["config"]["async_scheduling"] and not c["config"]["enable_prefix_caching"]]
    assert len(plain_async) >= 2


def test_older_async_field_names_are_accepted():
    """Older async cases say free_blocks_end_of_call, waiting_end_of_call and step_of_last_token."""
    case = json.loads(json.dumps(next(c for c in MORE_CASES if c["name"].startswith("AS02"))))
    expected = case["expected"]
    expected["step_of_last_token"] = expected.pop("finish_step")
    for step in expected["steps"]:
        step["free_blocks_end_of_call"] = step.pop("free_blocks_end_of_step")
        step["waiting_end_of_call"] = step.pop("waiting_end_of_step")
    assert check_case(case) == ("pass", [])
    expected["steps"][3]["waiting_end_of_call"] = []
    status, lines = check_case(case)
    assert status == "fail" and "step 4: waiting_end_of_step" in lines[1]


def test_cli_trace_all_runs_async_and_prefix_caching_cases():
    proc = _cli("trace", "--all", str(MORE_FILE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == f"{len(MORE_CASES)} passed, 0 failed"
    assert "pass AS01_async_chunked_prefill_two_requests" in lines
    assert "pass P04_eviction_lru_reverse_order" in lines


@pytest.mark.parametrize("case", [c for c in CASES if c["valid_in_real_vllm"]], ids=lambda c: c["name"])
def test_trace_matches_vllm_field_for_field(case):
    actual = run_case(case)
    assert compare(case["expected"], actual) == []
    # Beyond the comparison rules: the whole record has the same layout and values.
    assert [s["step"] for s in actual["steps"]] == list(range(1, actual["last_step"] + 1))


@pytest.mark.parametrize("case", [c for c in CASES if not c["valid_in_real_vllm"]], ids=lambda c: c["name"])
def test_case_vllm_refuses_is_rejected_naming_request_and_limit(case):
    with pytest.raises(RequestRejected) as info:
        run_case(case)
    msg = str(info.value)
    assert "request A" in msg and "usable blocks" in msg


def test_compare_notices_a_difference():
    case = next(c for c in CASES if c["name"].startswith("C11"))
    actual = run_case(case)
    actual["steps"][3]["preempted"] = []
    actual["finish_step"]["B"] = 10
    diffs = compare(case["expected"], actual)
    assert any("step 4: preempted" in d for d in diffs)
    assert any(d.startswith("finish_step") for d in diffs)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "batchtui", *args], capture_output=True, text=True)


def test_cli_trace_all_passes_every_case():
    proc = _cli("trace", "--all", str(CASES_FILE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == f"{len(CASES)} passed, 0 failed"
    assert sum(line.startswith("pass ") for line in lines) == len(CASES)


def test_cli_trace_prints_the_expected_layout(tmp_path):
    case = next(c for c in CASES if c["name"].startswith("C09"))
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    proc = _cli("trace", str(path))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"steps", "first_token_step", "finish_step", "num_preemptions", "last_step"}
    assert out["first_token_step"] == case["expected"]["first_token_step"]
    assert out["steps"] == case["expected"]["steps"]


def test_cli_trace_invalid_case_exits_nonzero_with_reason(tmp_path):
    case = next(c for c in CASES if not c["valid_in_real_vllm"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(case))
    proc = _cli("trace", str(path))
    assert proc.returncode == 2
    assert "request A" in proc.stderr and "4 usable blocks" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_trace_all_fails_on_a_wrong_expectation(tmp_path):
    data = json.loads(CASES_FILE.read_text())
    data["cases"][0]["expected"]["last_step"] += 1
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(data))
    proc = _cli("trace", "--all", str(path))
    assert proc.returncode == 1
    assert "FAIL C01" in proc.stdout


def test_cli_trace_malformed_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"config": ')
    proc = _cli("trace", str(path))
    assert proc.returncode == 2
    assert "broken.json:1" in proc.stderr and "Traceback" not in proc.stderr
