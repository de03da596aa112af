"""The argument parser. A subcommand's flags are added only when that subcommand is on the command
line, so `batchtui` alone (the tutorial) and `batchtui --help` import no subcommand module, and
with it neither numpy nor the simulator."""

from __future__ import annotations

import argparse
import functools
import importlib

from .flag_table import MODEL

# name -> (module defining add_arguments(parser) and HELP, one line of help)
SUBCOMMANDS = {
    "sim": "batchtui.cli.cmd_sim",
    "sweep": "batchtui.cli.cmd_sweep",
    "plan": "batchtui.cli.cmd_plan",
    "search": "batchtui.cli.cmd_search",
    "steps": "batchtui.cli.cmd_steps",
    "trace": "batchtui.cli.cmd_trace",
    "calibrate": "batchtui.cli.cmd_calibrate",
    "compare": "batchtui.cli.cmd_compare",
    "serve": "batchtui.cli.cmd_serve",
    "bench": "batchtui.cli.cmd_bench",
    "web": "batchtui.cli.cmd_web",
}
HELP = {
    "sim": "simulate one serving run and print a vllm bench serve style result",
    "sweep": "run the same traffic at several rates (or max-num-seqs values)",
    "plan": "the highest rate per replica that meets an SLO, and replicas checked at the peak",
    "search": "the cheapest deployment meeting an SLO over a grid of GPUs, TP sizes and dials",
    "steps": "list the twenty steps with your completion marks",
    "trace": "replay a vLLM scheduler case iteration by iteration",
    "calibrate": "fit the GPU profile to measured runs (vllm bench serve, GuideLLM, aiperf) and write it as a profile file",
    "compare": "simulate measured runs (vllm bench serve, GuideLLM, aiperf) and show measured and simulated side by side",
    "serve": "serve vLLM's OpenAI-compatible API from the simulated engine, for real clients",
    "bench": "load a real OpenAI-compatible server as vllm bench serve does, with the simulator's figures beside",
    "web": "serve the tutorial in a web page (textual-serve), on this machine only unless --expose",
}


class Parser(argparse.ArgumentParser):
    """argparse with its mistakes on one line (no usage block): `prog: error: ... (see --help)`."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def pasted(argv: list[str]) -> list[str]:
    """A command line with `vllm serve MODEL ...` and `vllm bench serve ...` lines pasted after the
    subcommand, as the subcommand's flags: the words `vllm serve` and `vllm bench serve` dropped,
    the model `vllm serve` takes first as --model, and flags spelled with underscores read with
    dashes, as vLLM's own parser reads them (--max_num_seqs is --max-num-seqs)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "vllm" and argv[i + 1:i + 3] == ["bench", "serve"]:
            i += 3
            continue
        if word == "vllm" and argv[i + 1:i + 2] == ["serve"]:
            i += 2
            if i < len(argv) and not argv[i].startswith("-"):
                out += [MODEL.flag, argv[i]]
                i += 1
            continue
        if word.startswith("--") and "_" in word.partition("=")[0]:
            key, sep, value = word.partition("=")
            word = key.replace("_", "-") + sep + value
        out.append(word)
        i += 1
    return out


def chosen_command(argv: list[str]) -> str | None:
    """The subcommand named on the command line, if any (its first word that names one)."""
    return next((word for word in argv if word in SUBCOMMANDS), None)


def build_parser(populate: str | None = None, subcommands: bool = True) -> Parser:
    """The whole parser; only `populate`'s subcommand gets its flags (the others only their help).
    Without `subcommands`, the tutorial's options alone (what parsing no words at all needs)."""
    parser = Parser(prog="batchtui",
                    description="Learn how LLM inference servers batch requests, on a live simulation. "
                                "With no command, opens the tutorial.")
    from batchtui.tui import add_app_arguments

    add_app_arguments(parser)
    if not subcommands:
        parser.set_defaults(command=None)  # (as the subcommands' `dest` would)
        return parser
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=HELP[name], description=HELP[name])
        if name == populate:
            importlib.import_module(module).add_arguments(p)
    return parser


@functools.cache
def parser_for(command: str | None) -> Parser:
    """`build_parser(command)`, built once per process: `main` parses with it. A parse keeps
    nothing on the parser (argparse fills a fresh namespace and copies a list default before
    appending to it; no command mutates what it parsed), so one built parser serves every call
    of `main` in a process: a command line costs one build (about 5 ms), a test process running
    thousands of them builds each command's once."""
    return build_parser(command)


def parser_for_line(argv: list[str]) -> Parser:
    """The parser for a command line: `batchtui` alone (the tutorial, launched as a learner does)
    needs no subcommand's parser, and building the eleven cost its first frame about 3 ms of CPU;
    any word on the line (--help, a mistake, a command) gets the whole parser."""
    if not argv:
        return _bare_parser()
    return parser_for(chosen_command(argv))


@functools.cache
def _bare_parser() -> Parser:
    return build_parser(subcommands=False)
