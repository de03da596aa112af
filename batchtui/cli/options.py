"""The flags of the headless commands: value types, and the engine and deployment flags.

Every engine and deployment flag is a row of the simulator's table of dials (`sim.dials.DIALS`:
its name, `vllm serve` spelling, type, range and help are written there once); `engine_flags()`
makes them argparse flags, read by the parser, by the step that turns flags into a scenario, by
the `vllm serve` line a plan prints and by the files calibrate and compare read. Messages name
the accepted range; argparse adds the flag.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from sim.dials import DialSpec, digits
from sim.errors import ConfigError

# -- value types -----------------------------------------------------------------------------------


def _whole(text: str, low: int, what: str, high: int | None = None) -> int:
    try:
        value = int(digits(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


from sim.limits import MAX_NUM_PROMPTS  # a run is held as arrays of this many requests at most


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    return _whole(text, 1, "a whole number >= 1")


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    return _whole(text, 0, "a whole number >= 0")


def port(text: str) -> int:
    """A server's --port: 0 to 65535, where 0 asks the system for any free port (the server says
    which port it got in its first line)."""
    return _whole(text, 0, "a port from 0 to 65535 (0 = any free one)", 65535)


def prompt_count(text: str) -> int:
    """--num-prompts: 1 to MAX_NUM_PROMPTS."""
    return _whole(text, 1, f"a whole number from 1 to {MAX_NUM_PROMPTS:,}", MAX_NUM_PROMPTS)


def seed(text: str) -> int:
    return _whole(text, 0, "a whole number from 0 to 2**63 - 1", 2**63 - 1)


def _float(text: str, what: str) -> float:
    try:
        value = float(digits(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    if math.isinf(value) and text.strip().lower().lstrip("+-") not in ("inf", "infinity"):
        # 1e400 is read as infinity: say so rather than take it for `inf`
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r} (too large for a number)")
    return value


def range_ratio(text: str) -> float:
    """--random-range-ratio: [0, 1), as vLLM."""
    value = _float(text, "a ratio in [0, 1)")
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a ratio in [0, 1), got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _float(text, "a number > 0")
    if not (0 < value < math.inf):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = _float(text, "a number >= 0")
    if not (0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def finite_float(text: str) -> float:
    """Any finite number (a sampling parameter, passed on as given)."""
    value = _float(text, "a number")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def integer(text: str) -> int:
    """Any whole number (a sampling parameter such as top_k, where -1 means all)."""
    try:
        return int(digits(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _above_zero(text: str, what: str) -> float:
    """A number > 0, `inf` included."""
    value = _float(text, what)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def rate(text: str) -> float:
    """Requests/s > 0, or `inf` (every request queued at once)."""
    return _above_zero(text, "requests/s > 0, or inf (all at once)")


def burstiness(text: str) -> float:
    """vllm bench serve's --burstiness: > 0 (1 = Poisson, inf = evenly spaced)."""
    return _above_zero(text, "a burstiness > 0 (1 = Poisson, below 1 burstier, inf = evenly spaced)")


def headroom(text: str) -> float:
    """--headroom: a percentage from 0 up to (not including) 100, as a fraction."""
    body = text.strip().rstrip("%")
    value = _float(body, "a percentage from 0 to 99, such as 20 or 20%")
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 up to (not including) 100, got {text!r}")
    return value / 100


def _comma_list(item, what: str):
    def parse(text: str) -> list:
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list such as {what}, got {text!r}")
        if len(parts) > 1000:
            raise argparse.ArgumentTypeError(f"expected at most 1000 values, got {len(parts)}")
        values = [item(p) for p in parts]  # each item raises with its own range
        return sorted(set(values))
    return parse


rate_list = _comma_list(rate, "2,4,8,inf")
positive_int_list = _comma_list(positive_int, "16,64,256")

PERCENTILE_METRICS = ("ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue")


def metric_list(text: str) -> list[str]:
    """--percentile-metrics: a comma-separated subset of vllm bench serve's metrics (the client's
    two are printed under --max-concurrency)."""
    parts = [p.strip() for p in text.split(",")]
    bad = [p for p in parts if p not in PERCENTILE_METRICS]
    if not text.strip() or bad:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(PERCENTILE_METRICS)}, got {text!r}")
    return list(dict.fromkeys(parts))


def percentile_list(text: str) -> list[float]:
    """--metric-percentiles: numbers in (0, 100], such as 50,90,99."""
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not 0 < value <= 100:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of percentiles in (0, 100], such as 50,90,99, got {text!r}")
        out.append(value)
    return list(dict.fromkeys(out))


GOODPUT_METRICS = ("ttft", "tpot", "e2el")


def goodput_pair(text: str) -> tuple[str, float]:
    """One --goodput service level objective, KEY:MS, as vllm bench serve takes it."""
    name, sep, value = text.partition(":")
    try:
        ms = float(value)
    except ValueError:
        ms = math.nan
    if not sep or name not in GOODPUT_METRICS or not 0 <= ms < math.inf:
        raise argparse.ArgumentTypeError(
            f"expected KEY:MS with KEY one of {', '.join(GOODPUT_METRICS)} and MS >= 0, such as ttft:200, "
            f"got {text!r}")
    return name, ms


# -- names as vLLM and nvidia-smi spell them --------------------------------------------------------

AUTO_GPU = "auto"


def resolve_gpu(name: str, profiles) -> str:
    """A GPU profile id from an id, a profile name or an nvidia-smi name (the profiles'
    `nvidia_smi_names`; case, spacing and punctuation ignored), or `auto`: the GPU nvidia-smi
    reports, said on stderr in one line. Unknown names pass through for the profiles' own
    error."""
    if name in profiles.gpus:
        return name
    if name.strip().lower() == AUTO_GPU:
        return detect_gpu(profiles).profile_id
    from sim.detect import match_profile

    return match_profile(name, profiles) or name


def detect_gpu(profiles):
    """`--gpu auto`: ask nvidia-smi, say what it found (or why the lesson's GPU runs instead)."""
    import sys

    from sim.detect import detect

    detection = detect(profiles)
    print(f"batchtui: {flagged('{gpu}')} auto: {detection.notice()}", file=sys.stderr)
    return detection


def resolve_model(name: str, profiles) -> str:
    """A model profile id from an id, a Hugging Face id or one of its aliases (case ignored)."""
    if name in profiles.models:
        return name
    wanted = name.lower()
    for model_id, model in profiles.models.items():
        names = (model_id, model.hf_id, *model.aliases)
        if any(n and n.lower() == wanted for n in names):
            return model_id
    return name


# -- the engine and deployment flags ----------------------------------------------------------------


@dataclass(frozen=True)
class EngineFlag:
    """One engine or deployment flag: a row of the simulator's table of dials (`sim.dials.DIALS`,
    where its name, vLLM spelling, type, range and help are written), as argparse takes it."""

    spec: DialSpec
    dial: str
    """The scenario key (deployment) or EngineConfig dial (engine) it sets."""
    where: str
    """"deployment" (a Scenario field) or "engine" (an EngineConfig dial)."""
    kwargs: dict = field(default_factory=dict)

    @property
    def flag(self) -> str:
        return self.spec.flag

    @property
    def vllm(self) -> bool:
        """A `vllm serve` flag (False: the simulator's own, such as --batching)."""
        return self.spec.vllm == "serve"

    def value(self, text: str):
        """The dial's value from a flag's text (a file's metadata, say), as the parser reads it;
        ArgumentTypeError naming what it takes."""
        if self.spec.type == "bool":
            try:
                return self.spec.parse(text)
            except ConfigError:
                raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}") from None
        choices = self.kwargs.get("choices")
        try:
            value = self.kwargs["type"](text.strip()) if "type" in self.kwargs else text.strip()
        except ValueError:  # int() of a choice dial
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(map(str, choices or ()))}, "
                                             f"got {text!r}") from None
        if choices is not None and value not in choices:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(map(str, choices))}, got {text!r}")
        return KV_CACHE_DTYPE_ALIASES.get(value, value) if self.dial == "kv_cache_dtype" else value


# Dials with flags of their own elsewhere (hardware and model by name, the seed among traffic).
OWN_FLAGS = ("gpu", "model", "seed")


def dial_type(spec: DialSpec):
    """An argparse type reading a dial's value as typed (`DialSpec.parse`: the flag's unit and
    spellings), refused with what the dial takes."""
    def convert(text: str):
        try:
            return spec.parse(text)
        except ConfigError:
            raise argparse.ArgumentTypeError(f"expected {flagged(spec.allowed)}, got {text!r}") from None
    convert.__name__ = spec.path  # argparse names the type in some messages
    return convert


def flagged(text: str) -> str:
    """Text naming dials as `{path}` (`sim.dials`), each spelled by its flag: how the command line
    names a dial in a message or a help line."""
    from sim.dials import flag_of, spelled

    return spelled(text, flag_of)


def _metavar(spec: DialSpec) -> str:
    if spec.flag_scale == 1000.0 and spec.unit == "s":
        return "MS"
    if spec.type == "text":
        return "JSON"
    return "N" if spec.type == "int" else "F"


def _kwargs(spec: DialSpec) -> dict:
    if spec.type == "bool":
        return dict(action=argparse.BooleanOptionalAction, default=None, help=spec.help)
    if spec.type == "choice":
        choices = tuple(_VLLM_SPELLING.get(c, c) for c in spec.choices)
        if spec.path in _CHOICE_METAVARS:  # long names: listed in the help, not the usage line
            return dict(choices=choices, metavar=_CHOICE_METAVARS[spec.path],
                        help=f"{spec.help}; one of {', '.join(choices)}")
        return dict(choices=choices, help=spec.help)
    if spec.choices and not spec.words:  # a short list: argparse's own "invalid choice" message
        return dict(type=int, choices=spec.choices, metavar=_metavar(spec), help=spec.help)
    return dict(type=dial_type(spec), metavar=_metavar(spec), help=spec.help)


_CHOICE_METAVARS = {"kv_cache_dtype": "DTYPE", "quantization": "FORMAT"}
# --kv-cache-dtype spellings vLLM takes for the profile's element types.
KV_CACHE_DTYPE_ALIASES = {"bfloat16": "bf16"}
_VLLM_SPELLING = {v: k for k, v in KV_CACHE_DTYPE_ALIASES.items()}


def engine_flags() -> tuple[EngineFlag, ...]:
    """Every engine and deployment dial that has a flag, in the table's order."""
    from sim.dials import DIALS
    from sim.scenario import DEPLOYMENT_KEYS

    out = []
    for spec in DIALS:
        head, _, rest = spec.path.partition(".")
        if not spec.flag or spec.path in OWN_FLAGS:
            continue
        if head == "engine":
            out.append(EngineFlag(spec, rest, "engine", _kwargs(spec)))
        elif spec.path in DEPLOYMENT_KEYS:
            out.append(EngineFlag(spec, spec.path, "deployment", _kwargs(spec)))
    return tuple(out)


def given_dials(args) -> dict:
    """Engine and deployment dials set on the command line (they win over files), by dial name."""
    out = {}
    for flag in engine_flags():
        value = getattr(args, flag.dial, None)
        if value is None:
            continue
        if flag.dial == "kv_cache_dtype":
            value = KV_CACHE_DTYPE_ALIASES.get(value, value)
        out[flag.dial] = value
    return out
