"""Ctrl-C while `batchtui` starts: one line and status 130, never an import's traceback.

The command's entry point (`batchtui.start`, the console script's and `python -m batchtui`'s)
takes SIGINT before it imports anything of the command line. Here SIGINT arrives while the
command line itself is being imported (an import hook sends it when `batchtui.cli` is looked
up), in a fresh interpreter that starts the command as its console script or `-m` does."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

INTERRUPT_WHILE_IMPORTING = """
import os, signal, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "batchtui.cli":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = ["batchtui", "steps"]
"""


def console_script() -> str:
    """What the installed `batchtui` script runs, from pyproject.toml's entry point."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, function = scripts["batchtui"].split(":")
    return f"from {module} import {function}\nsys.exit({function}())\n"


@pytest.mark.parametrize("start", [console_script(), "import runpy\nrunpy.run_module('batchtui', run_name='__main__')\n"],
                         ids=["console-script", "python-m"])
def test_ctrl_c_while_the_command_is_imported_is_one_line_and_130(start, tmp_path):
    out = subprocess.run([sys.executable, "-c", INTERRUPT_WHILE_IMPORTING + start], capture_output=True,
                         cwd=ROOT, timeout=120, env={"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path)})
    assert (out.returncode, out.stderr.decode(), out.stdout) == (130, "batchtui: interrupted\n", b"")


def test_once_started_ctrl_c_is_the_commands_own():
    """After start-up, SIGINT is Python's KeyboardInterrupt again: the commands handle it (a
    search resumes, a read stops between chunks)."""
    code = ("import signal, sys\nimport batchtui.start\n"
            "import batchtui.cli\nbatchtui.cli.main = lambda: signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
            "sys.exit(0 if batchtui.start.main() else 1)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
