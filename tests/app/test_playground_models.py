"""The playground's `l` (issue 39): a model on the GPUs it needs and speculative decoding, run from
the picker; a deployment that cannot run is said in one line and the run keeps its model; the
experts-and-drafts view shows what the simulator's iteration reports say, checked against the
same scenario run headless."""

from __future__ import annotations

import json
import re

from tests import shared_steps
from batchtui.screens.model_picker import ModelPickerScreen
from batchtui.widgets.experts_drafts import ExpertsDraftsView
from batchtui.widgets.notice_line import NoticeLine
from sim.deployments import model_choices
from sim.engine import Engine

SIZE = (80, 23)  # a tmux pane on an 80x24 terminal


def row_of(app, model_id: str, gpu: str = "h100-sxm") -> int:
    """The picker's row of `model_id` (the rows are the simulator's list, in its order)."""
    scenario = app.screen.sim.scenario.replace(gpu=gpu)
    return [c.model_id for c in model_choices(scenario)].index(model_id)


async def pick(pilot, model_id: str, method_presses: int = 0, gpu_presses: int = 0) -> None:
    """l, the GPU kind (→), the model's row from the top (↓), the method (s), Enter."""
    app = pilot.app
    gpus = ("h100-sxm", "h200", "a100-80gb", "l40s", "b200")
    row = row_of(app, model_id, gpus[gpu_presses])
    await pilot.press("l", *["right"] * gpu_presses, "home", *["down"] * row, *["s"] * method_presses, "enter")
    await pilot.pause()


def notice(app) -> str:
    return app.screen.query_one(NoticeLine).message


def one_line(app) -> bool:
    return len(notice(app)) <= SIZE[0] - 2


async def test_gpt_oss_with_eagle3_runs_and_the_view_shows_what_the_simulator_reports(make_app):
    app = make_app(shared_steps.lessons(), start_step=20)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        start = app.screen.sim.scenario
        await pick(pilot, "gpt-oss-120b", method_presses=1)  # s: none -> EAGLE-3
        scenario = app.screen.sim.scenario
        assert (scenario.model, scenario.tensor_parallel_size, scenario.gpu) == ("gpt-oss-120b", 1, "h100-sxm")
        assert json.loads(scenario.speculative_config) == {
            "method": "eagle3", "num_speculative_tokens": 3, "model": "nvidia/gpt-oss-120b-Eagle3"}
        assert scenario.workload == start.workload and scenario.engine == start.engine  # the rest as it was
        assert notice(app) == "gpt-oss 120B on 1 × H100 SXM 80 GB, EAGLE-3, K = 3." and one_line(app)
        await pilot.press("z")  # every view in sight
        app.screen.sim.fast_forward(2.0)
        await pilot.press(*["full_stop"] * 3)
        view = next(v for v in app.screen.query(ExpertsDraftsView) if v.display)
        shown = view.render().plain
        ran = app.screen.sim.snapshot()

        # The same scenario, headless: the same iteration, its counters before and after it.
        engine = Engine(scenario, live=True)
        while engine.iteration < ran.iteration - 1:
            engine.step()
        before = engine.spec_decode_stats()
        report = engine.step()
        after = engine.spec_decode_stats()
        assert report.index == ran.iteration and report.start_time == ran.last.start_time
        experts = re.search(r"experts read (\d+) of (\d+) a layer", shown)
        assert experts, shown
        assert int(experts[1]) == round(report.cost.experts_read) and int(experts[2]) == 128
        assert 4 <= report.cost.experts_read <= 128  # top 4 of 128, a layer
        drafts = re.search(r"accepted (\d+) of (\d+) drafts", shown)
        assert drafts, shown
        accepted = after["spec_decode_accepted_tokens"] - before["spec_decode_accepted_tokens"]
        drafted = after["spec_decode_draft_tokens"] - before["spec_decode_draft_tokens"]
        assert (int(drafts[1]), int(drafts[2])) == (accepted, drafted) and drafted > 0
        mean = re.search(r"mean(?: length)? (\d+\.\d+)", shown)
        assert mean and float(mean[1]) == round(after["spec_decode_acceptance_length"], 2), shown


async def test_a_model_that_does_not_fit_is_said_in_one_line_and_the_run_keeps_its_model(make_app):
    app = make_app(shared_steps.lessons(), start_step=20)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        run = app.screen.sim
        await pick(pilot, "deepseek-v3")  # 671 GB: more than eight H100s hold
        assert app.screen.sim is run and run.scenario.model == "llama-3.1-8b"
        assert notice(app) == "Kept Llama 3.1 8B: DeepSeek-V3 does not fit on 8 × H100 SXM 80 GB." and one_line(app)
        await pick(pilot, "gpt-oss-120b", method_presses=3)  # s s s: MTP, which gpt-oss has not
        assert app.screen.sim is run and run.scenario.model == "llama-3.1-8b"
        assert notice(app) == "Kept Llama 3.1 8B: gpt-oss 120B has no MTP layers." and one_line(app)
        await pilot.press("l", "escape")  # kept, without a word
        assert app.screen.sim is run and app.screen.is_active


async def test_deepseek_v3_runs_on_eight_h200s_with_its_mtp_layer(make_app):
    app = make_app(shared_steps.lessons(), start_step=20)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pick(pilot, "deepseek-v3", method_presses=3, gpu_presses=1)  # → H200; s s s: MTP
        scenario = app.screen.sim.scenario
        assert (scenario.model, scenario.gpu, scenario.tensor_parallel_size) == ("deepseek-v3", "h200", 8)
        assert json.loads(scenario.speculative_config)["method"] == "mtp"
        app.screen.sim.fast_forward(1.0)
        await pilot.press("z")
        shown = next(v for v in app.screen.query(ExpertsDraftsView) if v.display).render().plain
        assert re.search(r"experts read [\d.]+ of 256 a layer", shown), shown
        assert "drafts" in shown


async def test_l_does_nothing_outside_the_playground(make_app):
    app = make_app(shared_steps.lessons(), start_step=19)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        run = app.screen.sim
        await pilot.press("l")
        assert not isinstance(app.screen, ModelPickerScreen) and app.screen.sim is run
