"""Which GPU this machine has: `nvidia-smi` asked once, its names matched to a GPU profile.

`detect()` runs `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`, reads every GPU
it lists (the first one counts; the count is reported) and maps the name to a profile through
the profiles' `nvidia_smi_names` (data, in `sim/data/profiles.toml` or a user's profile file).
When there is no `nvidia-smi`, no GPU, an unknown GPU or a failing command, it says so in one line
and falls back to the lesson's GPU (`DEFAULT_GPU_ID`), so a caller always has a profile to run.
It never raises for what the machine lacks; it does block for as long as `nvidia-smi` takes (at
most `timeout` seconds), so the app calls it off its first frame's path.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from .profiles import DEFAULT_GPU_ID, ProfileSet, folded, load_profiles

NVIDIA_SMI = "nvidia-smi"
QUERY = ("--query-gpu=name,memory.total", "--format=csv,noheader")
TIMEOUT_S = 10.0
MIB = 2**20

# Outcomes of a detection.
FOUND = "found"
"""A GPU whose name a profile knows."""
UNKNOWN = "unknown"
"""A GPU no profile names."""
NO_GPU = "no-gpu"
"""nvidia-smi ran but listed no GPU."""
NO_NVIDIA_SMI = "no-nvidia-smi"
"""No nvidia-smi on PATH."""
FAILED = "failed"
"""nvidia-smi failed (no driver, a timeout, output it does not normally print)."""


@dataclass(frozen=True)
class DetectedGpu:
    """One line of nvidia-smi's answer."""

    name: str
    memory_bytes: float | None
    """memory.total as nvidia-smi prints it (MiB), in bytes; None if it printed none."""


@dataclass(frozen=True)
class Detection:
    """What `--gpu auto` found, and the profile it chose."""

    outcome: str
    """FOUND, UNKNOWN, NO_GPU, NO_NVIDIA_SMI or FAILED."""
    profile_id: str
    """The GPU profile to run: the matched one, or DEFAULT_GPU_ID when nothing matched."""
    gpus: tuple[DetectedGpu, ...] = ()
    detail: str = ""
    """Why nothing matched (the command's error, the unknown name)."""
    profile_name: str = ""
    """The chosen profile's display name."""

    @property
    def found(self) -> bool:
        return self.outcome == FOUND

    @property
    def count(self) -> int:
        return len(self.gpus)

    def gpus_text(self) -> str:
        """"2 x NVIDIA A100-SXM4-40GB (40 GiB)", or the first GPU and how many others."""
        if not self.gpus:
            return "no GPU"
        first = self.gpus[0]
        memory = f" ({first.memory_bytes / 2**30:.0f} GiB)" if first.memory_bytes else ""
        same = all(g.name == first.name for g in self.gpus)
        if len(self.gpus) == 1:
            return f"{first.name}{memory}"
        if same:
            return f"{len(self.gpus)} x {first.name}{memory}"
        return f"{first.name}{memory} and {len(self.gpus) - 1} other GPU(s)"

    def notice(self) -> str:
        """One line saying what was found and what runs."""
        if self.outcome == FOUND:
            return f"found {self.gpus_text()}: simulating the {self.profile_name} profile ({self.profile_id})"
        fallback = f"simulating the lesson's {self.profile_name} instead"
        if self.outcome == UNKNOWN:
            return (f"found {self.gpus_text()}, which no GPU profile names; {fallback} (a profile file "
                    f"with a [gpus.<id>] table listing nvidia_smi_names = [\"{self.gpus[0].name}\"] "
                    "adds it: --profiles FILE)")
        if self.outcome == NO_NVIDIA_SMI:
            return f"no nvidia-smi on PATH, so no NVIDIA GPU to detect; {fallback}"
        if self.outcome == NO_GPU:
            return f"nvidia-smi lists no GPU; {fallback}"
        return f"nvidia-smi failed ({self.detail}); {fallback}"

    def short(self) -> str:
        """A few words for a header: the GPU and its count, or why the lesson's GPU runs."""
        if self.outcome == FOUND:
            return f"{self.count} x {self.profile_name}" if self.count > 1 else self.profile_name
        return {UNKNOWN: f"unknown GPU {self.gpus[0].name}" if self.gpus else "unknown GPU",
                NO_NVIDIA_SMI: "no GPU found", NO_GPU: "no GPU found",
                FAILED: "nvidia-smi failed"}[self.outcome]


def parse_query(text: str) -> list[DetectedGpu]:
    """nvidia-smi's CSV answer (`name, memory.total` a line, no header) as GPUs."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, _, memory = line.rpartition(",") if "," in line else (line, "", "")
        name, memory = name.strip(), memory.strip()
        if not name:
            continue
        gpus.append(DetectedGpu(name, _memory_bytes(memory)))
    return gpus


def _memory_bytes(text: str) -> float | None:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(MiB|GiB|KiB|B)?", text.strip())
    if not match:
        return None
    unit = {"GiB": 2**30, "MiB": MIB, "KiB": 2**10, "B": 1}.get(match.group(2) or "MiB", MIB)
    return float(match.group(1)) * unit


def match_profile(name: str, profiles: ProfileSet) -> str | None:
    """The GPU profile whose `nvidia_smi_names` (or id, display name or `aliases`) is `name`;
    None if none is."""
    wanted = folded(name)
    if not wanted:
        return None
    for gpu_id, gpu in profiles.gpus.items():
        if any(folded(n) == wanted for n in gpu.nvidia_smi_names):
            return gpu_id
    for gpu_id, gpu in profiles.gpus.items():
        if any(folded(n) == wanted for n in (gpu_id, gpu.name, *gpu.aliases)):
            return gpu_id
    return None


def query(command: str = NVIDIA_SMI, timeout: float = TIMEOUT_S) -> tuple[str, list[DetectedGpu], str]:
    """Ask nvidia-smi: (outcome, gpus, detail). The outcome is FOUND when it listed GPUs (whether
    a profile knows them is `detect`'s business)."""
    path = shutil.which(command)
    if path is None:
        return NO_NVIDIA_SMI, [], ""
    try:
        done = subprocess.run([path, *QUERY], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        return FAILED, [], f"no answer within {timeout:g} s"
    except OSError as exc:
        return FAILED, [], exc.strerror or str(exc)
    if done.returncode != 0:
        said = _first_line(done.stdout) or _first_line(done.stderr)
        why = f"exit status {done.returncode}" + (f": {said}" if said else "")
        return FAILED, [], why
    gpus = parse_query(done.stdout)
    if not gpus:
        said = _first_line(done.stderr)
        return (FAILED, [], said) if said else (NO_GPU, [], "")
    return FOUND, gpus, ""


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            line = " ".join(line.split())
            return line if len(line) <= 160 else line[:157] + "..."
    return ""


def detect(profiles: ProfileSet | None = None, *, command: str = NVIDIA_SMI,
           timeout: float = TIMEOUT_S) -> Detection:
    """The GPU this machine has, as a profile id; falls back to DEFAULT_GPU_ID with a reason."""
    profiles = profiles or load_profiles()
    outcome, gpus, detail = query(command, timeout)
    fallback = profiles.gpu(DEFAULT_GPU_ID) if DEFAULT_GPU_ID in profiles.gpus else next(iter(profiles.gpus.values()))
    if outcome != FOUND:
        return Detection(outcome, fallback.id, tuple(gpus), detail, fallback.name)
    gpu_id = match_profile(gpus[0].name, profiles)
    if gpu_id is None:
        return Detection(UNKNOWN, fallback.id, tuple(gpus), gpus[0].name, fallback.name)
    return Detection(FOUND, gpu_id, tuple(gpus), "", profiles.gpu(gpu_id).name)
