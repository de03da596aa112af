"""Scenario files the learner names (`--scenario FILE`, the playground's `o` and `w`): whatever a
file holds, the answer is a scenario that runs or one line saying why not, never a crash or a hang.

`sim.scenario.Scenario.load` knows the format, and `sim.userfiles` reads it (a folder, a
device, a gigabyte of text or nesting that overflows the parser is refused there); this module adds
what a file picked by hand in the app can do besides: be a FIFO that never ends (the app reads
regular files only: nobody is there to press Ctrl-C), or hold settings that pass the checks and
still cannot run.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

def read_scenario(path: Path):
    """The scenario in `path`, checked down to building its engine once. Raises `Unusable`."""
    from sim.errors import SimError
    from sim.scenario import Scenario

    try:
        info = path.stat()
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise Unusable(f"{path} cannot be read ({_reason(exc)})") from None
    if not stat.S_ISREG(info.st_mode):
        raise Unusable(f"{path} is {'a folder' if stat.S_ISDIR(info.st_mode) else 'not a regular file'}")
    try:
        scenario = Scenario.load(path)  # its errors name the file
    except SimError as exc:
        raise Unusable(str(exc)) from None
    except RecursionError:
        raise Unusable(f"{path} is nested too deeply to be a scenario") from None
    except Exception as exc:  # what the format's own checks did not expect
        raise Unusable(f"{path} cannot be used ({_short(exc)})") from None
    _regular_files_named(scenario, path)
    try:  # well formed, but settings the engine refuses together
        scenario.deployment()
        scenario.engine_config()
        scenario.workload.validate()
    except SimError as exc:
        raise Unusable(f"{path} cannot run ({exc})") from None
    except Exception as exc:  # what the checks did not expect
        raise Unusable(f"{path} cannot be used ({_short(exc)})") from None
    problem = _cannot_run(scenario)
    if problem:
        raise Unusable(f"{path} cannot run ({problem})")
    return scenario


def _regular_files_named(scenario, path: Path) -> None:
    """Refuse a file the scenario names (its profiles, a model's config, a trace, a dataset) that
    is a named pipe or a device: reading one waits for a writer that may never come, and the app
    would stop answering keys (one that does not exist is said by the checks that read it)."""
    for key, name in scenario.named_files().items():
        try:
            info = os.stat(name)
            if key == "hf_config_path" and stat.S_ISDIR(info.st_mode):  # a folder holding config.json
                info = os.stat(os.path.join(name, "config.json"))
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(info.st_mode):
            raise Unusable(f"{path}: {key} {name} is not a regular file (the app reads regular files only)")


class Unusable(Exception):
    """A scenario file that cannot be used; the message says why, in one line."""


def _cannot_run(scenario) -> str | None:
    """Build the scenario's engine once: settings the format accepts may still be refused there
    (a negative seed, a fractional number of prompts)."""
    from sim.engine import Engine
    from sim.errors import SimError

    try:
        Engine(scenario, live=True)
    except SimError as exc:
        return str(exc)
    except (ArithmeticError, LookupError, MemoryError, TypeError, ValueError) as exc:
        return _short(exc)
    return None


def save_scenario_file(scenario, path: Path) -> str:
    """Write the scenario as TOML; returns one line for the learner."""
    from steps.activities import save_scenario

    try:
        return save_scenario(scenario, path)
    except (OSError, ValueError) as exc:
        return f"Could not save to {path}: {_reason(exc)}."


def _short(exc: BaseException, limit: int = 100) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or _short(exc)
