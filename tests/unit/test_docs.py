"""The README is the short door to the project and the manual in docs/ builds strictly.

The README holds both quick-start commands near its top (CI's `.ci/run` runs the test one as
written there) and one example per command, each a command line batchtui's parser takes; the
manual builds with mkdocs in strict mode (a broken link, a missing page or an unknown table
marker fails), its tables generated from the code (tools/docs_tables.py)."""

from __future__ import annotations

import argparse
import glob
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
