"""`batchtui trace`: replay a vLLM scheduler case iteration by iteration, or check a file of them."""

from __future__ import annotations

import argparse
import json
import sys

from .exits import EXIT_FAILURE, EXIT_OK, UserError
from .output import Sink


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Run a scheduler case (config + requests arriving at given iterations) and print "
                     "its trace as JSON, or check every case of a file against its expected traces "
                     "with --all (exit 1 if any differs).")
    p.add_argument("case", nargs="?", help="a JSON file holding one case")
    p.add_argument("--all", metavar="FILE", help="run every case in FILE and print pass/fail per case")
    p.add_argument("--indent", type=int, choices=range(0, 9), metavar="N", default=None,
                   help="indent the JSON output by N spaces (0-8)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sim.errors import SimError
    from sim.trace import compare, load_cases, run_case

    if args.all and args.case:
        raise UserError("give a case file or --all FILE, not both")
    if args.all:
        cases = load_cases(args.all)
        failed = 0
        for case in cases:
            name = case.get("name", "?")
            valid = case.get("valid_in_real_vllm", True)
            try:
                actual = run_case(case)
            except SimError as exc:
                if valid:
                    failed += 1
                    print(f"FAIL {name}: rejected: {exc}")
                else:
                    print(f"pass {name} (rejected as vLLM would: {exc})")
                continue
            if not valid:
                failed += 1
                print(f"FAIL {name}: ran a case real vLLM refuses; expected a rejection")
                continue
            expected = case.get("expected", {})
            if not isinstance(expected, dict):
                failed += 1
                print(f"FAIL {name}: its 'expected' is not an object")
                continue
            diffs = compare(expected, actual)
            if diffs:
                failed += 1
                print(f"FAIL {name}: {len(diffs)} difference(s)")
                for d in diffs[:10]:
                    print(f"    {d}")
            else:
                print(f"pass {name}")
        print(f"{len(cases) - failed} passed, {failed} failed")
        return EXIT_FAILURE if failed else EXIT_OK
    if not args.case:
        raise UserError("give a case file (batchtui trace CASE.json) or --all FILE")
    cases = load_cases(args.case)
    if len(cases) != 1:
        raise UserError(f"{args.case} holds {len(cases)} cases; use --all to run them all")
    Sink(sys.stdout, "standard output").write(json.dumps(run_case(cases[0]), indent=args.indent) + "\n")
    return EXIT_OK
