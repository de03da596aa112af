"""The command line in-process, as the unit tests call it."""

from __future__ import annotations

from batchtui.cli import main


def run(capsys, *argv):
    """`batchtui` with these words (str() of each), in this process: (exit code, stdout, stderr)
    of this call alone (what was printed before it is left out)."""
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # main returns argparse's exits itself; a stray one still counts
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
