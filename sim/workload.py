"""Traffic: when requests arrive and how long they are.

Every draw comes from the generator handed in (owned by the engine, seeded per scenario), so a
workload is reproducible. Times are seconds from the start of the run.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, WorkloadError

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where traffic is drawn, not at import: a scenario can be read, checked and
# shown (the tutorial's first frame) without paying for numpy's import.

ARRIVALS = ("poisson", "constant", "bursts", "all-at-once", "trace")
LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "lognormal", "mixed")


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One request as the workload produces it (before the engine owns it)."""

    request_id: str
    arrival_time: float
    prompt_len: int
    output_len: int
    priority: int = 0
    pool: str = "chat"


@dataclass(frozen=True, slots=True)
class LengthSpec:
    """A distribution of token counts.

    fixed: always `mean`; uniform: integers in [low, high]; lognormal: median `mean` with shape
    `sigma`, clipped to [low, high]; mixed: `mean` most of the time and `long_len` with
    probability `long_share` (occasional very long prompts, for instance).
    """

    dist: str = "fixed"
    mean: int = 512
    low: int = 1
    high: int = 0  # 0 = no upper clip (uniform needs one: defaults to 2 × mean − low)
    sigma: float = 0.5
    long_len: int = 16384
    long_share: float = 0.0

    def validate(self, name: str) -> None:
        if self.dist not in LENGTH_DISTRIBUTIONS:
            raise ConfigError(f"{name}_dist", self.dist, "one of " + ", ".join(LENGTH_DISTRIBUTIONS))
        if self.mean <= 0:
            raise ConfigError(f"{name}_len", self.mean, "a whole number of tokens > 0")
        if self.low <= 0:
            raise ConfigError(f"{name}_len_low", self.low, "a whole number of tokens > 0")
        if self.high and self.high < self.low:
            raise ConfigError(f"{name}_len_high", self.high, f"at least the low bound {self.low}")
        if self.sigma < 0:
            raise ConfigError(f"{name}_len_sigma", self.sigma, "a shape >= 0")
        if not 0.0 <= self.long_share <= 1.0:
            raise ConfigError(f"{name}_long_share", self.long_share, "a share between 0 and 1")
        if self.dist == "mixed" and self.long_len <= 0:
            raise ConfigError(f"{name}_long_len", self.long_len, "a whole number of tokens > 0")

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        import numpy as np

        if self.dist == "fixed":
            return np.full(n, self.mean, dtype=np.int64)
        if self.dist == "uniform":
            high = self.high or max(self.low, 2 * self.mean - self.low)
            return rng.integers(self.low, high + 1, size=n, dtype=np.int64)
        if self.dist == "lognormal":
            values = np.rint(self.mean * np.exp(self.sigma * rng.standard_normal(n))).astype(np.int64)
            return np.clip(values, self.low, self.high or np.iinfo(np.int64).max)
        # mixed
        longs = rng.random(n) < self.long_share
        return np.where(longs, self.long_len, self.mean).astype(np.int64)


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """The traffic of one scenario."""

    arrival: str = "poisson"
    request_rate: float = 4.0  # requests/s; math.inf queues everything at once
    num_prompts: int = 1000  # 0 = endless (the live app keeps generating)
    input: LengthSpec = field(default_factory=lambda: LengthSpec(mean=512))
    output: LengthSpec = field(default_factory=lambda: LengthSpec(mean=256))
    burst_size: int = 16  # bursts: requests per burst, bursts spaced to keep request_rate
    trace_path: str = ""
    pool: str = "chat"
    # Optional second pool mixed in (reading percentiles per pool): share of requests and lengths.
    batch_pool_share: float = 0.0
    batch_input: LengthSpec = field(default_factory=lambda: LengthSpec(mean=2048))
    batch_output: LengthSpec = field(default_factory=lambda: LengthSpec(mean=512))
    max_concurrency: int = 0  # the client keeps at most this many requests in flight (0 = no cap)

    def validate(self) -> None:
        if self.arrival not in ARRIVALS:
            raise ConfigError("arrival", self.arrival, "one of " + ", ".join(ARRIVALS))
        if not (self.request_rate > 0):  # also rejects NaN
            raise ConfigError("request_rate", self.request_rate, "requests/s > 0, or inf")
        if self.num_prompts < 0:
            raise ConfigError("num_prompts", self.num_prompts, "a whole number >= 0")
        if isinstance(self.max_concurrency, bool) or not isinstance(self.max_concurrency, int) \
                or self.max_concurrency < 0:
            raise ConfigError("max_concurrency", self.max_concurrency, "a whole number >= 0 (0: no cap)")
        if self.burst_size <= 0:
            raise ConfigError("burst_size", self.burst_size, "a whole number > 0")
        if self.arrival == "trace" and not self.trace_path:
            raise ConfigError("workload", self.trace_path, "a JSON Lines trace file for arrival 'trace'")
        if not 0.0 <= self.batch_pool_share <= 1.0:
            raise ConfigError("batch_pool_share", self.batch_pool_share, "a share between 0 and 1")
        self.input.validate("input")
        self.output.validate("output")
        if self.batch_pool_share > 0:
            self.batch_input.validate("batch_input")
            self.batch_output.validate("batch_output")

    def to_dict(self) -> dict:
        d = asdict(self)
        if math.isinf(self.request_rate):
            d["request_rate"] = "inf"
        return d

    @classmethod
    def from_dict(cls, data: dict) -> "WorkloadSpec":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError("workload", sorted(unknown)[0], "a known traffic setting: " + ", ".join(sorted(known)))
        kwargs = dict(data)
        for key in ("input", "output", "batch_input", "batch_output"):
            if key in kwargs and isinstance(kwargs[key], dict):
                lk = {f.name for f in fields(LengthSpec)}
                bad = set(kwargs[key]) - lk
                if bad:
                    raise ConfigError(key, sorted(bad)[0], "a length setting: " + ", ".join(sorted(lk)))
                kwargs[key] = LengthSpec(**kwargs[key])
        if "request_rate" in kwargs:
            kwargs["request_rate"] = float(kwargs["request_rate"])
        spec = cls(**kwargs)
        spec.validate()
        return spec

    def with_rate(self, rate: float) -> "WorkloadSpec":
        return replace(self, request_rate=rate)


def _arrival_times(spec: WorkloadSpec, rng: np.random.Generator, n: int, start: float) -> np.ndarray:
    """Arrival times after `start` (the previous arrival, or 0): one gap comes first, so a
    continuation of an endless workload keeps the same spacing."""
    import numpy as np

    rate = spec.request_rate
    if spec.arrival == "all-at-once" or math.isinf(rate):
        return np.full(n, start)
    if spec.arrival == "constant":
        return start + np.arange(1, n + 1) / rate
    if spec.arrival == "bursts":
        burst = np.arange(n) // spec.burst_size + 1
        return start + burst * (spec.burst_size / rate)
    # poisson: exponential gaps, the first one included (as vllm bench serve does)
    return start + np.cumsum(rng.exponential(1.0 / rate, size=n))


def generate(spec: WorkloadSpec, rng: np.random.Generator, n: int | None = None, start: float = 0.0,
             first_index: int = 0) -> list[RequestSpec]:
    """Draw `n` requests (default `spec.num_prompts`) arriving from `start` on."""
    import numpy as np

    if spec.arrival == "trace":
        return load_trace(spec.trace_path)
    n = spec.num_prompts if n is None else n
    if n <= 0:
        return []
    times = _arrival_times(spec, rng, n, start)
    prompt = spec.input.draw(rng, n)
    output = spec.output.draw(rng, n)
    pools = np.zeros(n, dtype=bool)
    if spec.batch_pool_share > 0:
        pools = rng.random(n) < spec.batch_pool_share
        prompt = np.where(pools, spec.batch_input.draw(rng, n), prompt)
        output = np.where(pools, spec.batch_output.draw(rng, n), output)
    return [
        RequestSpec(
            request_id=str(first_index + i),
            arrival_time=float(times[i]),
            prompt_len=int(prompt[i]),
            output_len=int(output[i]),
            pool="batch" if pools[i] else spec.pool,
        )
        for i in range(n)
    ]


def load_trace(path: str | Path) -> list[RequestSpec]:
    """Read a JSON Lines trace: one request a line, `{"arrival_time": s, "prompt_len": n,
    "output_len": n}`, optional `"priority"`, `"pool"` and `"request_id"`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"cannot read the trace file: {exc.strerror or exc}", str(path)) from None
    except UnicodeDecodeError:
        raise WorkloadError("the trace file is not UTF-8 text", str(path)) from None
    out: list[RequestSpec] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise WorkloadError(f"not valid JSON ({exc.msg})", str(path), lineno) from None
        if not isinstance(obj, dict):
            raise WorkloadError("each line must be a JSON object", str(path), lineno)
        for key in ("arrival_time", "prompt_len", "output_len"):
            if key not in obj:
                raise WorkloadError(f"missing \"{key}\"", str(path), lineno)
        t, pl, ol = obj["arrival_time"], obj["prompt_len"], obj["output_len"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise WorkloadError(f"arrival_time must be a number of seconds >= 0, got {t!r}", str(path), lineno)
        for key, v in (("prompt_len", pl), ("output_len", ol)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise WorkloadError(f"{key} must be a whole number of tokens > 0, got {v!r}", str(path), lineno)
        prio = obj.get("priority", 0)
        if isinstance(prio, bool) or not isinstance(prio, int):
            raise WorkloadError(f"priority must be a whole number, got {prio!r}", str(path), lineno)
        out.append(RequestSpec(
            request_id=str(obj.get("request_id", len(out))),
            arrival_time=float(t), prompt_len=pl, output_len=ol, priority=prio,
            pool=str(obj.get("pool", "chat")),
        ))
    if not out:
        raise WorkloadError("the trace holds no requests", str(path))
    out.sort(key=lambda r: r.arrival_time)  # stable: file order breaks ties
    return out
