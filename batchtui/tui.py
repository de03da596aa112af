"""Launch the tutorial: the options `batchtui` (no subcommand) accepts, and `run_app`."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

DEFAULT_FPS = 10
ESCAPE_DELAY_MS = 25
"""How long a lone Esc waits for the rest of an escape sequence before it counts as the Esc key
(Textual's ESCDELAY, 100 ms unless set). A sequence's bytes come together, even over SSH, and
tmux sends them at once; 100 ms made Esc feel slow. The app also reads Esc + a key that came
sooner as both keys (`app.BatchApp.on_event`), so a fast learner's Esc is never lost."""


def add_app_arguments(parser: argparse.ArgumentParser) -> None:
    """The tutorial's options, for `batchtui` with no subcommand."""
    parser.add_argument("--step", type=int, metavar="N", help="open step N (1-20) instead of where you left off")
    parser.add_argument("--reset-progress", action="store_true", help="forget saved progress and start at step 1")
    parser.add_argument("--ascii", action="store_true",
                        help="draw with plain ASCII only, for terminals without block or box glyphs")
    parser.add_argument("--fps", type=int, default=DEFAULT_FPS, metavar="N",
                        help=f"frames per second while the simulation runs (default {DEFAULT_FPS})")
    parser.add_argument("--scenario", type=Path, metavar="FILE",
                        help="open the playground (step 20) on a scenario saved as TOML")
    from .cli.flag_table import GPU, PROFILES, add_rows

    # the commands' --gpu and --profiles; the tutorial's --gpu names its header's GPU (and its help
    # names no profile: listing them would load the simulator before the first frame)
    add_rows(parser, (GPU,), into=parser, changes={GPU.flag: {
        "help": "your GPU: auto (the one nvidia-smi reports) or a profile id such as h100-pcie; the header "
                "names it, the cheat sheet and playground start on it"}})
    parser.add_argument("--server", metavar="URL",
                        help="a real OpenAI-compatible server (a vLLM, batchtui serve) at http://HOST:PORT: the "
                             "playground sends it its traffic and shows what it measures beside the simulation "
                             "(s in the playground does the same)")
    add_rows(parser, (PROFILES,), into=parser)


def run_app(args: argparse.Namespace) -> int:
    """Run the tutorial. User errors print one line to stderr and return 2.

    Exit status: 0 after a quit; 1 if an error stopped the app (one line on stderr says where its
    report is); 129 if the terminal went away; 130 or 143 after SIGINT or SIGTERM."""
    try:
        return _run_app(args)
    except Exception as exc:  # before the app took the terminal: the same report and line
        from . import crash
        from .state_folder import state_dir

        print(crash.record(state_dir(), exc, {"when": "starting the tutorial"}, crash.PROGRESS_UNTOUCHED),
              file=sys.stderr)
        return 1


def _run_app(args: argparse.Namespace) -> int:
    # Read by Textual when first imported (textual.constants): before anything imports it.
    os.environ.setdefault("ESCDELAY", str(ESCAPE_DELAY_MS))
    from sim.errors import SimError

    from .settings import AppSettings

    if not 1 <= args.fps <= 60:
        print(f"batchtui: --fps {args.fps} is not allowed: use 1 to 60 frames per second.", file=sys.stderr)
        return 2
    try:
        import steps as lessons

        # Only the front matter of every file now; each step is built in full when shown (the
        # test suite validates all twenty), so the first frame does not wait for them.
        step_list = lessons.open_lessons()
    except SimError as exc:
        print(f"batchtui: the lessons cannot be loaded: {exc}", file=sys.stderr)
        return 1
    numbers = [s.number for s in step_list.summaries]
    if args.step is not None and args.step not in numbers:
        print(f"batchtui: --step {args.step} is not allowed: steps are numbered 1 to {len(numbers)}.",
              file=sys.stderr)
        return 2
    start = args.step
    if args.scenario is not None:
        from .scenario_files import Unusable, read_scenario

        try:
            scenario = read_scenario(args.scenario)
        except Unusable as exc:
            print(f"batchtui: --scenario: {exc}", file=sys.stderr)
            return 2
        from dataclasses import replace

        try:
            playground = step_list[-1]
        except SimError as exc:
            print(f"batchtui: the lessons cannot be loaded: {exc}", file=sys.stderr)
            return 1
        step_list[-1] = replace(playground, scenario=scenario)
        start = playground.number
    server = getattr(args, "server", None)
    if server is not None:
        from .loadgen.live import LiveError, base_url

        try:
            base_url(server)
        except LiveError as exc:
            print(f"batchtui: --server: {exc}", file=sys.stderr)
            return 2
        if args.scenario is None:
            start = numbers[-1]  # the playground
    gpu, profiles_path = getattr(args, "gpu", None), getattr(args, "profiles", None)
    if profiles_path or (gpu and gpu.strip().lower() != "auto"):
        # A named GPU or a profile file is checked now (no nvidia-smi: that waits for `auto`,
        # which the app asks after its first frame).
        from .learner_gpu import find

        try:
            if gpu and gpu.strip().lower() != "auto":
                find(gpu, profiles_path or "")
            else:
                from sim.profiles import load_profiles

                load_profiles(profiles_path)
        except SimError as exc:
            print(f"batchtui: {exc}", file=sys.stderr)
            return 2
    if "TEXTUAL_DRIVER" not in os.environ and not sys.stdin.isatty():  # (textual-serve sets it)
        print("batchtui: the tutorial reads its keys from a terminal, and its input is not one; "
              "the headless tools (batchtui sim, sweep, plan, steps, trace, calibrate, compare) need none.", file=sys.stderr)
        return 2
    from .serving import served

    settings = AppSettings(ascii_only=args.ascii, fps=args.fps, start_step=start,
                           reset_progress=args.reset_progress, scenario_path=args.scenario,
                           gpu=gpu, profiles_path=profiles_path, served=served(), server_url=server)

    from .app import BatchApp

    app = BatchApp(step_list, settings)
    try:
        app.run(mouse=False)
    except Exception as exc:  # outside Textual's loop: starting or stopping the terminal driver
        return app.ending.finish(exc)
    status = app.ending.finish()
    if status == 0 and app.tutorial is not None and "TEXTUAL_DRIVER" not in os.environ:
        # Leaving a terminal (a web page's output is textual-serve's pipe): the steps still
        # open, so a learner knows what is left for next time.
        from .step_list import summaries_of

        still_open = app.progress.still_open([s.number for s in summaries_of(app.steps)])
        if still_open:
            from .formatting import wrap_words

            width = shutil.get_terminal_size().columns
            try:
                print(wrap_words(f"batchtui: {still_open} `batchtui` opens where you left off; "
                                 "`batchtui steps` lists them.", max(20, width - 1)))
            except OSError:
                pass  # the terminal went as the app ended
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="batchtui", description="The batching tutorial.")
    add_app_arguments(parser)
    return run_app(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
