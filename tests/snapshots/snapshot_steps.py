"""Helpers the snapshot tests import (a conftest is not importable by name: tests/app has one too)."""


def advance(seconds: float):
    """A `run_before` that runs the live simulation forward by `seconds` (simulated)."""

    async def run_before(pilot) -> None:
        await pilot.pause()
        sim = pilot.app.screen.sim
        if sim is not None and seconds:
            sim.fast_forward(seconds)
        await pilot.pause()

    return run_before
