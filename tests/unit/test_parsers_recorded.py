"""Every command's parser, recorded: each flag's spellings, destination, default, type, choices,
nargs, metavar, help, group and whether it is required, in the parser's order. The flags are built
from tables (`batchtui.cli.flag_table`, the dials of `sim.dials`, vLLM's flags in
`batchtui.cli.vllm_flags`); this pins what a user sees, so a change to the tables that changes
a command's flags is a change made on purpose (regenerate with BATCHTUI_RECORD_PARSERS=1 and
read the diff of tests/data/cli_parsers.json)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from batchtui.cli.parser import SUBCOMMANDS, build_parser

RECORD = Path(__file__).parents[1] / "data" / "cli_parsers.json"


def _name(value) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value if not isinstance(value, float) or value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, (list, tuple, range)):
        return [_name(v) for v in value]
    return getattr(value, "__name__", None) or type(value).__name__


def _vllm_only(action: argparse.Action) -> bool:
    """One of vLLM's flags the simulator records or refuses (`vllm_flags.add_flags`: hidden, their
    kinds and notes pinned by that table's own tests): recorded here by its spellings only."""
    return action.dest.startswith("vllm_") and action.help == argparse.SUPPRESS


def describe(parser: argparse.ArgumentParser) -> list[dict]:
    """Every action of `parser`, as a user meets it."""
    titles = {id(a): f"{i}: {g.title}" for i, g in enumerate(parser._action_groups) for a in g._group_actions}
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or _vllm_only(action):
            continue
        out.append({
            "options": list(action.option_strings), "dest": action.dest, "action": type(action).__name__,
            "default": _name(action.default), "type": _name(action.type), "choices": _name(action.choices),
            "nargs": _name(action.nargs), "metavar": _name(action.metavar), "required": action.required,
            "const": _name(action.const), "help": action.help, "group": titles.get(id(action)),
        })
    return out


def record() -> dict:
    parsers = {"batchtui": build_parser(None)}
    for name in SUBCOMMANDS:
        top = build_parser(name)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        parsers[name] = sub.choices[name]
    return {name: {"description": p.description, "actions": describe(p),
                   "vllm_only": [" ".join(a.option_strings) for a in p._actions if _vllm_only(a)]}
            for name, p in parsers.items()}


@pytest.fixture(scope="module")
def recorded() -> dict:
    now = json.loads(json.dumps(record()))
    if os.environ.get("BATCHTUI_RECORD_PARSERS"):
        lines = ["{"]
        for i, (name, p) in enumerate(now.items()):  # one line a flag: a change reads as a diff
            lines.append(f" {json.dumps(name)}: {{\"description\": {json.dumps(p['description'])},")
            lines.append(f"  \"vllm_only\": {json.dumps(p['vllm_only'])},")
            lines.append("  \"actions\": [")
            lines += [f"  {json.dumps(a, sort_keys=True)}," for a in p["actions"]]
            lines[-1] = lines[-1].rstrip(",")
            lines.append(" ]}" + ("," if i < len(now) - 1 else ""))
        RECORD.write_text("\n".join(lines) + "\n}\n", encoding="utf-8")
    return now


@pytest.mark.parametrize("command", ["batchtui", *SUBCOMMANDS])
def test_every_commands_flags_are_as_recorded(recorded, command):
    """A command's flags as the record has them; a difference names the flag."""
    wanted = json.loads(RECORD.read_text(encoding="utf-8"))[command]
    now = recorded[command]
    assert now["description"] == wanted["description"]
    assert now["vllm_only"] == wanted["vllm_only"]
    by_dest = {(tuple(a["options"]), a["dest"]): a for a in now["actions"]}
    for action in wanted["actions"]:
        key = (tuple(action["options"]), action["dest"])
        assert key in by_dest, f"{command}: {key} is gone"
        assert by_dest[key] == action, f"{command}: {key} changed"
    assert [(tuple(a["options"]), a["dest"]) for a in now["actions"]] == \
        [(tuple(a["options"]), a["dest"]) for a in wanted["actions"]], f"{command}: flags added or reordered"
