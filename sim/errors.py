"""Errors a user can cause. Each message is a full sentence that names what was wrong, so the
command line and the app can show it without a traceback."""

from __future__ import annotations


class SimError(Exception):
    """Base class of every user-facing simulator error."""


class ConfigError(SimError, ValueError):
    """A dial has a value outside what vLLM (or the model) accepts."""

    def __init__(self, dial: str, value: object, allowed: str, why: str = "") -> None:
        self.dial = dial
        self.value = value
        self.allowed = allowed
        msg = f"{dial} = {value!r} is not allowed: {allowed}"
        if why:
            msg += f" ({why})"
        super().__init__(msg + ".")


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
        super().__init__(f"request {request_id} rejected: {reason}")


class NotModelled(SimError):
    """Something real vLLM does that the simulator does not model yet (a case needing it is
    skipped, not failed)."""
