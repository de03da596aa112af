"""The `batchtui` command: the tutorial with no arguments, headless tools as subcommands.

User mistakes print one clear line on stderr and exit 2; a failure of the tool itself exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_USER_ERROR = 2
EXIT_FAILURE = 1


class UserError(Exception):
    """A mistake in what the user asked for; printed without a traceback."""


def _cmd_trace(args: argparse.Namespace) -> int:
    from sim.trace import check_case, load_cases, run_case

    if args.all:
        cases = load_cases(args.all)
        counts = {"pass": 0, "fail": 0, "skip": 0}
        for case in cases:
            name = case.get("name", "?")
            status, lines = check_case(case)
            counts[status] += 1
            if status == "pass":
                print(f"pass {name}" + (f" ({lines[0]})" if lines else ""))
            elif status == "skip":
                print(f"skipped {name}: {lines[0]}")
            else:
                print(f"FAIL {name}: {lines[0]}")
                for d in lines[1:11]:
                    print(f"    {d}")
        skipped = f", {counts['skip']} skipped" if counts["skip"] else ""
        print(f"{counts['pass']} passed, {counts['fail']} failed{skipped}")
        return EXIT_FAILURE if counts["fail"] else 0
    if not args.case:
        raise UserError("give a case file (batchtui trace CASE.json) or --all FILE")
    cases = load_cases(args.case)
    if len(cases) != 1:
        raise UserError(f"{args.case} holds {len(cases)} cases; use --all to run them all")
    print(json.dumps(run_case(cases[0]), indent=args.indent))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="batchtui",
        description="Learn how LLM inference servers batch requests, on a live simulation. "
                    "With no command, opens the tutorial.")
    try:
        from batchtui.tui import add_app_arguments
    except ImportError:  # the app is optional for the headless tools
        add_app_arguments = None
    if add_app_arguments is not None:
        add_app_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("trace", help="replay a vLLM scheduler case iteration by iteration",
                       description="Run a scheduler case (config + requests arriving at given "
                                   "iterations) and print its trace as JSON, or check every case "
                                   "of a file against its expected traces with --all.")
    p.add_argument("case", nargs="?", help="a JSON file holding one case")
    p.add_argument("--all", metavar="FILE", help="run every case in FILE and print pass/fail per case")
    p.add_argument("--indent", type=int, default=None, help="indent the JSON output")
    p.set_defaults(func=_cmd_trace)

    try:
        from batchtui import commands
    except ImportError:
        commands = None
    if commands is not None:
        commands.add_subcommands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from sim.errors import SimError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "func", None) is None:
            from batchtui.tui import run_app
            return run_app(args)
        return args.func(args)
    except (UserError, SimError) as exc:
        print(f"batchtui: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
