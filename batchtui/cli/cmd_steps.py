"""`batchtui steps`: the twenty steps with the learner's completion marks.

It reads what the app's table of contents reads, each lesson's front matter (number, title,
section, minutes) and the numbering, and runs no simulation: filling every lesson's figures took
about a second and a half for a list that shows none of them."""

from __future__ import annotations

import argparse
import json
import sys

from .exits import EXIT_FAILURE, EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "List the tutorial's twenty steps, marking those you finished."
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from steps import StepError, open_lessons

    try:
        lessons = open_lessons().summaries
    except StepError as exc:
        print(f"batchtui: error: the lessons cannot be loaded: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    from batchtui.progress import ProgressStore

    progress, notice = ProgressStore().load()
    if notice:
        print(notice, file=sys.stderr)
    done = progress.completed
    if args.json:
        print(json.dumps([{"number": s.number, "title": s.title, "section": s.section,
                           "minutes": s.minutes, "done": s.number in done,
                           "current": s.number == progress.current_step} for s in lessons], indent=2))
        return EXIT_OK
    section = None
    for s in lessons:
        if s.section != section:
            section = s.section
            print(f"\n{section}" if s.number > 1 else section)
        mark = "[x]" if s.number in done else "[ ]"
        here = "  <- you are here" if s.number == progress.current_step else ""
        print(f"  {mark} {s.number:>2}. {s.title} ({s.minutes} min){here}")
    finished = sum(1 for s in lessons if s.number in done)
    print(f"\n{finished} of {len(lessons)} steps done. Run `batchtui` to continue at step "
          f"{progress.current_step}.")
    return EXIT_OK
