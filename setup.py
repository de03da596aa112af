"""batchtui's build (the rest of the metadata is in pyproject.toml): the simulator's hot modules
(`sim.native.MODULES`) compiled with mypyc when a C compiler is there, the pure modules alone when
not (or with BATCHTUI_PURE_BUILD=1). The sources stay installed either way: they are what runs
when the compiled modules are not used (`sim/native.py`)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def _native():
    spec = importlib.util.spec_from_file_location("batchtui_native", HERE / "sim" / "native.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


native = _native()


class OptionalBuildExt(build_ext):
    """build_ext that installs the pure modules when compiling fails (no compiler, no headers),
    and writes the sources' hashes beside the compiled modules (`sim.native.STAMP`). It compiles
    the C files on every core: one compiler process a file, the extension modules side by side
    (setuptools compiles one file at a time, and the extensions one after another)."""

    def run(self) -> None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if jobs > 1 and not self.parallel:
            self.parallel = jobs
        try:
            super().run()
        except Exception as error:  # noqa: BLE001 - any failure to compile: the pure modules
            self._pure(error)
            return
        folder = (HERE if self.inplace else Path(self.build_lib)) / "sim"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / native.STAMP).write_text(json.dumps(native.source_hashes(HERE / "sim"), indent=1) + "\n")

    def build_extensions(self) -> None:
        with ThreadPoolExecutor(self.parallel or 1) as pool:
            serial = self.compiler.compile

            def compile_on_every_core(sources, *args, **kwargs):
                files = [pool.submit(serial, [source], *args, **kwargs) for source in sources]
                return [obj for file in files for obj in file.result()]

            self.compiler.compile = compile_on_every_core
            try:
                super().build_extensions()
            finally:
                self.compiler.compile = serial

    def _pure(self, error: Exception) -> None:
        print(f"batchtui: the simulator's core was not compiled ({error}); installing the pure "
              "modules", file=sys.stderr)
        for ext in self.extensions:  # (those built before the failure)
            Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
        self.extensions = []


BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}
"""The commands that build extension modules (not metadata's egg_info or dist_info: mypyc's
type check and C generation are not repeated for those)."""


def extensions() -> list:
    if os.environ.get("BATCHTUI_PURE_BUILD", "") not in ("", "0") or not BUILDS & set(sys.argv[1:]):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    paths = [str(native.source_path(Path("sim"), m)) for m in native.MODULES]
    try:
        # opt_level 1 (gcc -O1): measured with build_ext --inplace on an idle machine, the build took
        # 28 s against 39 s at 3, and 100,000 requests ran in 1.74 s against 1.84 s (opt_level 0:
        # 21 s, but 3.2 s to run). The compile is CI's and every install's cost; 3 buys nothing.
        # multi_file: a C file a module (and mypyc's runtime in files of its own), compiled side by
        # side (OptionalBuildExt), where one file of 168,000 lines took 37 s of one core.
        return mypycify([*native.MYPY_OPTIONS, *paths],
                        opt_level="1", group_name="sim", multi_file=True)
    except SystemExit as error:  # (mypyc exits on a type error in the modules)
        print(f"batchtui: mypyc refused the simulator's core ({error}); installing the pure modules",
              file=sys.stderr)
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
