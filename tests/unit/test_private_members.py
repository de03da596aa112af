"""No module reaches into another's private members: outside the tests, `obj._name` is read or
written only where `obj` is `self` or `cls` (or `super()`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sim", "steps", "batchtui", "benchmarks")
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}  # public despite the underscore
STDLIB_API = {"os._exit"}  # documented functions of the standard library with an underscore


def private_reaches(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: expression` for every attribute access that reaches into a private member."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")) or name in NAMEDTUPLE_API:
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        if ast.unparse(node) in STDLIB_API:
            continue
        found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reaches_into_another_modules_private_members():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += private_reaches(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []


def test_the_walk_finds_a_reach_and_allows_self():
    source = ("class A:\n"
              "    def f(self, other):\n"
              "        self._x = other._y\n"
              "        return super()._z(), cls._w, point._replace(x=1), pool._held['a']\n")
    assert private_reaches(source, "a.py") == ["a.py:3: other._y", "a.py:4: pool._held"]
