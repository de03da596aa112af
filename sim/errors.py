"""Errors a user can cause. Each message is a full sentence that names what was wrong, so the
command line and the app can show it without a traceback."""

from __future__ import annotations

import re

from .dial_paths import PATHS


class SimError(Exception):
    """Base class of every user-facing simulator error. A message may name a dial as `{path}`
    (its path in the table of dials, `sim.dials`, which declares its paths in `sim.dial_paths`:
    `{engine.max_model_len}`): `str()` spells it by its path, which is also the key a scenario
    file gives it; `spelled(spell)` lets each face spell it its own way (the command line its
    flag, the app its label). Braces around anything that is no dial's path are left as they are."""

    def spelled(self, spell=None) -> str:
        """The message with each dial it names spelled by `spell(path)` (by its path when `spell`
        is None or returns None)."""
        return spell_dials(str(self.args[0]) if self.args else "", spell)

    def __str__(self) -> str:
        return self.spelled()


class ConfigError(SimError, ValueError):
    """A dial has a value outside what vLLM (or the model) accepts.

    `dial` is the dial's path in the table of dials (`sim.dials`: `engine.max_num_seqs`,
    `workload.input.mean`, `gpu_memory_utilization`), or the name of a setting that is no dial (a
    trace case's key). `allowed` and `why` name any other dial as `{path}` (`"at least
    {engine.max_num_seqs} (1024)"`). The message names no dial in one fixed spelling: `str()`
    spells each by its path, which is also the key a scenario file gives it; `spelled` lets each
    face spell it its own way (the command line its flag, the app its label)."""

    def __init__(self, dial: str, value: object, allowed: str, why: str = "") -> None:
        self.dial = dial
        self.value = value
        self.allowed = allowed
        self.why = why
        super().__init__(self.spelled())

    def spelled(self, spell=None, head: str | None = None) -> str:
        """The message with each dial named by `spell(path)` (by its path when `spell` is None
        or returns None); `head` in place of "<dial> = <value>" (the command line's
        "argument --flag: value")."""
        name = _namer(spell)
        if head is None:
            head = f"{name(self.dial)} = {self.value!r}"
        msg = f"{head} is not allowed: {_named(self.allowed, name)}"
        if self.why:
            msg += f" ({_named(self.why, name)})"
        return msg + "."

    def __reduce__(self):  # made again from its parts in another process (a pool's worker)
        return (type(self), (self.dial, self.value, self.allowed, self.why))

    def dials(self) -> list[str]:
        """Every dial the message names: its own first, then those `allowed` and `why` refer to."""
        return [self.dial, *(m.group(1) for m in _REFERENCE.finditer(self.allowed + " " + self.why))]


_REFERENCE = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)*)\}")


def spell_dials(text: str, spell=None) -> str:
    """`text` with each `{path}` of a dial spelled by `spell(path)` (by its path when `spell` is
    None or gives None); braces around anything else are kept."""
    return _named(text, _namer(spell), dials_only=True)


def _namer(spell):
    """A dial's name: `spell(path)`, or its path when `spell` is None or gives None."""
    if spell is None:
        return lambda path: path
    return lambda path: spell(path) or path


def _named(text: str, name, dials_only: bool = False) -> str:
    """`text` with each `{path}` replaced by `name(path)`; with `dials_only`, only the paths of
    dials (others, such as a JSON key quoted in a message, keep their braces)."""
    if dials_only:
        return _REFERENCE.sub(lambda m: name(m.group(1)) if m.group(1) in PATHS else m.group(0), text)
    return _REFERENCE.sub(lambda m: name(m.group(1)), text)


class ProfileError(SimError, ValueError):
    """A GPU or model profile is unknown, malformed, or cannot be deployed as asked."""


class WorkloadError(SimError, ValueError):
    """A workload or trace file is malformed. Names the file and line when there is one."""

    def __init__(self, reason: str, path: str | None = None, line: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{reason}")


class RequestRejected(SimError, ValueError):
    """A request can never be served (prompt too long, or larger than the whole KV cache)."""

    def __init__(self, request_id: str, reason: str) -> None:
        self.request_id = request_id
        self.reason = reason
        """Why, naming any dial as `{path}` (see `SimError`; `spelled_reason` spells them)."""
        super().__init__(f"request {request_id} rejected: {reason}")

    def spelled_reason(self, spell=None) -> str:
        return spell_dials(self.reason, spell)

    def __reduce__(self):
        return (type(self), (self.request_id, self.reason))


class NotModelled(SimError):
    """Something real vLLM does that the simulator does not model yet (a case needing it is
    skipped, not failed)."""
