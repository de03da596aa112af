"""The README is the short door to the project and the manual in docs/ builds strictly.

The README holds both quick-start commands near its top (CI's `.ci/run` runs the test one as
written there) and one example per command, each a command line batchtui's parser takes; the
manual builds with mkdocs in strict mode (a broken link, a missing page or an unknown table
marker fails), its tables generated from the code (tools/docs_tables.py)."""

from __future__ import annotations

import argparse
import glob
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tools import docs_tables

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL_AND_RUN = 'python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/batchtui'
INSTALL_AND_TEST = 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'


def test_the_readme_is_short_with_both_quick_start_commands_near_its_top():
    lines = README.split("\n")
    assert len(lines) <= 400
    top = [line.strip() for line in lines[:40]]
    assert INSTALL_AND_RUN in top and INSTALL_AND_TEST in top


def test_ci_runs_the_readmes_test_command():
    """`.ci/run` installs and tests as the README says (its venv made by the python3 it picks)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert INSTALL_AND_TEST in ci


def _examples() -> list[list[str]]:
    block = re.search(r"<!-- examples:[^>]*-->\n(.*?)<!-- end examples -->", README, re.S)
    assert block, "README.md has no examples block"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_has_an_example_of_every_command_and_each_parses(monkeypatch):
    from batchtui.cli import parser as cli_parser

    examples = _examples()
    assert {words[1] for words in examples} == set(cli_parser.SUBCOMMANDS)
    monkeypatch.chdir(ROOT)
    for words in examples:
        assert words[0] == "batchtui"
        # as a shell expands a pattern: its matches, else the word itself
        argv = [match for word in words[1:] for match in (sorted(glob.glob(word)) or [word])]
        parser = cli_parser.build_parser(words[1])
        try:
            parser.parse_args(cli_parser.pasted(argv))
        except SystemExit as error:  # argparse's way of refusing
            pytest.fail(f"{shlex.join(words)}: refused ({error})")


def test_every_table_marker_of_the_manual_is_generated():
    for page in sorted(docs_tables.DOCS.glob("*.md")):
        text = docs_tables.page(page.name)
        assert not docs_tables.MARKER.search(text), page.name


def test_an_unknown_table_marker_stops_the_build():
    with pytest.raises(ValueError, match="unknown table"):
        docs_tables.render("<!-- table: no-such-table -->\n")
    with pytest.raises(ValueError, match="no group"):
        docs_tables.render("<!-- table: flags sim no-such-group -->\n")


def test_the_flag_reference_lists_every_flag_of_every_command():
    from batchtui.cli import parser as cli_parser

    page = docs_tables.page("flags.md")
    for command in cli_parser.SUBCOMMANDS:
        sub = next(a for a in cli_parser.build_parser(command)._actions  # noqa: SLF001 (argparse's own)
                   if a.dest == "command").choices[command]
        for action in sub._actions:  # noqa: SLF001
            if action.help in (None, argparse.SUPPRESS) or isinstance(action, argparse._HelpAction):  # noqa: SLF001
                continue
            if any(g.title.startswith(docs_tables.OTHER_VLLM_FLAGS) and action in g._group_actions  # noqa: SLF001
                   for g in sub._action_groups):  # noqa: SLF001
                continue
            name = next((s for s in action.option_strings if not s.startswith("--no-")),
                        action.option_strings[0] if action.option_strings else action.metavar or action.dest)
            shown = f"`--[no-]{name[2:]}`" if isinstance(action, argparse.BooleanOptionalAction) else name
            assert shown in page, (command, name)


def test_the_manual_builds_strictly(tmp_path):
    """mkdocs build --strict: every link and anchor resolves, every page is in the nav."""
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    built = (tmp_path / "site" / "flags" / "index.html").read_text(encoding="utf-8")
    assert "--max-num-seqs" in built and "<!-- table:" not in built


# A command's output on a page: `<!-- output: ... -->`, a blank line, the indented block whose
# first line is `$ batchtui ARGS` and whose other lines are the first lines of what it prints.
OUTPUT_BLOCK = re.compile(r"(<!-- output:[^>]*-->\n\n)((?:    .*\n|\n(?=    ))+)(\n<!-- end output -->)")
IN_ONE_PROCESS = ("sweep", "plan", "search")  # --jobs 1 gives the same results as a pool


def _printed(args: list[str], capsys) -> list[str]:
    from tests.unit.cli_run import run

    extra = ["--jobs", "1"] if args[0] in IN_ONE_PROCESS else []
    code, out, err = run(capsys, *args, *extra)
    assert code == 0, err
    return out.rstrip("\n").split("\n")


def _blocks(name: str):
    text = (docs_tables.DOCS / name).read_text(encoding="utf-8")
    for match in OUTPUT_BLOCK.finditer(text):
        lines = [line[4:] for line in match.group(2).rstrip("\n").split("\n")]  # a blank line stays blank
        assert lines[0].startswith("$ batchtui "), lines[0]
        yield match, shlex.split(lines[0][len("$ batchtui "):]), lines[1:]


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["commands.md"])
def test_the_outputs_on_a_page_are_what_the_commands_print(name, capsys):
    blocks = list(_blocks(name))
    assert blocks, f"{name} has no command output"
    for _, args, shown in blocks:
        printed = _printed(args, capsys)
        assert len(shown) >= 10 and shown == printed[:len(shown)], (
            f"{name}: the output of batchtui {shlex.join(args)} is stale: python -m tests.unit.test_docs\n"
            + "\n".join(printed[:len(shown)]))


def _cut(printed: list[str], shown: list[str]) -> list[str]:
    """The first lines of `printed`, to the last that begins as the block's last line began (a
    chart after a table is left out), else as many as the block had."""
    head = shown[-1][:12] if shown else ""
    end = max((i for i, line in enumerate(printed) if head and line.startswith(head)), default=len(shown) - 1)
    return printed[:end + 1]


def main() -> int:
    """Write the pages' command outputs again (to where each block ended), each page to a
    temporary file renamed into place."""

    class Capture:  # what capsys gives run(): the text printed since the last read
        def readouterr(self):
            out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
            sys.stdout.seek(0), sys.stdout.truncate(), sys.stderr.seek(0), sys.stderr.truncate()
            return out, err

    for name in ("commands.md",):
        path = docs_tables.DOCS / name
        text = path.read_text(encoding="utf-8")
        pieces, last = [], 0
        for match, args, shown in list(_blocks(name)):
            real = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
            try:
                printed = _printed(args, Capture())
            finally:
                sys.stdout, sys.stderr = real
            body = "".join("    " + line + "\n" if line else "\n"
                           for line in [f"$ batchtui {shlex.join(args)}", *_cut(printed, shown)])
            pieces += [text[last:match.start(2)], body]
            last = match.end(2)
        docs_tables.write_again(path, "".join(pieces) + text[last:])
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())


def test_the_per_request_columns_the_manual_lists_are_the_csvs():
    """docs/commands.md's `--per-request` line names every column the CSV writes, in its order
    (it once left out num_cached_tokens)."""
    from batchtui.cli.results import PER_REQUEST_FIELDS

    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
    line = next(x for x in page.splitlines() if x.startswith("- `--per-request FILE.csv`"))
    listed = [w.strip(" ,.") for w in line.split(": ")[-1].split(",")]
    assert [w.split(" ")[0] for w in listed] == list(PER_REQUEST_FIELDS)
