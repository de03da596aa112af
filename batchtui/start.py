"""The `batchtui` command's entry point (and `python -m batchtui`'s).

Importing it is the first thing the command does after Python's own start-up, and the first
thing it does is take Ctrl-C: until the command has been imported (the command line's modules,
then the app's or a subcommand's, which `batchtui.cli.main` catches itself), SIGINT ends the
process at once with one line and status 130, never an import's traceback. It imports nothing
but `os` and `signal` (the console script has imported `re`, hence `signal`'s own needs, already)
before that, and then `batchtui.typed_ahead` (`termios`) to keep the keys typed meanwhile as
typed, and `batchtui.gc_policy` (`gc` alone) to hold the collector off until start-up is over:
the first frame, or a headless command's work (`gc_policy.hold`).
"""

import os
import signal

INTERRUPTED = 128 + signal.SIGINT
"""The exit status after Ctrl-C, as a shell reports it."""


def interrupted(signum, frame) -> None:
    """SIGINT during start-up: one line, status 130, at once (nothing has been started that
    needs tidying: the terminal is put back as the shell left it)."""
    held = globals().get("typed_ahead")  # (not if Ctrl-C came before it was imported)
    if held is not None:
        held.release()
    os.write(2, b"batchtui: interrupted\n")
    os._exit(INTERRUPTED)


signal.signal(signal.SIGINT, interrupted)

from batchtui import typed_ahead  # noqa: E402 -- after Ctrl-C is taken

typed_ahead.hold()

from batchtui import gc_policy  # noqa: E402

gc_policy.hold()


def main() -> int:
    """Import the command line, then run it with Python's own Ctrl-C (a KeyboardInterrupt the
    command and the app handle)."""
    from batchtui.cli import main as command

    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        return command()
    except KeyboardInterrupt:  # between the line above and the command's own handling
        os.write(2, b"batchtui: interrupted\n")
        return INTERRUPTED
    finally:
        typed_ahead.release()  # (if the app never started: a mistake in the flags)
