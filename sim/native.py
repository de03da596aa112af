"""The compiled core: which of the simulator's modules are compiled with mypyc when batchtui is
installed (setup.py), and the choice, when `sim` is imported, between those and their sources.

The same source files are compiled (mypyc reads their type annotations); the pure modules stay the
reference (tests/unit/test_native.py runs drawn scenarios through both and compares every result
to the float). The compiled modules are used only if every one of them was built from the source
now beside it (the build writes each source's hash to STAMP): an edited source, as in an editable
install, or BATCHTUI_PURE=1 in the environment, loads every module of MODULES from its source
instead (all or none: compiled modules call each other directly, so one left compiled would not
see the others' pure versions). No C compiler, or no mypyc, at install time: no compiled modules,
nothing to choose. The choice is made when the first of MODULES is imported, not with `sim`:
the tutorial's first frame imports none of them, and choosing (hashlib, which loads OpenSSL, and
the sources read and hashed) cost it 4-5 ms of CPU.

Kept free of other `sim` imports: setup.py reads MODULES from this file alone."""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Mapping
from pathlib import Path

MODULES = ("engine", "cost", "metrics", "frontend", "kv", "request", "arrivals", "schedulers.base",
           "schedulers.continuous", "schedulers.running", "schedulers.static", "schedulers.dynamic")
"""The modules compiled (dotted, under `sim`): where the sampled profile finds the sweep's time,
and the other policies (an interpreted class cannot subclass a compiled one: they subclass the
scheduler's base). Each must be type-clean (`mypy` with MYPY_OPTIONS on them finds no error);
the queues (subclasses of deque and list) and the workload's draws stay interpreted."""

MYPY_OPTIONS = ("--ignore-missing-imports", "--follow-imports=silent")
"""How mypyc type-checks MODULES: the modules they import checked but their errors not reported
(they stay interpreted). numpy is a build requirement (pyproject.toml): its types are read in
every build environment, so the check is the same in each, and a numpy value is never taken for
a list (a value mypy does not know is checked at run time against the type it is assigned to)."""

STAMP = "native.json"
"""Beside this file in a build: {module: the sha256 of the source it was compiled from}."""

PURE_ENV = "BATCHTUI_PURE"
"""Set to 1 to load the pure modules though compiled ones are installed."""

ROOT = Path(__file__).resolve().parent


def source_path(root: Path, module: str) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def source_hashes(root: Path) -> dict[str, str]:
    """The sha256 of each of MODULES' sources under the package folder `root`."""
    import hashlib

    return {m: hashlib.sha256(source_path(root, m).read_bytes()).hexdigest() for m in MODULES}


def built(root: Path) -> list[str]:
    """MODULES that have an extension module this interpreter can load under `root`."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    return [m for m in MODULES
            if any(source_path(root, m).with_suffix(s).exists() for s in suffixes)]


def state(root: Path, environ: Mapping[str, str] = os.environ) -> str:
    """"compiled" (every module of MODULES built from the source now beside it), "none" (no
    compiled module), "forced pure" (PURE_ENV set) or "stale" (a source changed since the build,
    or the build is partial)."""
    present = built(root)
    if not present:
        return "none"
    if environ.get(PURE_ENV, "") not in ("", "0"):
        return "forced pure"
    import json

    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return "stale"
    if len(present) != len(MODULES) or stamp != source_hashes(root):
        return "stale"
    return "compiled"


class _Chooser:
    """On the sys.meta_path ahead of the import system's own finders: at the first import of one
    of MODULES it asks `state`; where the compiled modules must not be used, it finds MODULES'
    sources from then on (the import system would otherwise prefer their extension modules), else
    it finds nothing and the compiled modules load."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.names = {f"{__package__}.{m}": m for m in MODULES}
        self.state: str | None = None
        """`state(root)` once asked (at the first import of one of MODULES)."""

    def find_spec(self, fullname: str, path=None, target=None):
        module = self.names.get(fullname)
        if module is None:
            return None
        if self.state is None:
            self.state = state(self.root)
        if self.state not in ("forced pure", "stale"):
            return None
        import importlib.util

        return importlib.util.spec_from_file_location(fullname, source_path(self.root, module))


def choose() -> None:
    """Called once, as `sim` is imported (before any module of MODULES): the choice between the
    compiled modules and their sources is made at the first import of one of them (`_Chooser`)."""
    sys.meta_path.insert(0, _Chooser(ROOT))


def in_use() -> bool:
    """Whether the compiled modules are the ones loaded (after `sim.engine` is imported)."""
    engine = sys.modules.get(f"{__package__}.engine")
    return engine is not None and not str(engine.__file__).endswith(".py")
