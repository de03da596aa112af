"""`--dataset-name timed_trace` reads a trace as vLLM 0.33's `vllm bench serve` reads it
(vllm/benchmarks/datasets/datasets.py, `TimedTrace`; vllm/benchmarks/serve.py, `get_request`):
timestamps in seconds (`--timed-trace-sec-multiplier`, 1), one hash id per 16 prompt tokens
(`--timed-trace-chunk-hash-size`, 16), each prompt built from its hash ids up to its
input_length, the first `--num-prompts` lines (1,000) sent in the file's order at their
timestamps from the start, whatever `--request-rate` says (`--self-timed`, on for a timed trace).

tests/data/vllm-timed-trace.jsonl is such a trace: 40 requests from 1.5 s to 5 s, prompts opening
with one of two system prompts (8 or 4 shared blocks) then blocks of their own, most ending in a
partial block, every seventh with an input_length past its ids (vLLM sends the ids' tokens
only), and line 21 stamped before line 20 (vLLM sends it right after)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.cli_run import run

TRACE = Path(__file__).parent.parent / "data" / "vllm-timed-trace.jsonl"
LINES = [json.loads(line) for line in TRACE.read_text().splitlines()]


def vllm_prompt_len(line: dict, block: int = 16) -> int:
    """The tokens vLLM sends for a line: a block per hash id, up to input_length."""
    return min(line["input_length"], block * len(line["hash_ids"]))


def sent_at(lines: list[dict], multiplier: float = 1.0) -> list[float]:
    """When vLLM sends each line: at its timestamp from the start, or after the line before it."""
    out = []
    for line in lines:
        out.append(max(line["timestamp"] * multiplier, out[-1] if out else 0.0))
    return out


def sim(capsys, *argv) -> tuple[dict, str]:
    code, out, err = run(capsys, "sim", *argv, "--save-detailed", "--json")
    assert code == 0, err
    return json.loads(out), err


def test_a_vllm_timed_trace_is_read_with_vllms_defaults(capsys):
    d, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE)
    assert d["completed"] == len(LINES) == 40
    assert d["input_lens"] == [vllm_prompt_len(line) for line in LINES]
    assert d["output_lens"] == [line["output_length"] for line in LINES]
    assert d["start_times"] == pytest.approx(sent_at(LINES), abs=1e-9)
    assert d["start_times"][20] == d["start_times"][19]  # stamped earlier: sent right after
    assert d["duration"] > LINES[-1]["timestamp"]  # the first request 1.5 s after the start, as vLLM sends it
    # the system prompts' blocks are found in the prefix cache by every prompt after the first
    assert d["prefix_cache_hits"] >= (len(LINES) - 2) * 4 * 16


def test_a_pasted_vllm_line_replays_the_same_traffic(capsys):
    d, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE)
    pasted, _ = sim(capsys, "vllm", "bench", "serve", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--dataset-name",
                    "timed_trace", "--dataset-path", TRACE, "--timed-trace-sec-multiplier", "1",
                    "--timed-trace-chunk-hash-size", "16", "--self-timed")
    for key in ("input_lens", "output_lens", "start_times", "median_ttft_ms", "median_tpot_ms", "output_throughput"):
        assert pasted[key] == d[key], key


def test_num_prompts_takes_the_first_lines_and_never_repeats_them(capsys):
    first, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE, "--num-prompts", "10")
    assert first["input_lens"] == [vllm_prompt_len(line) for line in LINES[:10]]
    assert first["start_times"] == pytest.approx(sent_at(LINES[:10]), abs=1e-9)
    more, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE, "--num-prompts", "100")
    assert more["completed"] == 40  # vLLM's TimedTrace does not oversample


def test_the_request_rate_is_not_used_and_the_multiplier_scales_time(capsys):
    d, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE)
    rated, err = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE, "--request-rate", "50")
    assert rated["start_times"] == d["start_times"] and rated["median_ttft_ms"] == d["median_ttft_ms"]
    assert "--request-rate 50 is not used: a timed trace is sent at its own timestamps" in err
    fast, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE,
                  "--timed-trace-sec-multiplier", "0.5")
    assert fast["start_times"] == pytest.approx(sent_at(LINES, 0.5), abs=1e-9)


def test_the_chunk_size_sets_the_tokens_of_each_hash_id(capsys):
    d, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", TRACE, "--timed-trace-chunk-hash-size", "32")
    assert d["input_lens"] == [vllm_prompt_len(line, 32) for line in LINES]


def test_mooncake_trace_is_timed_trace_in_milliseconds_with_512_token_blocks(capsys, tmp_path):
    path = tmp_path / "mooncake.jsonl"
    path.write_text("".join(json.dumps({**line, "timestamp": round(line["timestamp"] * 1000),
                                        "input_length": line["input_length"] * 20}) + "\n" for line in LINES))
    moon, _ = sim(capsys, "--dataset-name", "mooncake_trace", "--dataset-path", path)
    same, _ = sim(capsys, "--dataset-name", "timed_trace", "--dataset-path", path,
                  "--timed-trace-sec-multiplier", "0.001", "--timed-trace-chunk-hash-size", "512")
    assert moon["input_lens"] == same["input_lens"] and moon["start_times"] == same["start_times"]
    assert moon["start_times"] == pytest.approx(sent_at(LINES), abs=1e-6)
    assert moon["input_lens"][0] == min(LINES[0]["input_length"] * 20, 512 * len(LINES[0]["hash_ids"]))


@pytest.mark.parametrize(("argv", "said"), [
    (["--timed-trace-sec-multiplier", "0.001"], "argument --timed-trace-sec-multiplier: needs a trace"),
    (["--dataset-name", "timed_trace", "--dataset-path", TRACE, "--timed-trace-sec-multiplier", "0"],
     "argument --timed-trace-sec-multiplier: expected a number > 0"),
])
def test_mistakes_are_one_line(capsys, argv, said):
    code, _, err = run(capsys, "sim", *argv)
    assert code == 2 and said in err, err
