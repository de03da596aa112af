"""The command line's engine and deployment flags come from the simulator's table of dials
(`sim.dials.DIALS`): every dial with a flag is a flag of every command that takes the engine's
settings, reads its value as the dial does and refuses a bad one in the dial's own words."""

from __future__ import annotations

import json

import pytest

from batchtui.cli import main
from batchtui.cli import options as o
from batchtui.cli.options import flagged
from batchtui.cli.parser import build_parser
from sim import dials
from sim.scenario import DEPLOYMENT_KEYS

SMALL = ["--num-prompts", "30", "--input-len", "128", "--output-len", "16"]
ENGINE_DIALS = [d for d in dials.DIALS if d.flag and (d.path.startswith("engine.") or d.path in DEPLOYMENT_KEYS)
                and d.path not in o.OWN_FLAGS]


def options_of(command: str) -> set[str]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # noqa: SLF001 (argparse's own)
    return {s for a in sub._actions for s in a.option_strings}  # noqa: SLF001


@pytest.mark.parametrize("command", ["sim", "sweep", "plan", "calibrate", "compare", "serve"])
def test_every_engine_dial_with_a_flag_is_a_flag_of_every_command(command):
    flags = options_of(command)
    for spec in ENGINE_DIALS:
        assert spec.flag in flags, (command, spec.path)
        if spec.type == "bool":
            assert "--no-" + spec.flag[2:] in flags
    assert [f.spec for f in o.engine_flags()] == ENGINE_DIALS  # the table's order, nothing else


def test_a_flags_help_is_the_dials():
    for f in o.engine_flags():
        assert f.kwargs["help"].startswith(f.spec.help) and f.spec.help, f.flag


@pytest.mark.parametrize("spec", [d for d in ENGINE_DIALS if d.type in ("int", "float")
                                  and not (d.choices and not d.words)], ids=lambda d: d.path)
def test_a_bad_number_is_refused_in_the_dials_words(capsys, spec):
    try:
        code = main(["sim", *SMALL, spec.flag, "-5"])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert f"argument {spec.flag}: expected {flagged(spec.allowed)}, got '-5'" in err
    assert "{" not in err  # a dial named in its words is spelled by its flag


def run_json(capsys, *argv):
    code = main(["sim", *SMALL, *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_values_are_read_as_the_dial_reads_them(capsys):
    d = run_json(capsys, "--max-model-len", "32k", "--max-num-seqs", "1,024")
    assert d["engine"]["max_model_len"] == 32000 and d["engine"]["max_num_seqs"] == 1024
    d = run_json(capsys, "--max-model-len", "32K")
    assert d["engine"]["max_model_len"] == 32768
    d = run_json(capsys, "--batching", "dynamic", "--max-queue-delay-ms", "25")
    assert d["engine"]["max_queue_delay"] == pytest.approx(0.025)  # ms on the flag, seconds in the engine


def test_dials_the_hand_table_left_out_now_reach_the_engine(capsys):
    d = run_json(capsys, "--no-async-scheduling", "--no-scheduler-reserve-full-isl")
    assert d["engine"]["async_scheduling"] is False
    assert d["engine"]["scheduler_reserve_full_isl"] is False
    d = run_json(capsys)  # (both on by default, as in vLLM 0.33)
    assert d["engine"]["async_scheduling"] is True and d["engine"]["scheduler_reserve_full_isl"] is True


def test_an_engine_check_names_the_flag_in_its_unit(capsys):
    code = main(["sim", *SMALL, "--max-num-seqs", "64", "--max-num-batched-tokens", "32"])
    err = capsys.readouterr().err
    assert code == 2 and "argument --max-num-batched-tokens: 32 is not allowed" in err


def test_a_number_is_read_with_its_thousands_separators_by_every_flag(capsys):
    """A dial's flag took 3,500 (`DialSpec.read`) but --num-prompts, --request-rate, --input-len
    and --seed refused it as not a number: every flag now reads a number by the dials' rule
    (`sim.dials.digits`), and a list flag still splits at its commas first."""
    assert o.prompt_count("3,500") == 3500 and o.rate("1,000.5") == 1000.5
    assert o.seed("1_000") == 1000 and o.positive_int_list("16,64") == [16, 64]
    d = run_json(capsys, "--num-prompts", "1,000", "--random-input-len", "1,024",
                 "--max-num-seqs", "1,024", "--request-rate", "2,000", "--seed", "1,000")
    assert (d["num_prompts"], d["request_rate"], d["total_input_tokens"]) == (1000, 2000.0, 1000 * 1024)
