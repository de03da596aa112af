"""How the cyclic garbage collector runs in a batchtui process: once, after start-up (the app
after its first frame; a headless command run as the `batchtui` command before its work; a
worker process before its first task).

Python's collector walks every tracked object on a full collection, and starts one whenever the
objects that survived young collections have grown by a quarter. batchtui keeps a large heap that
lives as long as the process (Textual, Rich, numpy, the lessons) and churns through many
short-lived objects (a simulated request's bookkeeping, a frame's text): at the default settings a
full collection came every ~10 s of a top-speed run, 70-100 ms each in the tutorial (a key pressed
then waited for it), and in the test suite the collector took ~15 % of the CPU.

`settle()` collects once, freezes everything alive (a frozen object is never walked again) and lets
the young generation grow to `THRESHOLDS[0]` objects between collections. Measured over 300 frames
at 30x on steps 5, 9, 12 and 20 (`benchmarks/gc_pauses.py`): the longest pause 68-83 ms -> 7-12 ms,
no full collection instead of two or three, the collector's share of the CPU 5-7 % -> under 1 %.
A headless `batchtui sim` of 100,000 requests: 431 collections taking 0.25-0.36 s of its 4.8 s of
CPU -> 8 taking 0.03-0.04 s, the same peak memory (67 MB).

Before that, `hold()` (the `batchtui` command's first act, `batchtui.start`) keeps the collector
off: start-up allocates objects by the hundred thousand (the imports, Textual's first screen) and
keeps nearly all of them, so Python's ~200 collections before the first frame found next to
nothing to free and cost 20-60 ms of the tutorial's first frame (`benchmarks/app_benchmark.py`;
docs/performance.md). `settle()` turns it back on.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 20)
"""Young objects allocated between two collections, and how many collections of one generation
before the next is collected (CPython's defaults: 700, 10, 10)."""

_settled = False


def hold() -> None:
    """No collection until `settle()` (start-up's garbage, what little there is, waits for its
    first collection)."""
    gc.disable()


def settle() -> None:
    """Collect, freeze what is alive, set `THRESHOLDS` and collect from now on (after a `hold()`
    too). Objects made before this that become cyclic garbage later are never collected (there
    are few: they are start-up's)."""
    global _settled
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    gc.enable()
    _settled = True


def settle_once() -> None:
    """`settle()`, unless this process has settled already (an in-process caller of the command
    line, such as a test, runs it many times: one collection is enough)."""
    if not _settled:
        settle()
