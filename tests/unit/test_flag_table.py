"""One table of flags (`batchtui.cli.flag_table`): every dial's flag is a row of it, each traffic row
sets its dial by the one rule, and no message types a dial's spelling (each names it as `{path}`,
spelled by the table of dials)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from batchtui.cli import flag_table as t
from batchtui.cli.parser import build_parser
from batchtui.cli.setup import build_setup
from sim import dials

ROOT = Path(__file__).resolve().parents[2]
TRACE = str(ROOT / "tests" / "data" / "vllm-timed-trace.jsonl")

# A value each traffic row takes, and the flags it needs beside it. A new row with a workload dial
# must be given one here (the test below checks every row has one).
VALUES = {
    "--num-prompts": ("7", ()), "--request-rate": ("3", ()), "--burstiness": ("0.5", ()),
    "--max-concurrency": ("4", ()), "--ramp-up-strategy": ("exponential", ("--ramp-up-start-rps", "1",
                                                                          "--ramp-up-end-rps", "2")),
    "--ramp-up-start-rps": ("1.5", ("--ramp-up-strategy", "linear", "--ramp-up-end-rps", "9")),
    "--ramp-up-end-rps": ("8", ("--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1")),
    "--random-input-len": ("100", ()), "--random-output-len": ("50", ()), "--random-prefix-len": ("32", ()),
    "--prefix-repetition-num-prefixes": ("3", ("--random-prefix-len", "16")), "--turns": ("2", ()),
    "--think-time": ("1.5", ("--turns", "2")), "--arrival": ("constant", ()),
    "--burst-size": ("4", ("--arrival", "bursts")),
    "--input-dist": ("lognormal", ()), "--input-len-min": ("10", ()), "--input-len-max": ("2000", ()),
    "--input-sigma": ("0.7", ()), "--output-dist": ("uniform", ("--output-len-min", "10", "--output-len-max", "90")),
    "--output-len-min": ("10", ()), "--output-len-max": ("900", ()), "--output-sigma": ("0.3", ()),
    "--client-request-ms": ("2.5", ()), "--client-token-ms": ("0.2", ()),
    "--timed-trace-chunk-hash-size": ("32", ("--workload", TRACE)),
    "--timed-trace-sec-multiplier": ("0.5", ("--workload", TRACE)),
    # a dataset's own rows: set only with it
    "--prefix-repetition-prefix-len": ("64", ("--dataset-name", "prefix_repetition")),
    "--prefix-repetition-suffix-len": ("48", ("--dataset-name", "prefix_repetition")),
    "--prefix-repetition-output-len": ("24", ("--dataset-name", "prefix_repetition")),
}


def _parse(argv: list[str]):
    return build_parser("sim").parse_args(["sim", "--num-prompts", "20", *argv])


def test_every_flag_of_a_dial_is_a_row_of_the_table():
    spellings = {s: row for row in t.rows() for s in (*row.spellings, *row.hidden)}
    assert [d.flag for d in dials.DIALS if d.flag and d.flag not in spellings] == []
    assert all(dials.find(row.dial) for row in t.rows() if row.dial)
    # one spelling, one row (an alias is declared once, on its row)
    names = [s for row in t.rows() for s in (*row.spellings, *row.hidden)]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_every_modelled_vllm_flag_is_a_spelling_of_a_row():
    """vLLM's table says which of its flags the simulator models; each of their spellings (vLLM's
    short ones too) is a row's, so the two tables cannot drift apart."""
    from batchtui.cli.vllm_flags import FLAGS

    spellings = {s for row in t.rows() for s in (*row.spellings, *row.hidden)}
    missing = [s for row in FLAGS if row.kind == "modelled" and row.flag.startswith("-") for s in row.spellings
               if s not in spellings]
    assert missing == []


def test_every_traffic_row_that_sets_the_workload_is_checked_below():
    assert sorted(row.flag for row in t.TRAFFIC_ROWS if row.path) == sorted(VALUES)


@pytest.mark.parametrize("row", [r for r in t.TRAFFIC_ROWS if r.path], ids=lambda r: r.flag)
def test_a_traffic_row_given_sets_its_path(row):
    """The one rule: a row given sets the workload path of its dial (or its own `sets`) to the value
    the parser read, whatever else is on the line."""
    value, beside = VALUES[row.flag]
    args = _parse([row.flag, value, *beside])
    workload = build_setup(args).scenario.workload
    got = workload
    for part in row.path.removeprefix("workload.").split("."):
        got = getattr(got, part)
    assert got == row.given(args)
    assert row.path in t.given_paths(args)


def test_a_datasets_own_rows_set_its_defaults():
    workload = build_setup(_parse(["--dataset-name", "prefix_repetition"])).scenario.workload
    for row in t.TRAFFIC_ROWS:
        if row.dataset == "prefix_repetition":
            value = workload
            for part in row.path.removeprefix("workload.").split("."):
                value = getattr(value, part)
            assert value == row.dataset_default, row.flag
    assert workload.input.dist == workload.output.dist == "fixed"


def test_a_trace_refuses_every_arrival_flag(capsys):
    from batchtui.cli import main

    for flag, value in (("--arrival", "constant"), ("--burstiness", "2"), ("--burst-size", "4")):
        assert main(["sim", "--workload", TRACE, flag, value]) == 2
        assert f"argument {flag}: not allowed with a trace" in capsys.readouterr().err


# -- no dial spelled by hand in a message ---------------------------------------------------------------

TABLES = ("sim/dials.py", "batchtui/cli/flag_table.py")
"""Where a flag is declared: a string that is a flag, whole, is a row's spelling; a flag within
prose (a help line) is still written as `{path}`."""
OWN_SPELLINGS = {
    "batchtui/cli/vllm_flag_rows.py": "vLLM's flags as vLLM's --help prints them",
    "batchtui/cli/vllm_lines.py": "builds vLLM's own command lines (vllm serve, vllm bench serve): vLLM's spellings",
    "batchtui/cli/loadgens.py": "reads other load generators' command lines, in their spellings",
    "steps/activities/cache_batch.py": "lesson prose that teaches vLLM's flag by name, as the lessons' text does",
    "batchtui/serve/fields.py": "vLLM's request fields, described in vLLM's words for the served API's clients",
}


def typed_spellings(source: str, flags, table: bool = False) -> list[tuple[int, str]]:
    """(line, flag) for each dial's flag typed in a string that is no docstring (in a `table`, nor
    a string that is the flag alone: a row's spelling)."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(flags, key=len, reverse=True)))
                         + r")(?![\w-])")
    tree = ast.parse(source)
    docs = {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [(node.lineno, m.group(1)) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and not (table and node.value in flags)
            for m in pattern.finditer(node.value)]


def test_no_message_types_a_dials_spelling():
    """A message names a dial as `{path}` (spelled by `sim.dials.spelled`: the flag on the command
    line, the label in the app); only the tables, and what speaks another program's spellings, type
    them."""
    flags = {d.flag for d in dials.DIALS if d.flag}
    found = []
    for package in ("sim", "steps", "batchtui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name not in OWN_SPELLINGS:
                found += [f"{name}:{line}: {flag}"
                          for line, flag in typed_spellings(path.read_text("utf-8"), flags, name in TABLES)]
    assert found == []


def test_the_spelling_check_finds_a_typed_flag():
    source = '''"""--max-num-seqs in a docstring is prose."""
x = f"argument --max-num-seqs: {y}"
z = "fewer --max-num-seqs-values"  # another flag: not this one
w = "{engine.max_num_seqs}"
'''
    assert typed_spellings(source, {"--max-num-seqs"}) == [(2, "--max-num-seqs")]
    row = 'Flag(("--max-num-seqs",), help="at most --max-num-seqs")\n'
    assert typed_spellings(row, {"--max-num-seqs"}, table=True) == [(1, "--max-num-seqs")]
