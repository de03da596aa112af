"""The `batchtui` command: the tutorial with no subcommand, headless tools as subcommands.

`main()` imports only what the chosen path needs: with no subcommand it hands the parsed options
to the app (`batchtui.tui.run_app`) having imported neither numpy nor the simulator, so the
tutorial's first frame does not wait for them. User mistakes print one line on stderr and exit 2;
a failure exits 1, Ctrl-C 130, SIGTERM 143 and SIGHUP 129, each with one line (see `exits`).
"""

from __future__ import annotations

import os
import sys

from .exits import (EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USER_ERROR, OutputError, ReaderGone, UserError,
                    WorkerError, stop_signals, stopped_how)

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USER_ERROR", "UserError", "main"]

TRACEBACK_ENV = "BATCHTUI_TRACEBACK"


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C before a command or the app took it (while importing)
        _say("batchtui: interrupted")
        return EXIT_INTERRUPTED


def _main(argv: list[str] | None) -> int:
    from .parser import parser_for_line, pasted

    argv_given = argv
    argv = pasted(sys.argv[1:] if argv is None else list(argv))
    parser = parser_for_line(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a mistake argparse found (already printed, one line)
        return exc.code if isinstance(exc.code, int) else EXIT_USER_ERROR
    func = getattr(args, "func", None)
    if func is None:
        from batchtui.tui import run_app

        return run_app(args)
    from batchtui import typed_ahead

    typed_ahead.release()  # (the tutorial's: Textual's driver, as it takes the terminal)
    if argv_given is None:
        # The process is this command (not an in-process caller, such as a test): the collector
        # settles before the work, as the app's does after its first frame (`gc_policy`).
        from batchtui import gc_policy

        gc_policy.settle_once()
    return run_command(func, args)


def run_command(func, args) -> int:
    """Run a subcommand; every way it can end is one line on stderr at most."""
    from sim.errors import SimError

    from .output import command_outputs

    try:
        with stop_signals(), command_outputs():  # files renamed into place only after stdout is written
            return func(args)
    except UserError as exc:
        _say(f"batchtui: error: {exc}")
        return EXIT_USER_ERROR
    except SimError as exc:
        from sim.errors import ConfigError

        from .setup import flag_message

        # A dial's refusal that reaches here was not about a flag (the commands' own turn those
        # into flag messages, `setup.user_errors`): a trace case's key, say, spelled as given.
        # Any other error names its dials by their flags.
        _say(f"batchtui: error: {exc if isinstance(exc, ConfigError) else flag_message(exc)}")
        return EXIT_USER_ERROR
    except OutputError as exc:
        _say(f"batchtui: error: {exc}")
        _drop_stdout()  # what could not be written is not tried again at exit
        return EXIT_FAILURE
    except WorkerError as exc:
        _say(f"batchtui: error: {exc}")
        return EXIT_FAILURE
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM or SIGHUP (exits.Terminated)
        word, status = stopped_how(exc)
        _say(f"batchtui: {word}")
        return status
    except ReaderGone:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining again
        # when it flushes stdout at exit. (Any other broken pipe, such as one of a worker
        # pool's, is a failure like any other.)
        _drop_stdout()
        return EXIT_OK
    except MemoryError:
        # what the command can be given less of: its own word (`memory_hint`), else --num-prompts
        # where it has that flag (whose command has imported `options`), else nothing named
        hint = getattr(args, "memory_hint", None)
        if hint is None and hasattr(args, "num_prompts"):
            from .options import flagged

            hint = flagged("fewer {workload.num_prompts}")
        _say("batchtui: error: not enough memory for this run" + (f" ({hint}?)" if hint else ""))
        return EXIT_FAILURE
    except Exception as exc:  # a bug: one line, the traceback on request
        if os.environ.get(TRACEBACK_ENV):
            raise
        _say(f"batchtui: internal error: {type(exc).__name__}: {exc} (set {TRACEBACK_ENV}=1 for the "
             "traceback, and please report it)")
        return EXIT_FAILURE


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so the buffered text that could not be written is not
    tried again (and complained about) when Python flushes it at exit."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # closed (None), or not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _say(text: str) -> None:
    print(" ".join(text.split()), file=sys.stderr)
