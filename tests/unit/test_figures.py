"""Every number in every lesson file is a template filled from the simulator when the step loads
or a pinned figure checked here against a headless run of that step's scenario (steps/figures.py)."""

from __future__ import annotations

import pytest

from steps import figures, lesson_files, read_lesson
from steps.figures import CHOICES, FIGURES, NUMBER, PINNED, Lab, stray_numbers, wording
from tests import shared_steps


@pytest.fixture(scope="module")
def lesson():
    return shared_steps.by_number()


def _raw(number: int) -> tuple[dict, str]:
    return read_lesson(lesson_files()[number - 1])


def _lab(step, data) -> Lab:
    """The lab the step's templates were filled from (raw activity parameters included)."""
    return Lab(step.scenario, data["activity"], step.sweep, step.compare.scenario if step.compare else None,
               step.dials)


@pytest.mark.parametrize("number", range(1, 21))
def test_every_number_is_a_template_or_pinned(number):
    data, body = _raw(number)
    allowed = tuple(p.text for p in PINNED if p.step == number)
    checked_choices = any(c.step == number for c in CHOICES)  # test_numbered_choices_have_one_right_answer
    stray = [f"{where}: ...{bit}..." for where, text in wording(data, body)
             if not (checked_choices and where.startswith("choice"))
             for bit in stray_numbers(text, allowed)]
    assert not stray, f"step {number} states numbers neither templated nor pinned:\n" + "\n".join(stray)


@pytest.mark.parametrize("pin", PINNED, ids=lambda p: f"{p.step}:{p.text}")
def test_pinned_figures_hold_on_their_steps_scenario(lesson, pin):
    data, body = _raw(pin.step)
    assert any(pin.text in text for _, text in wording(data, body)), f"step {pin.step} no longer says {pin.text!r}"
    assert not pin.misses(_lab(lesson[pin.step], data))


@pytest.mark.parametrize("check", CHOICES, ids=lambda c: f"step {c.step}")
def test_numbered_choices_have_one_right_answer(lesson, check):
    step = lesson[check.step]
    measured = check.measure(_lab(step, _raw(check.step)[0]))
    answer = step.activity.get("answer")
    for i, choice in enumerate(step.activity.get("choices"), start=1):
        number = NUMBER.search(choice)
        if number is None:
            continue
        value = float(number.group().replace(",", ""))
        miss = abs(value - measured) / abs(measured)
        if i == answer:
            assert miss <= check.rel, (choice, measured)
        else:
            assert miss > 2 * check.rel, (choice, measured)


def test_every_figure_is_used_and_every_template_resolves(lesson):
    used = set()
    for number in range(1, 21):
        data, body = _raw(number)
        for _, text in wording(data, body):
            used.update(figures.names_in(text))
    from steps.activities import CHEAT_SHEET_MD

    used.update(figures.names_in(CHEAT_SHEET_MD))
    assert used <= set(FIGURES)
    assert set(FIGURES) - used == set(), "figures no lesson uses"


def test_an_unknown_template_names_the_file(tmp_path):
    import shutil

    import steps

    folder = tmp_path / "lessons"
    shutil.copytree(steps.lessons_dir(), folder)
    p = folder / "02-drill-single-stream-ceiling.md"
    text = p.read_text(encoding="utf-8")
    body = text.index("\n+++\n", 4) + len("\n+++\n")  # the lesson text's first word
    p.write_text(text[:body] + "{{no_such_figure}} " + text[body:], encoding="utf-8")
    with pytest.raises(steps.StepError, match="02-drill-single-stream-ceiling.md: the lesson text: unknown figure"):
        steps.load_step(p)
    p = folder / "13-capping-the-batch.md"
    p.write_text(p.read_text(encoding="utf-8").replace('run = { "engine.max_num_seqs" = 32 }', ""), encoding="utf-8")
    with pytest.raises(steps.StepError, match=r"13-capping-the-batch.md: .*\{\{run_seats\}\} cannot be computed "
                                              r"for this step \(the activity runs with no engine.max_num_seqs"):
        steps.load_step(p)


@pytest.mark.parametrize("number", [3, 5])
def test_quick_saturated_rates_read_as_the_full_measure(lesson, number):
    """Static batching is measured on fewer requests so the step opens at once: to the two
    significant figures a lesson states, it is what `sim.curves` measures on 2,000."""
    from sim.curves import saturated_point

    step = lesson[number]
    scenario = step.compare.scenario if step.compare is not None else step.scenario
    lab = Lab(scenario)
    assert lab.saturation_prompts < figures.SATURATION_PROMPTS
    full = saturated_point(lab.scenario, figures.SATURATION_PROMPTS).rate
    assert FIGURES["saturated_rate"].show(lab.saturated) == FIGURES["saturated_rate"].show(full)


def test_steps_14_and_15_state_the_same_sum_the_same_way(lesson):
    """Both divide the cache by a finished 8k + 1k sequence; a learner comparing them must read one
    sum with one rounding (they once said ≈ 48 and ≈ 49)."""
    import re

    sums = [re.search(r"(\d+k) ÷ (9,216) ≈\s+\**([\d.]+)", lesson[n].body_md) for n in (14, 15)]
    assert all(sums) and sums[0].groups() == sums[1].groups()
    cache = lesson[15].scenario.deployment().kv_cache_tokens
    assert sums[0].group(3) == figures.fmt(cache / 9216, 3)
