"""Exit codes of the `batchtui` command and the error a user's mistake raises, defined once.

0: done. 1: a failure (the tool, the disk, or for `plan` "no rate meets this SLO", like grep's
1 for "no match"). 2: a mistake in what was asked (a bad flag, a bad file, a configuration vLLM
refuses). 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A mistake in what the user asked for: printed as one line, exit 2."""


class OutputError(Exception):
    """Writing a result failed after the run (a full disk, an I/O error): one line, exit 1."""
