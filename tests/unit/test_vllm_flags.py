"""Every flag of `vllm serve` and `vllm bench serve` is accepted: modelled, recorded in the result,
or refused with the reason; the manual's table is the table in the code; a pasted command line runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from batchtui.cli import main
from tests.unit.cli_run import run
from batchtui.cli.parser import pasted
from batchtui.cli.vllm_flags import FLAGS, markdown_table

ROOT = Path(__file__).resolve().parents[2]


def vllm_source_flags() -> dict[str, tuple[set[str], list[str]]]:
    """flag -> (commands, short spellings), as read from vLLM's source (tests/data/vllm-flags.txt)."""
    out: dict[str, tuple[set[str], list[str]]] = {}
    for line in (ROOT / "tests/data/vllm-flags.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        command, flag, *short = line.split()
        command = command.removesuffix("-older")  # an earlier release's serve flag
        if flag.startswith("--"):
            flag = flag.replace("_", "-")  # vLLM's parser reads underscores as dashes
        out.setdefault(flag, (set(), short))[0].add(command)
    return out


def vllm_older_flags() -> set[str]:
    """Flags only earlier releases have (their lines in tests/data/vllm-flags.txt end in -older)."""
    current, older = set(), set()
    for line in (ROOT / "tests/data/vllm-flags.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            command, flag, *_ = line.split()
            flag = flag.replace("_", "-") if flag.startswith("--") else flag
            (older if command.endswith("-older") else current).add(flag)
    return older - current


def row_key(row) -> str:
    return row.flag if row.flag.startswith("--") else row.flag.split()[0]


def test_the_table_covers_every_flag_of_both_commands_and_no_other():
    source = vllm_source_flags()
    table = {row_key(row): row for row in FLAGS}
    assert len(source) > 250
    assert sorted(set(source) - set(table)) == []
    assert sorted(set(table) - set(source)) == []
    for flag, (commands, short) in source.items():
        assert set(table[flag].commands) == commands, flag
        assert list(table[flag].aliases) == short, flag


def test_flags_gone_from_vllm_0_33_are_marked_so():
    older = vllm_older_flags()
    assert {"--max-num-partial-prefills", "--num-scheduler-steps", "--common-prefix-len"} <= older
    assert {row_key(row) for row in FLAGS if row.older} == older
    assert "earlier releases" in markdown_table()


def test_the_flags_come_from_vllm_0_33_source():
    header = (ROOT / "tests/data/vllm-flags.txt").read_text().split("\nserve ")[0]
    assert "vLLM 0.33.0" in header and "tools/vllm_flags_from_source.py" in header
    source = vllm_source_flags()
    assert {"--max-num-scheduled-tokens", "--max-num-active-seqs", "--optimization-level"} <= set(source)


def test_every_row_says_what_the_simulator_does_with_it():
    for row in FLAGS:
        assert row.kind in ("modelled", "recorded", "refused")
        assert len(row.note) > 15, row.flag
        assert not row.ok or row.kind == "refused"


def test_the_manuals_table_is_generated_from_the_data():
    from tools import docs_tables

    assert "\n<!-- table: vllm-flags -->\n" in (docs_tables.DOCS / "vllm-flags.md").read_text()
    assert "\n" + markdown_table() + "\n" in docs_tables.page("vllm-flags.md")
    assert markdown_table().count("\n") == len(FLAGS) + 1


def test_modelled_flags_are_the_simulators_own_options(capsys):
    assert main(["sim", "--help"]) == 0
    help_text = re.sub(r"-\n\s+", "-", capsys.readouterr().out)  # argparse wraps long words at hyphens
    for row in FLAGS:
        if row.kind == "modelled" and row.flag.startswith("--"):
            assert re.search(re.escape(row.flag) + r"\b", help_text), row.flag


@pytest.mark.parametrize("row", [r for r in FLAGS if r.kind == "recorded" and r.flag.startswith("--")],
                         ids=lambda r: r.flag)
def test_each_recorded_flag_is_accepted_and_said(capsys, row):
    words = [row.flag] if row.arity == "b" else [row.flag, "x1"]
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "--input-len", "32", "--output-len", "4", *words)
    assert code == 0, err
    assert "recorded, not modelled: " + row.flag in err


@pytest.mark.parametrize("row", [r for r in FLAGS if r.kind == "refused" and r.flag.startswith("--")],
                         ids=lambda r: r.flag)
def test_each_refused_flag_says_why(capsys, row):
    words = [row.flag] if row.arity == "b" else [row.flag, "7"]
    if row.arity == "b" and "on" in row.ok:  # on is vLLM's default: its --no- form is refused
        words = ["--no-" + row.flag[2:]]
    code, out, err = run(capsys, "sim", "--num-prompts", "3", *words)
    assert code == 2
    assert f"argument {row.flag}: " in err and row.note[:40] in " ".join(err.split())
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_refused_flag_at_the_value_that_changes_nothing_is_recorded(capsys):
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "-pp", "1", "--data-parallel-size", "1",
                         "--cpu-offload-gb", "0", "--no-enable-lora", "--json")
    assert code == 0, err
    assert json.loads(out)["recorded_flags"] == {"--pipeline-parallel-size": "1", "--data-parallel-size": "1",
                                                 "--cpu-offload-gb": "0", "--enable-lora": "off"}


def test_recorded_flags_are_kept_in_the_saved_result(capsys, tmp_path):
    path = tmp_path / "r.json"
    code, out, err = run(capsys, "sim", "--num-prompts", "5", "--temperature", "0.7", "--backend", "vllm",
                         "--endpoint", "/v1/completions", "--save-result", "--result-filename", str(path))
    assert code == 0, err
    assert json.loads(path.read_text())["recorded_flags"] == {
        "--backend": "vllm", "--endpoint": "/v1/completions", "--temperature": "0.7"}
    assert err.count("recorded, not modelled") == 1


def test_refused_datasets_name_the_local_alternative(capsys):
    for name, alternative in (("hf", "--dataset-name custom"), ("sonnet", "--dataset-name random"),
                              ("burstgpt", "timed_trace"), ("random-mm", "--dataset-name random")):
        code, out, err = run(capsys, "sim", "--dataset-name", name)
        assert code == 2 and alternative in err and "not simulated" in err, err


def test_dataset_file_flags_the_simulator_cannot_honour_are_refused(capsys, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"prompt": "hello there"}\n' * 3)
    code, out, err = run(capsys, "sim", "--dataset-name", "custom", "--dataset-path", str(path), "--disable-shuffle")
    assert code == 2 and "--disable-shuffle" in err
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "--no-oversample", "--disable-shuffle", "--json")
    assert code == 0, err


def test_pasted_lines_become_flags():
    assert pasted(["sim", "vllm", "serve", "org/M", "--max_num_seqs=8", "vllm", "bench", "serve",
                   "--backend", "vllm", "--model", "org/M"]) == [
        "sim", "--model", "org/M", "--max-num-seqs=8", "--backend", "vllm", "--model", "org/M"]
    assert pasted(["sim", "vllm", "serve", "--model", "x"]) == ["sim", "--model", "x"]


def test_append_result_appends_as_vllm_does_and_keeps_the_file_whole(capsys, tmp_path):
    path = tmp_path / "all.json"
    path.write_text('{"earlier": 1}')
    for seed in ("1", "2"):
        code, out, err = run(capsys, "sim", "--num-prompts", "4", "--seed", seed, "--append-result",
                             "--result-filename", str(path))
        assert code == 0, err
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0]) == {"earlier": 1}
    assert [json.loads(line)["completed"] for line in lines[1:]] == [4, 4]
    # A failing run leaves the file as it was.
    before = path.read_text()
    code, out, err = run(capsys, "sim", "--num-prompts", "4", "--append-result", "--result-filename", str(path),
                         "--gpu-memory-utilization", "0.01")
    assert code == 2 and path.read_text() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_vllm_0_33_scheduler_flags_change_the_run(capsys):
    base = ["sim", "--num-prompts", "20", "--input-len", "2000", "--output-len", "8", "--json"]
    code, out, err = run(capsys, *base)
    assert code == 0, err
    free = json.loads(out)
    code, out, err = run(capsys, *base, "--max-num-scheduled-tokens", "1k")  # 1,000, as vLLM reads it
    assert code == 0, err
    capped = json.loads(out)
    assert capped["engine"]["max_num_scheduled_tokens"] == 1000
    # 1,000 prompt tokens an iteration instead of 8,192: more, smaller iterations, so the run takes
    # longer and decodes wait less behind prompts.
    assert capped["duration"] > free["duration"] and capped["mean_tpot_ms"] < free["mean_tpot_ms"] / 2
    code, out, err = run(capsys, *base, "--max-num-active-seqs", "2")
    assert code == 0, err
    assert json.loads(out)["max_concurrent_requests"] >= json.loads(out)["engine"]["max_num_active_seqs"] == 2


def test_optimization_level_is_read_as_vllm_rewrites_dash_o(capsys):
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "-O3", "--json")
    assert code == 0, err
    assert json.loads(out)["recorded_flags"] == {"--optimization-level": "3"}
    code, out, err = run(capsys, "sim", "--num-prompts", "3", "-O", "0")
    assert code == 2 and "argument --optimization-level: 0 is not simulated" in err
