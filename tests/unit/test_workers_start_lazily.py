"""A worker is handed work to call, never a coroutine already made: a coroutine object built for a
worker that the app cancels before it starts (the learner quits, the step changes) is never awaited,
and Python prints "coroutine ... was never awaited" on the learner's terminal after the app exits."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def eager_workers(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: call` for every `run_worker(f(...))` whose work is a call made on the spot
    (`partial(f, ...)` is fine: it calls nothing until the worker starts)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "run_worker" and node.args):
            continue
        work = node.args[0]
        if isinstance(work, ast.Call) and not (isinstance(work.func, ast.Name) and work.func.id == "partial"):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_an_eager_worker():
    assert eager_workers("self.run_worker(self._go(1), group='x')") != []
    assert eager_workers("self.run_worker(partial(self._go, 1), group='x')") == []
    assert eager_workers("self.run_worker(self._go, thread=True)") == []


def test_no_worker_is_handed_a_coroutine_object():
    found = []
    for path in sorted((ROOT / "batchtui").rglob("*.py")):
        found += eager_workers(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []
