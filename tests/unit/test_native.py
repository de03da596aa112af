"""The compiled core (sim.native; mypyc, setup.py) against the pure modules it is compiled from.

The pure modules are the reference: drawn scenarios (test_engine_agrees' strategy: every policy,
async scheduling, prefix caching, speculative decoding, API servers, tight caches, traces) run
here with whatever core is in use, and in one subprocess that loads the pure modules
(BATCHTUI_PURE=1); every request's record, the summary, the pools, the clock, the iteration
count and the last iteration's report must be the same to the float, types included. Where no
compiled core is built (no C compiler at install, BATCHTUI_PURE_BUILD=1) that comparison is
skipped; the choice between the two is tested on a folder of its own.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib.machinery
import json
import os
import pickle
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings

from sim import native
from sim.engine import Engine
from sim.errors import ConfigError, RequestRejected
from tests.examples import examples
from tests.unit.test_engine_agrees import _same, endless, outcome, scenarios

ROOT = Path(__file__).resolve().parents[2]


def plain(scenario, stepped: bool, until: float | None = None) -> dict:
    """A run of `scenario` (whole, or one step() at a time; or, `until` given, a live engine run
    to that time), as plain values (no class of `sim`): what `outcome` gives (and a live engine's
    queue), or the refusal (a scenario the engine refuses, a request it rejects)."""
    try:
        engine = Engine(scenario) if until is None else Engine(scenario, live=True, keep_records=True)
        if until is not None:
            engine.run(until_time=until)
        elif stepped:
            while engine.step() is not None:
                pass
        else:
            engine.run()
    except (ConfigError, RequestRejected) as error:
        return {"refused": f"{type(error).__name__}: {error}"}
    got = outcome(engine)
    if until is not None:
        got["queue"] = [(r.request_id, r.arrival_time, r.prompt_len, r.output_len)
                        for r in engine.scheduler.waiting]
    got["failed"] = [dataclasses.astuple(f) for f in got["failed"]]
    return got


SERVER = """
import base64, pickle, sys
from sim import native
from tests.unit.test_native import plain
assert native.state(native.ROOT) != "compiled"
for line in sys.stdin:
    scenario, stepped, until = pickle.loads(base64.b64decode(line))
    result = plain(scenario, stepped, until)
    sys.stdout.write(base64.b64encode(pickle.dumps(result)).decode() + "\\n")
    sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def pure():
    """A process running the pure modules: send (scenario, stepped), get `plain`'s answer."""
    child = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT, env={**os.environ, native.PURE_ENV: "1", "PYTHONPATH": str(ROOT)})

    def ask(scenario, stepped: bool, until: float | None = None) -> dict:
        child.stdin.write(base64.b64encode(pickle.dumps((scenario, stepped, until))).decode() + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        assert line, "the pure process ended"
        return pickle.loads(base64.b64decode(line))

    yield ask
    child.stdin.close()
    child.wait(timeout=30)


needs_compiled = pytest.mark.skipif(native.state(native.ROOT) != "compiled",
                                    reason=f"the compiled core is not in use ({native.state(native.ROOT)})")


@needs_compiled
def test_the_compiled_modules_are_loaded():
    assert native.in_use()
    for module in native.MODULES:
        assert not sys.modules[f"sim.{module}"].__file__.endswith(".py"), module


@needs_compiled
@settings(max_examples=examples(12), deadline=None)
@given(scenarios())
def test_compiled_core_gives_the_pure_modules_results(pure, drawn):
    scenario, stepped = drawn
    ours = plain(scenario, stepped)
    theirs = pure(scenario, stepped)
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert _same(ours[key], theirs[key]), key


@needs_compiled
@settings(max_examples=examples(6), deadline=None)
@given(scenarios())
def test_compiled_arrivals_give_the_pure_modules_endless_traffic(pure, drawn):
    """A live engine on endless traffic (drawn a chunk at a time, the waiting requests held as
    lazy runs: `sim.arrivals`' Chunk and LazyRun) gives the pure modules' results."""
    scenario = endless(drawn[0])
    ours = plain(scenario, False, until=20.0)
    theirs = pure(scenario, False, until=20.0)
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert _same(ours[key], theirs[key]), key


@needs_compiled
def test_a_drafter_with_q_k_norms_prices_the_same_compiled(pure):
    """A draft model whose layers normalise queries and keys per head (Qwen3-8B for Qwen3-32B on an
    H200; the drawn scenarios' draft model is a Llama) gives the pure modules' results."""
    from sim.scenario import Scenario
    from sim.workload import LengthSpec, WorkloadSpec

    spec = json.dumps({"method": "draft_model", "model": "qwen3-8b", "num_speculative_tokens": 3,
                       "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5})
    workload = WorkloadSpec(request_rate=8.0, num_prompts=12, input=LengthSpec("fixed", 300),
                            output=LengthSpec("fixed", 40))
    scenario = Scenario(gpu="h200", model="qwen3-32b", workload=workload, speculative_config=spec, seed=3)
    for stepped in (False, True):
        ours, theirs = plain(scenario, stepped), pure(scenario, stepped)
        assert "refused" not in ours and ours.keys() == theirs.keys()
        for key in theirs:
            assert _same(ours[key], theirs[key]), key


def test_the_core_is_compiled_where_it_can_be():
    """A C compiler and Python's headers are here: the install compiled the core (a type error
    in one of the modules makes the build install the pure modules, saying so only in its log)."""
    compiler = shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0])
    headers = Path(sysconfig.get_paths()["include"], "Python.h").exists()
    if not (compiler and headers) or os.environ.get("BATCHTUI_PURE_BUILD", "") not in ("", "0"):
        pytest.skip("no C compiler or no Python headers here, or BATCHTUI_PURE_BUILD set")
    assert native.state(native.ROOT) != "none", \
        "nothing compiled: `pip install -e .` compiles the core (its log says why it did not)"


def test_pure_modules_forced_by_the_environment():
    done = subprocess.run([sys.executable, "-c", "import sim.engine, sim.native as n; print(n.in_use(), "
                           "sim.engine.__file__)"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, native.PURE_ENV: "1", "PYTHONPATH": str(ROOT)}, check=True)
    assert done.stdout.split()[0] == "False" and done.stdout.split()[1].endswith("engine.py")


def _package(tmp_path: Path, compiled: list[str], stamped: bool) -> Path:
    """A folder laid out as `sim` is: every module's source, an extension module beside those of
    `compiled`, and the build's stamp if `stamped`."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for module in native.MODULES:
        source = native.source_path(tmp_path, module)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"# {module}\n")
        if module in compiled:
            source.with_suffix(suffix).write_bytes(b"")
    if stamped:
        hashes = {m: hashlib.sha256(f"# {m}\n".encode()).hexdigest() for m in native.MODULES}
        (tmp_path / native.STAMP).write_text(json.dumps(hashes))
    return tmp_path


def test_the_compiled_modules_are_used_only_as_built(tmp_path):
    every = list(native.MODULES)
    assert native.state(_package(tmp_path / "none", [], stamped=False), {}) == "none"
    built = _package(tmp_path / "built", every, stamped=True)
    assert native.state(built, {}) == "compiled"
    assert native.state(built, {native.PURE_ENV: "1"}) == "forced pure"
    assert native.state(built, {native.PURE_ENV: "0"}) == "compiled"
    # A partial build, a missing stamp, an edited source: the sources, every one of them.
    assert native.state(_package(tmp_path / "partial", every[1:], stamped=True), {}) == "stale"
    assert native.state(_package(tmp_path / "unstamped", every, stamped=False), {}) == "stale"
    native.source_path(built, "engine").write_text("# engine, edited\n")
    assert native.state(built, {}) == "stale"


def test_the_choice_waits_for_the_first_of_the_modules():
    """`import sim` (the tutorial's first frame) neither hashes the sources nor loads hashlib
    (OpenSSL): the choice is made when the first of MODULES is imported, and it is the same."""
    code = ("import sys, sim\nfrom sim import native\nassert 'hashlib' not in sys.modules\n"
            "import sim.engine\nprint(native.in_use(), native.state(native.ROOT), sep=',')")
    for environ in ({}, {native.PURE_ENV: "1"}):
        env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                              env={**env, **environ, "PYTHONPATH": str(ROOT)}, timeout=60)
        assert done.returncode == 0, done.stderr
        in_use, state = done.stdout.strip().split(",")
        assert in_use == str(state == "compiled")
