"""Every term the lessons lean on is defined where a learner first meets it: the glossary
(`steps/glossary.toml`, shown by the `d` key) names the step that teaches each, that step
defines it at its first use, and no step before it uses the term without a definition in place.
This reads every lesson's words from its data, hints and every wrong choice's line included;
test_one_value.py checks the same on each step's screen as drawn (verdicts, goal lines)."""

from __future__ import annotations

import re

import pytest

from steps import activities, glossary
from tests import shared_steps


def words_of(step) -> str:
    """A step's words in the order a learner meets them: text, hints, the activity's question,
    choices, each wrong choice's line and explanation, a challenge's goal, the reveal."""
    params = step.activity.params
    parts = [step.body_md, *step.hints]
    for key in ("question", "choices", "feedback", "explain"):
        value = params.get(key)
        parts += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    built = activities.build(step)
    if isinstance(built, activities.BreakIt):
        parts.append(built.goal_md)
    parts.append(step.reveal_md)
    return "\n\n".join(parts)


@pytest.fixture(scope="module")
def texts():
    return {step.number: words_of(step) for step in shared_steps.lessons()}


def test_each_term_is_defined_where_its_step_first_uses_it_and_never_used_undefined_before(texts):
    assert glossary.problems(texts) == []


def test_the_glossary_is_read_and_in_lesson_order():
    terms = glossary.terms()
    assert len(terms) >= 30 and [t.step for t in terms] == sorted(t.step for t in terms)
    names = {t.name for t in terms}
    assert {"TTFT", "TPOT", "p50", "p99", "gap (ITL)", "KV cache", "SLO"} <= names


def test_the_check_fails_on_a_term_used_before_its_step_or_taught_without_a_definition(texts):
    """Step 12 saying "TPOT" is fine (step 1 taught it); step 3 saying "knee" before step 7 is
    not; step 8 that no longer defines the saturated rate is caught; a definition in place
    (step 13's replicas) passes."""
    broken = dict(texts)
    broken[3] = texts[3] + "\n\nPast the knee it gets worse."
    broken[8] = texts[8].replace("what it\ncompletes when never short of work", "a fine thing")
    found = glossary.problems(broken)
    assert any("step 3 uses 'knee'" in p for p in found), found
    assert any("step 8 teaches 'saturated rate'" in p for p in found), found
    assert not any("'replica'" in p for p in found)
    assert glossary.problems({12: "TPOT again"}) == []  # (step 12 teaches no term of its own)


def test_a_malformed_glossary_names_the_problem(tmp_path):
    from steps import StepError

    path = tmp_path / "glossary.toml"
    path.write_text('[[term]]\nname = "knee"\nmeaning = "where"\nstep = 7\nuses = "k"\ndefined = "("\n')
    with pytest.raises(StepError, match="meaning must be one line"):
        glossary.read(path)
    path.write_text('[[term]]\nname = "knee"\nmeaning = "where a curve bends"\nstep = 7\nuses = "k"\ndefined = "("\n')
    with pytest.raises(StepError, match="regular expressions"):
        glossary.read(path)
    path.write_text('[[term]]\nname = "knee"\nmeaning = "where a curve bends"\nstep = 21\nuses = "k"\ndefined = "b"\n')
    with pytest.raises(StepError, match="step must be"):
        glossary.read(path)
