"""The collector's settings after `settle()`: what was alive is frozen, the thresholds are the
policy's, and a second `settle_once()` does nothing (a test process calls the command line many
times). Each check runs in a fresh interpreter: settling is for the life of a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import gc, sys
from batchtui import gc_policy
before = gc.get_freeze_count()
junk = [[i] for i in range(50_000)]  # alive: frozen by the settle
gc_policy.settle_once()
frozen = gc.get_freeze_count()
assert frozen >= before + 50_000, (before, frozen)
assert gc.get_threshold() == gc_policy.THRESHOLDS, gc.get_threshold()
more = [[i] for i in range(1_000)]
gc_policy.settle_once()  # already settled: nothing is collected or frozen again
assert gc.get_freeze_count() == frozen
gc_policy.settle()  # settling again on purpose freezes what has been made since
assert gc.get_freeze_count() >= frozen + 1_000
print("ok")
"""


def test_settle_freezes_what_is_alive_and_sets_the_thresholds_once():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_test_process_itself_has_settled():
    """tests/conftest.py settles each worker after collection, as the app does after its first frame."""
    import gc

    from batchtui import gc_policy

    assert gc.get_threshold() == gc_policy.THRESHOLDS and gc.get_freeze_count() > 0


COMMAND = """
import gc, io, sys, contextlib
from batchtui import gc_policy
from batchtui.cli import main
seen = []
real = gc_policy.settle
gc_policy.settle = lambda: (seen.append(gc.get_threshold()), real())
sys.argv = ["batchtui", "sim", "--num-prompts", "3", "--json"]
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["sim", "--num-prompts", "3", "--json"]) == 0  # an in-process caller: left alone
    assert not seen and gc.get_threshold() != gc_policy.THRESHOLDS, seen
    assert main() == 0  # the process is the command: settled before the work
assert len(seen) == 1 and gc.get_threshold() == gc_policy.THRESHOLDS, seen
print("ok")
"""


def test_a_headless_command_settles_the_collector_before_its_work():
    """`batchtui sim` and the other headless commands settle as the app does (a 100,000-request run
    spent 5-7 % of its CPU in 431 collections); a caller passing its own argv keeps its collector."""
    out = subprocess.run([sys.executable, "-c", COMMAND], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**os.environ, "BATCHTUI_NO_PROGRESS": "1"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


HELD = """
import contextlib, gc, io, sys
def collections():
    return sum(generation["collections"] for generation in gc.get_stats())
import batchtui.start  # (the command's first import: the collector is held from here)
at_start = collections()
from batchtui import gc_policy
seen = []
real = gc_policy.settle
gc_policy.settle = lambda: (seen.append((gc.isenabled(), collections() - at_start)), real())
sys.argv = ["batchtui", "sim", "--num-prompts", "3", "--json"]
with contextlib.redirect_stdout(io.StringIO()):
    status = batchtui.start.main()
assert status == 0 and seen == [(False, 0)] and gc.isenabled(), (status, seen)
print("ok")
"""


def test_the_command_holds_the_collector_off_until_it_settles():
    """`batchtui` (`batchtui.start`) makes no collection while it starts (start-up keeps nearly
    everything it makes: about 200 collections that freed next to nothing cost the tutorial's
    first frame 20-60 ms); the settle turns the collector back on."""
    out = subprocess.run([sys.executable, "-c", HELD], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**os.environ, "BATCHTUI_NO_PROGRESS": "1"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
