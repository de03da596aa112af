"""`batchtui --gpu auto`: the app asks nvidia-smi after its first frame, names the GPU in the
header, starts the cheat sheet and playground on it and offers it in step 2's drill."""

from __future__ import annotations

import stat

import pytest

import steps
from batchtui.widgets.activities.drill import DrillView
from batchtui.widgets.step_header import StepHeader


def fake_nvidia_smi(tmp_path, monkeypatch, text: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' '{text}'\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))


async def settle(app, pilot) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("number", [19, 20])
async def test_cheat_sheet_and_playground_start_on_the_learners_gpu(make_app, tmp_path, monkeypatch, number):
    fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 PCIe, 81559 MiB")
    app = make_app(steps.open_lessons(), start_step=number, gpu="auto")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.learner_gpu.profile_id == "h100-pcie"
        assert app.screen.step.scenario.gpu == "h100-pcie"
        header = app.screen.query_one(StepHeader)
        assert header.gpu == "H100 PCIe 80 GB" and "H100 PCIe 80 GB" in str(header.render())
        notice = str(app.screen.query_one("#notice").render())
        assert "found NVIDIA H100 PCIe" in notice
        gpu_dial = next(d for d in app.screen.step.dials if d.name == "gpu")
        assert gpu_dial.choices[0] == "h100-pcie"


async def test_a_step_that_cannot_run_on_the_learners_gpu_keeps_the_lessons_and_says_why(make_app, tmp_path,
                                                                                             monkeypatch):
    """On an L4 (or an A10), `--gpu auto` stopped the app on an unexpected error at step 19: the
    cheat sheet's Llama 3.1 8B keeps its 131,072-token context, which vLLM refuses where the KV
    cache holds 17,856 tokens. The sheet now stays on the lesson's H100, the notice says why, and
    the GPU dial offers the L4 first; the playground (16,384 tokens) runs on the L4."""
    fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA L4, 23034 MiB")
    app = make_app(steps.open_lessons(), start_step=19, gpu="auto")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.learner_gpu.profile_id == "l4" and app.screen.step.scenario.gpu == "h100-sxm"
        assert next(d for d in app.screen.step.dials if d.name == "gpu").choices[0] == "l4"
        notice = str(app.screen.query_one("#notice").render())
        assert "step 19 keeps the lesson's h100-sxm" in notice and "step 20" not in notice, notice
        assert ".)." not in app.learner_gpu.notice, app.learner_gpu.notice  # (its reason, one full stop)
        assert app.steps[19].scenario.gpu == "l4"


async def test_step_2_asks_the_learners_gpu_first(make_app, tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA L4, 23034 MiB")
    app = make_app(steps.open_lessons(), start_step=2, gpu="auto")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        drill = app.screen.query_one(DrillView)
        assert "**your GPU**, an L4 24 GB" in drill.question.prompt_md
        # the other lessons keep the H100 their text works through
        assert app.steps[0].scenario.gpu == "h100-sxm"


async def test_no_gpu_keeps_the_lessons_h100_and_says_why(make_app, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    app = make_app(steps.open_lessons(), start_step=19, gpu="auto")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.screen.step.scenario.gpu == "h100-sxm"
        assert app.screen.query_one(StepHeader).gpu == "no GPU found"
        assert "no nvidia-smi on PATH" in str(app.screen.query_one("#notice").render())


async def test_without_gpu_nothing_is_asked(make_app, tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, "NVIDIA H100 PCIe, 81559 MiB")
    app = make_app(steps.open_lessons(), start_step=19)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.learner_gpu is None and app.screen.query_one(StepHeader).gpu == ""
        assert app.screen.step.scenario.gpu == "h100-sxm"
