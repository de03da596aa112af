"""One table of binding-limit words, tied to the limits the schedulers set."""

from __future__ import annotations

import ast
from pathlib import Path

import sim
from sim.reports import BINDING_LIMITS

from batchtui.limit_words import LIMIT_WORDS

SCHEDULERS = Path(sim.__file__).parent / "schedulers"


def limits_set_by(source: str) -> set[str]:
    """Every string a scheduler assigns as a binding limit: to `binding_limit`, or to the
    `stop_reason` it becomes, or compares a steady binding with."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            targets = [t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "") for t in node.targets]
            if any(t in ("binding_limit", "stop_reason") for t in targets) and isinstance(node.value, ast.Constant):
                if node.value.value:  # "": not stopped yet
                    found.add(node.value.value)
    return found


def test_the_words_name_every_limit_the_schedulers_set():
    assert set(LIMIT_WORDS) == set(BINDING_LIMITS)
    set_by = set().union(*(limits_set_by(p.read_text(encoding="utf-8")) for p in SCHEDULERS.glob("*.py")))
    assert set_by, "the walk found no binding limit in the schedulers"
    assert set_by <= set(BINDING_LIMITS), set_by - set(BINDING_LIMITS)
    assert set_by | {"none"} == set(BINDING_LIMITS)  # each limit is set somewhere


def test_the_iteration_views_reason_fits_its_width():
    assert all(len(w.why) <= 34 for w in LIMIT_WORDS.values())
