"""One settings object for the whole app, built from the command line (or by a test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .clock import Clock, RealClock
from .glyphs import Glyphs, glyphs_for


@dataclass(frozen=True, slots=True)
class AppSettings:
    ascii_only: bool = False
    """Draw with plain ASCII only (no block, box or arrow glyphs)."""
    fps: int = 10
    """Frames per second while the simulation runs."""
    start_step: int | None = None
    """`--step N`: open this step instead of the saved one."""
    reset_progress: bool = False
    scenario_path: Path | None = None
    """`--scenario FILE`: open the playground on this scenario."""
    clock: Clock = field(default_factory=RealClock)
    """What paces the simulation and runs slow work beside it (tests inject a manual one)."""
    gpu: str | None = None
    """`--gpu NAME` or `--gpu auto`: the learner's GPU (the cheat sheet and playground start on
    it, step 2's drill offers it, the header names it); found after the first frame."""
    profiles_path: str | None = None
    """`--profiles FILE`: extra or calibrated GPU and model profiles."""
    state_dir: Path | None = None
    """Where progress lives; None means the XDG default."""
    cursor_blink: bool = True
    """Text boxes blink their cursor; tests turn it off so screenshots are stable."""
    served: bool = False
    """Running in a web page (textual-serve): file prompts stay in the state folder."""
    server_url: str | None = None
    """`--server URL`: the playground drives this server with its traffic from the start."""

    @property
    def glyphs(self) -> Glyphs:
        return glyphs_for(self.ascii_only)
