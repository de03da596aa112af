"""Every flag of `vllm serve` and `vllm bench serve`, and what the simulator does with it: one table.

A flag is one of three kinds:

- modelled: it changes what the simulator computes or reports (its own argparse definition lives
  with the dial or option it sets: `sim.dials`, `args.py`);
- recorded: accepted and written into the result's metadata, changing nothing (a sampling
  temperature, the client's backend, a log level...); a run says in one line which it recorded;
- refused: the simulator cannot honestly give its effect; the message says why, and what to use
  instead. Some are refused only above a value that changes nothing (`ok`: the values accepted,
  such as `--pipeline-parallel-size 1`).

The parser accepts every flag of the table (`add_flags`), `build_setup` refuses and records
(`given`), and the manual's flag table is generated from it (`markdown_table`, docs/vllm-flags.md); a test checks the
page against it and the table against the flags read from vLLM's own argument definitions.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

KINDS = ("modelled", "recorded", "refused")

# How a flag takes its value, as vLLM's parser does: a switch (its --no- form too where vLLM has
# one), one value, one or more, any number, or an optional value.
ARITIES = {"b": 0, "v": None, "+": "+", "*": "*", "?": "?"}

from .vllm_flag_rows import BENCH_ROWS, OLDER_BENCH_ROWS, OLDER_SERVE_ROWS, SERVE_ROWS

@dataclass(frozen=True)
class VllmFlag:
    """One flag of `vllm serve` or `vllm bench serve` (or both), as the simulator takes it."""

    flag: str
    """Its long spelling, as vLLM's --help prints it."""
    aliases: tuple[str, ...]
    """Its short spellings (-tp, -q...)."""
    commands: tuple[str, ...]
    """"serve", "bench" or both."""
    arity: str
    """A key of ARITIES."""
    kind: str
    """One of KINDS."""
    ok: tuple[str, ...]
    """For a refused flag: the values accepted (that change nothing)."""
    note: str
    """What the simulator does with it, or why it is recorded or refused."""
    older: bool = False
    """A flag of earlier vLLM releases that vLLM 0.33 no longer has (published lines carry it)."""

    @property
    def dest(self) -> str:
        return "vllm_" + self.flag.lstrip("-").replace("-", "_")

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases)


def _rows(text: str, command: str, older: bool = False) -> list[VllmFlag]:
    out = []
    for line in text.strip().splitlines():
        names, arity, kind, ok, note = (part.strip() for part in line.split("|", 4))
        if arity not in ARITIES or kind not in KINDS:
            raise ValueError(f"bad flag row: {line!r}")
        flag, *aliases = names.split(",")
        out.append(VllmFlag(flag, tuple(aliases), (command,), arity, kind,
                            tuple(v for v in ok.split(",") if v), note, older))
    return out


def _merge(*groups: list[VllmFlag]) -> tuple[VllmFlag, ...]:
    """One row per flag; a flag of both commands keeps its first row, with both commands."""
    merged: dict[str, VllmFlag] = {}
    for rows in groups:
        for row in rows:
            if row.flag in merged:
                first = merged[row.flag]
                merged[row.flag] = VllmFlag(first.flag, first.aliases, first.commands + row.commands,
                                            first.arity, first.kind, first.ok, first.note, first.older)
            else:
                merged[row.flag] = row
    return tuple(merged.values())


FLAGS: tuple[VllmFlag, ...] = _merge(_rows(SERVE_ROWS, "serve"), _rows(BENCH_ROWS, "bench"),
                                     _rows(OLDER_SERVE_ROWS, "serve", True), _rows(OLDER_BENCH_ROWS, "bench", True))
BY_FLAG = {row.flag: row for row in FLAGS}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Give the parser every recorded and refused flag it does not define already (the modelled
    ones are defined with the dial or option they set)."""
    group = parser.add_argument_group(
        "other vllm serve and vllm bench serve flags (recorded in the result, or refused with the reason; "
        "see the manual's vLLM flag table)")
    for row in FLAGS:
        if row.kind == "modelled" or not row.flag.startswith("--"):
            continue
        if row.arity == "b":
            kwargs = dict(action=argparse.BooleanOptionalAction, default=None)
        else:
            kwargs = dict(nargs=ARITIES[row.arity], default=None, metavar="X")
        try:
            group.add_argument(*row.spellings, dest=row.dest, help=argparse.SUPPRESS, **kwargs)
        except argparse.ArgumentError:  # the command has a flag of that name: its own wins
            continue


def given(args: argparse.Namespace) -> dict[str, object]:
    """flag -> value of every recorded or refused flag on the command line."""
    out = {}
    for row in FLAGS:
        value = getattr(args, row.dest, None)
        if value is not None:
            out[row.flag] = value
    return out


def _shown(value) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)


def check(args: argparse.Namespace) -> dict[str, str]:
    """Refuse what the simulator cannot give (UserError, the reason in one line); return the
    recorded flags, flag -> value as typed."""
    from .exits import UserError

    recorded = {}
    for flag, value in given(args).items():
        row = BY_FLAG[flag]
        if row.kind == "refused":
            if row.ok and _shown(value) in row.ok:
                recorded[flag] = _shown(value)
                continue
            if row.arity == "b" and value is False and not row.ok:  # --no-enable-lora: off, as by default
                recorded[flag] = "off"
                continue
            raise UserError(f"argument {flag}: {_shown(value)!s} is not simulated: {row.note}")
        recorded[flag] = _shown(value)
    return recorded


def recorded_line(recorded: dict[str, str]) -> str:
    """The one line a run prints about the flags it kept but does not model."""
    items = ", ".join(f"{flag} {value}" if value != "on" else flag for flag, value in recorded.items())
    return f"batchtui: recorded, not modelled: {items}"


def markdown_table() -> str:
    """The manual's table of every flag (docs/vllm-flags.md), generated from FLAGS."""
    lines = ["| flag | command | kind | what the simulator does with it |", "|---|---|---|---|"]
    for row in FLAGS:
        names = ", ".join(f"`{s}`" for s in row.spellings)
        command = " and ".join({"serve": "vllm serve", "bench": "vllm bench serve"}[c] for c in row.commands)
        if row.older:
            command += " (earlier releases; gone in 0.33)"
        kind = row.kind + (f" (accepts {', '.join(row.ok)})" if row.ok else "")
        lines.append(f"| {names} | {command} | {kind} | {row.note.replace('|', '/')} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m batchtui.cli.vllm_flags > table.md: the manual's table
    print(markdown_table())
