"""benchmarks/app_benchmark.py measures what its labels say: "animating" while the run runs and
"paused" while it is paused, whichever way the step opens (step 6 opens paused: a space pressed
"to pause" it started it, and the table read 0.0 KB/s animating, 14 KB/s paused)."""

from __future__ import annotations

import pytest

from benchmarks import app_benchmark


def test_the_status_line_gives_the_runs_state_and_a_lessons_words_do_not():
    lesson = b"\x1b[38;5;253;48;5;233mThe run starts paused: press \x1b[0m"
    paused = b"\x1b[38;5;245;48;5;234mpaused \xc2\xb7 t 0.00 s \xc2\xb7 iter 0\x1b[0m"
    running = b"\x1b[2;46H\x1b[38;5;71;48;5;234mrunning 1x \xc2\xb7 t 1.28 s \xc2\xb7 iter 156\x1b[0m"
    busy = b"running 12x (CPU busy) | t 130.5 s | iter 12,345"  # (--ascii's separator)
    assert app_benchmark.run_state(lesson) is None
    assert app_benchmark.run_state(lesson + paused) == "paused"
    assert app_benchmark.run_state(paused + running + lesson) == "running"
    assert app_benchmark.run_state(running + paused) == "paused"
    assert app_benchmark.run_state(busy) == "running"


@pytest.mark.heavy
def test_step_6_which_opens_paused_is_measured_animating_then_paused():
    command = [app_benchmark.installed_batchtui(), "--step", "6", "--fps", "10"]
    result = app_benchmark.run(command, 80, 24, duration=0.6, window=0.6)
    assert result["anim_bytes_per_s"] > 1000  # every frame redraws the status line's clock
    assert result["paused_bytes_per_s"] == 0  # not a byte while paused
    assert result["anim_state"] == "running" and result["paused_state"] is None


@pytest.mark.heavy
def test_two_installs_first_frames_are_compared_launch_by_launch():
    batchtui = [app_benchmark.installed_batchtui()]
    both = app_benchmark.compare_installs(batchtui, batchtui, launches=1)
    assert both["ours_cpu"] > 0 and both["theirs_cpu"] > 0 and both["ours_cpu_min"] <= both["ours_cpu"]
    assert both["cpu_ratio"] == both["ours_cpu"] / both["theirs_cpu"]
