"""A scenario: everything one simulated run needs — hardware, model, dials, traffic, seed.

Scenarios round-trip through plain dicts (and so TOML files): lessons define theirs as data and
the playground saves and loads them. Dials left unset take vLLM's defaults for the GPU.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .config import EngineConfig, vllm_defaults
from .errors import ConfigError, SimError
from .workload import WorkloadSpec

DEPLOYMENT_KEYS = ("gpu", "model", "tensor_parallel_size", "kv_cache_dtype", "gpu_memory_utilization",
                   "block_size", "num_gpu_blocks_override", "quantization", "kv_cache_memory_bytes", "enforce_eager",
                   "speculative_config", "enable_expert_parallel")
# The settings that name a file. In a scenario file a relative one is relative to the file's own
# folder, as in the profile files' `hf_config` (`Scenario.load`, `save`); in memory, to the
# current directory, as a flag's.
FILE_KEYS = ("profiles_path", "hf_config_path", "workload.trace_path", "workload.dataset_path")
# Deployment keys a scenario leaves out of its dict while unset (files saved before them read the same).
_UNSET_LEFT_OUT = ("num_gpu_blocks_override", "quantization", "kv_cache_memory_bytes", "enforce_eager",
                   "speculative_config", "enable_expert_parallel")


@dataclass(frozen=True)
class Scenario:
    """One run. `engine` holds EngineConfig dials that differ from vLLM's defaults."""

    gpu: str = "h100-sxm"
    model: str = "llama-3.1-8b"
    tensor_parallel_size: int = 1
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = 0.92
    block_size: int = 16
    num_gpu_blocks_override: int | None = None
    quantization: str | None = None  # --quantization: the weight format (None: the model's bf16)
    kv_cache_memory_bytes: int | None = None  # --kv-cache-memory-bytes: the KV cache per GPU
    enforce_eager: bool | None = None  # --enforce-eager: no CUDA graphs
    # --speculative-config: vLLM's JSON ("" or None: no speculative decoding; `sim.speculative`)
    speculative_config: str | None = None
    enable_expert_parallel: bool | None = None  # --enable-expert-parallel: whole experts on each GPU
    engine: dict = field(default_factory=dict)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    seed: int = 0
    offline: bool = False  # take vLLM's offline (LLM class) defaults instead of `vllm serve`'s
    profiles_path: str = ""  # a user TOML of extra or overriding GPU and model profiles
    hf_config_path: str = ""  # a Hugging Face config.json: `model` is the model it describes
    # The engine core's host costs in seconds where the run states its engine's own (a replayed
    # result of an older vLLM build: `overhead-ms`, `overhead-per-seq-us` entries), winning over
    # the profiles' in its deployment (`ProfileSet.with_host_costs`); None: the profiles'.
    overhead_s: float | None = None
    overhead_per_seq_s: float | None = None
    # The small kernels a layer of a per-head query-and-key-norm model (Qwen3) runs beyond a Llama
    # layer in the run's vLLM build, where it states its own (a replayed result of a build before
    # vLLM PR 26682: a `qk-norm-kernels` entry); None: today's (`Deployment.qk_norm_kernels`).
    qk_norm_kernels: int | None = None

    def with_engine(self, **dials) -> "Scenario":
        merged = dict(self.engine)
        merged.update(dials)
        return replace(self, engine=merged)

    def with_workload(self, **changes) -> "Scenario":
        return replace(self, workload=replace(self.workload, **changes))

    def replace(self, **changes) -> "Scenario":
        return replace(self, **changes)

    # -- resolution
    def profiles(self):
        from .profiles import load_profiles
        profiles = load_profiles(self.profiles_path or None)
        if self.hf_config_path:
            from . import hf_config
            profiles = profiles.with_config_model(self.model, hf_config.read(self.hf_config_path),
                                                  self.hf_config_path)
        return profiles

    def speculative(self):
        """The checked `--speculative-config` (a `sim.speculative.SpeculativeConfig`), or None."""
        if self.speculative_config in (None, ""):  # none set (not imported for it: a step's first frame)
            return None
        from .speculative import parse

        return parse(self.speculative_config)

    def deployment(self, profiles=None):
        profiles = profiles or self.profiles()
        if self.overhead_s is not None or self.overhead_per_seq_s is not None:
            # the run's own engine's host costs win over any profiles' (a fit's candidates too)
            profiles = profiles.with_host_costs(self.model, overhead_s=self.overhead_s,
                                                 overhead_per_seq_s=self.overhead_per_seq_s)
        draft = None
        spec = self.speculative()
        if spec is not None:
            from .profiles import KV_CACHE_DTYPE_BYTES
            from .speculative import draft_shape

            kv_bytes = KV_CACHE_DTYPE_BYTES.get(self.kv_cache_dtype, 2)
            draft = draft_shape(spec, profiles.model(self.model), profiles, self.tensor_parallel_size, kv_bytes)
        return profiles.deployment(
            self.gpu, self.model,
            tensor_parallel_size=self.tensor_parallel_size,
            kv_cache_dtype=self.kv_cache_dtype,
            gpu_memory_utilization=self.gpu_memory_utilization,
            block_size=self.block_size,
            num_gpu_blocks_override=self.num_gpu_blocks_override,
            quantization=self.quantization,
            kv_cache_memory_bytes=self.kv_cache_memory_bytes,
            enforce_eager=self.enforce_eager,
            draft=draft,
            enable_expert_parallel=self.enable_expert_parallel,
            qk_norm_kernels=self.qk_norm_kernels,
        )

    def override_refusal(self, profiles=None) -> ConfigError | None:
        """Why vLLM could not start with this num_gpu_blocks_override (None: it can): it allocates
        that many blocks whatever memory is left, and more than fit run out of memory. What
        `batchtui` refuses of each deployment it runs: the command line's, each of search's points."""
        override = self.num_gpu_blocks_override
        if override is None or not self.deployment(profiles).model.has_kv_cache:
            return None
        fits = replace(self, num_gpu_blocks_override=None).deployment(profiles).num_gpu_blocks
        if override <= fits:
            return None
        return ConfigError("num_gpu_blocks_override", override,
                           f"at most {fits:,} blocks fit in GPU memory at {{gpu_memory_utilization}} "
                           f"{self.gpu_memory_utilization:g}", "vLLM would run out of memory allocating the cache")

    def cost_model(self, profiles=None):
        """The iteration times a lesson or a sweep quotes for this scenario: its deployment, with
        the host's work overlapping the forward pass when its engine schedules asynchronously
        (`EngineConfig.overlaps_host`, as the engine prices its iterations), without the engine's
        CUDA graph padding (the batch sizes quoted are the ones priced)."""
        from .cost import CostModel

        return CostModel(self.deployment(profiles), overlap=self.engine_config(profiles).overlaps_host)

    def engine_dials(self, profiles=None) -> dict:
        """The dials this scenario sets, over vLLM's defaults for its GPU (`vllm_defaults`: the
        seats and token budget) and its model's context (`max_model_len`), not yet checked: the
        one place a dial left unset takes its GPU's default (`engine_config`; each of `batchtui
        search`'s GPUs, `sim.search.grid_dials`)."""
        profiles = profiles or self.profiles()
        gpu = profiles.gpu(self.gpu)
        model = profiles.model(self.model)
        base = vllm_defaults(gpu.id, gpu.memory_bytes, offline=self.offline)
        base["max_model_len"] = model.max_model_len
        if self.offline:  # vLLM's LLM class runs the engine with no API server in front
            base["api_server_count"] = 0
        base.update(self.engine)
        return base

    def engine_config(self, profiles=None) -> EngineConfig:
        """The dials the engine runs with: vLLM's defaults for this GPU, then this scenario's."""
        dials = self.engine_dials(profiles)
        unknown = set(self.engine) - set(EngineConfig.field_names())
        if unknown:
            raise ConfigError(f"engine.{sorted(unknown)[0]}", self.engine[sorted(unknown)[0]],
                              "a known dial: " + ", ".join(EngineConfig.field_names()))
        config = EngineConfig(**dials)
        spec = self.speculative()
        if spec is not None and config.batching != "continuous":
            raise ConfigError("speculative_config", spec.method, "unset: speculative decoding runs with continuous "
                                                                 "batching only", "as in vLLM")
        if spec is not None and spec.draft_slots_per_seat and config.max_num_scheduled_tokens is None:
            # vLLM takes a draft model's input slots off the budget, for every seat.
            config = replace(config, max_num_scheduled_tokens=(
                config.max_num_batched_tokens - spec.draft_slots_per_seat * config.max_num_seqs))
            if config.max_num_scheduled_tokens <= 0:
                raise ConfigError("engine.max_num_batched_tokens", config.max_num_batched_tokens,
                                  f"more than {{engine.max_num_seqs}} ({config.max_num_seqs})",
                                  "a draft model takes one slot a seat off the budget, as vLLM does")
        config.validate()
        return config

    def named_files(self) -> dict[str, str]:
        """The files this scenario names, by key (`FILE_KEYS`), those set."""
        named = {key: getattr(self.workload if key.startswith("workload.") else self, key.split(".")[-1])
                 for key in FILE_KEYS}
        return {key: name for key, name in named.items() if name}

    def with_files(self, move) -> "Scenario":
        """This scenario with each file it names given as `move(name)` (a path from one folder
        to another)."""
        moved = {key: move(name) for key, name in self.named_files().items()}
        own = {key: name for key, name in moved.items() if not key.startswith("workload.")}
        work = {key.split(".")[-1]: name for key, name in moved.items() if key.startswith("workload.")}
        return replace(self, **own).with_workload(**work)

    # -- dict and TOML round trip
    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in DEPLOYMENT_KEYS}
        for key in _UNSET_LEFT_OUT:
            if d[key] is None:
                d.pop(key)
        d["seed"] = self.seed
        d["offline"] = self.offline
        if self.profiles_path:
            d["profiles_path"] = self.profiles_path
        if self.hf_config_path:
            d["hf_config_path"] = self.hf_config_path
        for key in ("overhead_s", "overhead_per_seq_s", "qk_norm_kernels"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        d["engine"] = dict(self.engine)
        d["workload"] = self.workload.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: dict) -> "Scenario":
        if not isinstance(data, dict):
            raise ConfigError("scenario", type(data).__name__, "a table of settings")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(key, data[key], "a scenario setting: " + ", ".join(sorted(known)))
        kwargs = dict(data)
        if "workload" in kwargs and not isinstance(kwargs["workload"], dict):
            raise ConfigError("workload", kwargs["workload"], "a table of traffic settings")
        if "engine" in kwargs and not isinstance(kwargs["engine"], dict):
            raise ConfigError("engine", kwargs["engine"], "a table of engine dials")
        kwargs = _coerce_dials(kwargs)
        if "workload" in kwargs:
            kwargs["workload"] = WorkloadSpec.from_dict(kwargs["workload"])
        scenario = cls(**kwargs)
        scenario.validate_types()
        return scenario

    def validate_types(self) -> None:
        for key in ("tensor_parallel_size", "block_size", "seed"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(key, v, "a whole number")
        if not isinstance(self.gpu_memory_utilization, (int, float)) or isinstance(self.gpu_memory_utilization, bool):
            raise ConfigError("gpu_memory_utilization", self.gpu_memory_utilization, "a fraction in (0, 1]")
        for key in ("overhead_s", "overhead_per_seq_s"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf):
                raise ConfigError(key, v, "a host cost in seconds >= 0")
        v = self.qk_norm_kernels
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ConfigError("qk_norm_kernels", v, "unset, or a whole number of kernels >= 0")
        if not isinstance(self.offline, bool):  # (a string, "no", is true to Python)
            raise ConfigError("offline", self.offline, "true or false")
        for key in ("profiles_path", "hf_config_path"):  # (the workload's files are dials, checked as such)
            if not isinstance(getattr(self, key), str):
                raise ConfigError(key, getattr(self, key), "a file's path, or \"\" for none")

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())

    @classmethod
    def from_toml(cls, text: str, source: str = "<scenario>") -> "Scenario":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SimError(f"{source}: not valid TOML ({exc})") from None
        except RecursionError:
            raise SimError(f"{source}: nested too deeply to be a scenario") from None
        data = data.get("scenario", data)
        try:
            return cls.from_dict(data)
        except (ConfigError, TypeError) as exc:
            raise SimError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        """The scenario in a TOML file, each relative path it names taken from the file's folder."""
        from .userfiles import read_text

        folder = os.path.dirname(os.fspath(path))
        return cls.from_toml(read_text(path, "scenario"), str(path)).with_files(
            lambda name: os.path.join(folder, name))  # (an absolute name as it is)

    def save(self, path: str | Path) -> None:
        """Write the scenario as `load` reads it back: a file it names inside the file's folder
        as a path relative to that folder, any other as an absolute path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        folder = os.path.realpath(p.parent)

        def written(name: str) -> str:
            # where it is, its folder's links and ".." followed as the system follows them
            where = os.path.join(os.path.realpath(os.path.dirname(name) or os.curdir), os.path.basename(name))
            inside = os.path.relpath(where, folder)
            if inside == os.pardir or inside.startswith(os.pardir + os.sep):
                return name if os.path.isabs(name) else where
            return inside

        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(self.with_files(written).to_toml(), encoding="utf-8")
        tmp.replace(p)


def _coerce_dials(data: dict, prefix: str = "") -> dict:
    """A scenario dict with every dial's value checked and converted as `set_dial` does (a dial
    set in a file follows the rules of one set live)."""
    from .dials import BY_PATH

    out = {}
    for key, value in data.items():
        path = prefix + key
        if isinstance(value, dict):
            out[key] = _coerce_dials(value, path + ".")
        elif path in BY_PATH:
            out[key] = BY_PATH[path].coerce(value)
        else:
            out[key] = value
    return out


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dumps_toml(data: dict, prefix: str = "") -> str:
    """A small TOML writer for nested tables of scalars (all a scenario holds)."""
    lines: list[str] = []
    tables: list[tuple[str, dict]] = []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif v is not None:
            lines.append(f"{k} = {_toml_value(v)}")
    blocks = ["\n".join(lines)] if lines else []
    for k, v in tables:
        name = f"{prefix}.{k}" if prefix else k
        blocks.append(f"[{name}]\n" + dumps_toml(v, name).strip())
    return "\n\n".join(b.strip() for b in blocks) + "\n"
