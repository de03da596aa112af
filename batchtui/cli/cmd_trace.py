"""`batchtui trace`: replay a vLLM scheduler case iteration by iteration, or check a file of them."""

from __future__ import annotations

import argparse
import sys

from .exits import EXIT_FAILURE, EXIT_OK, UserError
from .output import Sink, output_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Run a scheduler case (config + requests arriving at given iterations) and print "
                     "its trace as JSON, or check every case of a file against its expected traces "
                     "with --all (exit 1 if any differs).")
    p.add_argument("case", nargs="?", help="a JSON file holding one case")
    p.add_argument("--all", metavar="FILE", help="run every case in FILE and print pass/fail per case")
    p.add_argument("--indent", type=int, choices=range(0, 9), metavar="N", default=None,
                   help="indent the JSON output by N spaces (0-8)")
    p.add_argument("--output", metavar="FILE", default=None,
                   help="write the trace to FILE (a temporary file renamed into place once the case has "
                        "run to its end) instead of standard output")
    p.set_defaults(func=run, memory_hint="fewer or shorter requests in the case file")


def run(args: argparse.Namespace) -> int:
    from sim.trace import check_case, load_cases, write_trace

    if args.all and args.case:
        raise UserError("give a case file or --all FILE, not both")
    if args.all and args.output:
        raise UserError("argument --output: writes one case's trace; --all prints pass or fail per case")
    if args.all:
        cases = load_cases(args.all)
        counts = {"pass": 0, "fail": 0, "skip": 0}
        for case in cases:
            name = case.get("name", "?") if isinstance(case, dict) else "?"
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
        return EXIT_FAILURE if counts["fail"] else EXIT_OK
    if not args.case:
        raise UserError("give a case file (batchtui trace CASE.json) or --all FILE")
    cases = load_cases(args.case)
    if len(cases) != 1:
        raise UserError(f"{args.case} holds {len(cases)} cases; use --all to run them all")
    with output_file(args.output, "--output") as sink:
        out = sink or Sink(sys.stdout, "standard output")
        # Written as the case runs, a record at a time: a trace lists every arrived request at
        # every iteration, so it may be far larger than the case (sim.trace.write_trace).
        write_trace(cases[0], out.write, args.indent)
        out.write("\n")
    return EXIT_OK
