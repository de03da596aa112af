"""From flags to a scenario the engine runs, with vLLM's validation and messages that name the flag.

A dial left out takes vLLM 0.33's `vllm serve` default for the GPU (`Scenario.engine_config`);
traffic left out takes `vllm bench serve`'s defaults, or the `--scenario` file's.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
from dataclasses import replace

from sim.dials import flag_of
from sim.errors import ConfigError, SimError
from sim.scenario import Scenario
from sim.workload import LengthSpec, WorkloadSpec

from . import args as a
from . import options as o
from .exits import UserError

ALLOW_LONG_MAX_MODEL_LEN = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


PREFIX_REPETITION_FLAGS = {path: flag for flag, (path, _) in a.PREFIX_REPETITION.items()}
"""The flags that set these dials with --dataset-name prefix_repetition (which refuses their own)."""


def command_flags(args: argparse.Namespace) -> dict[str, str]:
    """How this command line spells the dials it sets by flags other than their own: with
    --dataset-name prefix_repetition, the lengths (given, or the dataset's defaults)."""
    if getattr(args, "dataset_name", None) == "prefix_repetition":
        return dict(PREFIX_REPETITION_FLAGS)
    return {}


def given_paths(args: argparse.Namespace) -> set[str]:
    """The dials (paths) whose flags this command line gave."""
    from sim.dials import DIALS

    given = {spec.path for spec in DIALS if spec.flag and getattr(args, o.flag_dest(spec), None) is not None}
    for path, flag in command_flags(args).items():
        given.discard(path)
        if getattr(args, o.dest(flag), None) is not None:
            given.add(path)
    return given


def flag_message(exc: Exception, given: set[str] = frozenset(), flags: dict[str, str] | None = None) -> str:
    """A simulator error in the words of the command line: a ConfigError names each dial by its
    flag (`flags`: how this command spells a dial other than by its own flag, such as sweep's
    --request-rates or prefix_repetition's lengths): "argument --max-num-seqs: 0 is not allowed:
    ..." when the user gave the flag (`given`: the dials' paths), else "--max-num-seqs = 2048 is
    not allowed: ..." (a default, or a --scenario file's value); the value in the flag's unit (ms
    for --max-queue-delay-ms). A dial without a flag keeps its path."""
    from sim.dials import BY_PATH

    flags = flags or {}

    def spell(path: str) -> str | None:
        return flags.get(path) or flag_of(path)

    if not isinstance(exc, ConfigError):
        return exc.spelled(spell) if isinstance(exc, SimError) else str(exc)

    flag = spell(exc.dial)
    if flag is None:
        return exc.spelled(spell)
    shown = exc.value
    scale = BY_PATH[exc.dial].flag_scale if exc.dial in BY_PATH else 1.0
    if scale != 1.0 and isinstance(shown, (int, float)) and not isinstance(shown, bool):
        shown = f"{shown * scale:g}"
    head = f"argument {flag}: {shown}" if exc.dial in given else f"{flag} = {shown}"
    return exc.spelled(spell, head)


def user_errors(func):
    """Turn the simulator's ConfigErrors into messages that name the flag."""
    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except ConfigError as exc:
            raise UserError(flag_message(exc, given_paths(args), command_flags(args))) from None
    return wrapper


class Setup:
    """A scenario built from flags, resolved against the profiles: what the engine will run."""

    def __init__(self, scenario: Scenario, profiles, recorded: dict | None = None) -> None:
        self.scenario = scenario
        self.profiles = profiles
        self.deployment = scenario.deployment(profiles)
        self.config = scenario.engine_config(profiles)
        self.recorded = dict(recorded or {})
        """vLLM flags given that the simulator keeps in the result but does not model."""
        scenario.workload.validate()

    def with_scenario(self, scenario: Scenario) -> "Setup":
        return Setup(scenario, self.profiles, self.recorded)


def default_workload() -> WorkloadSpec:
    """vllm bench serve's traffic when no flag says otherwise."""
    return WorkloadSpec(arrival="gamma", request_rate=math.inf, num_prompts=a.DEFAULT_NUM_PROMPTS,
                        input=LengthSpec(mean=a.DEFAULT_INPUT_LEN), output=LengthSpec(mean=a.DEFAULT_OUTPUT_LEN),
                        burstiness=1.0)


def build_setup(args: argparse.Namespace, *, rate_flag: bool = True, traffic: bool = True) -> Setup:
    """`traffic` False: a server's setup (`batchtui serve`), whose requests come from outside: the
    workload is empty and no traffic flag is read."""
    from . import vllm_flags

    recorded = vllm_flags.check(args)  # refuses what the simulator cannot give, before any work
    _check_serve_flags(args)
    sc = Scenario.load(args.scenario) if args.scenario else Scenario(workload=default_workload())
    if args.profiles:
        sc = replace(sc, profiles_path=args.profiles)
    profiles = sc.profiles()
    changes = {}
    if args.gpu is not None:
        changes["gpu"] = o.resolve_gpu(args.gpu, profiles)
    if args.hf_config is not None:  # the model is the config's, named by --model
        from sim import hf_config

        name = args.model or str(hf_config.read(args.hf_config).get("_name_or_path") or "") or "hf-config"
        changes.update(model=name, hf_config_path=args.hf_config)
        sc = replace(sc, **changes)
        profiles = sc.profiles()
    elif args.model is not None:
        changes["model"] = o.resolve_model(args.model, profiles)
        if changes["model"] not in profiles.models:
            raise UserError(f"argument --model: {args.model} is not a known model (known: "
                            f"{', '.join(profiles.models)}, their Hugging Face ids and aliases); any other "
                            "model runs from its Hugging Face config.json: add --hf-config-path FILE")
    if getattr(args, "seed", None) is not None:
        changes["seed"] = args.seed
    engine = {}
    where = {f.dial: f.where for f in o.engine_flags()}
    for dial, value in o.given_dials(args).items():
        (changes if where[dial] == "deployment" else engine)[dial] = value
    shorthands = _spec_shorthands(args, changes.get("speculative_config", sc.speculative_config))
    if shorthands is not None:
        changes["speculative_config"] = shorthands
    sc = replace(sc, **changes)
    model = profiles.model(sc.model)
    if model.kind == "encoder" and "batching" not in engine and "batching" not in sc.engine:
        engine["batching"] = "dynamic"  # an encoder is served by dynamic batching only
    sc = sc.with_engine(**engine)
    if traffic:
        sc = replace(sc, workload=_workload(args, sc.workload, model, rate_flag, bool(args.scenario)))
    else:
        sc = replace(sc, workload=WorkloadSpec(arrival="all-at-once", num_prompts=0))
    _check_like_vllm(args, sc, profiles, model)
    setup = Setup(sc, profiles, recorded)
    if recorded:
        import sys

        print(vllm_flags.recorded_line(recorded), file=sys.stderr)
    return setup


def _workload(args, w: WorkloadSpec, model, rate_flag: bool, from_file: bool) -> WorkloadSpec:
    rate = getattr(args, "request_rate", None) if rate_flag else None
    dataset = args.dataset_name
    path = args.dataset_path
    if args.workload is not None:
        if dataset not in (None, "timed_trace") or path is not None:
            raise UserError("argument --workload: not allowed with --dataset-name/--dataset-path "
                            "(--workload FILE is --dataset-name timed_trace --dataset-path FILE)")
        dataset, path = "timed_trace", args.workload
    files = ("sharegpt", "custom") + a.TRACE_DATASETS
    from .vllm_flag_rows import DATASET_REFUSALS

    if dataset in DATASET_REFUSALS:
        raise UserError(f"argument --dataset-name: {dataset} is not simulated: {DATASET_REFUSALS[dataset]}")
    if dataset in files:
        for flag in ("--no-oversample", "--disable-shuffle"):
            if getattr(args, o.dest(flag), False):
                raise UserError(f"argument {flag}: not simulated with a dataset file (its prompts are shuffled "
                                "with the seed and a short file is oversampled, as vLLM does by default)")
    if dataset in ("random", None) and path is not None and dataset is not None:
        raise UserError("argument --dataset-path: not allowed with --dataset-name random (vLLM's rule: "
                        "name the file's kind, sharegpt, custom or timed_trace)")
    if dataset in files and path is None:
        raise UserError(f"argument --dataset-name: {dataset} needs --dataset-path FILE")
    if dataset is None and path is not None:
        raise UserError("argument --dataset-path: give --dataset-name too (sharegpt, custom or timed_trace)")
    for flag, given in (("--timed-trace-sec-multiplier", args.trace_sec_multiplier),
                        ("--timed-trace-chunk-hash-size", args.hash_block_size)):
        if given is not None and dataset not in a.TRACE_DATASETS:
            raise UserError(f"argument {flag}: needs a trace (--dataset-name timed_trace --dataset-path FILE)")
    if args.ramp_up_strategy is not None:
        if rate is not None:
            raise UserError("argument --request-rate: not allowed with --ramp-up-strategy (the ramp "
                            "sets the rate), as in vllm bench serve")
        if args.ramp_up_start_rps is None or args.ramp_up_end_rps is None:
            raise UserError("argument --ramp-up-strategy: give both --ramp-up-start-rps and --ramp-up-end-rps")
        if args.ramp_up_start_rps > args.ramp_up_end_rps:
            raise UserError(f"argument --ramp-up-end-rps: {args.ramp_up_end_rps:g} is below the start rate "
                            f"{args.ramp_up_start_rps:g}")
    elif args.ramp_up_start_rps is not None or args.ramp_up_end_rps is not None:
        raise UserError("argument --ramp-up-start-rps: needs --ramp-up-strategy linear or exponential")
    if args.random_range_ratio and (args.input_dist or args.output_dist):
        raise UserError("argument --random-range-ratio: not allowed with --input-dist/--output-dist")
    # (--prefix-repetition-num-prefixes also sets how many prefixes --random-prefix-len shares)
    repetition = [f for f in a.PREFIX_REPETITION if f != "--prefix-repetition-num-prefixes"
                  and getattr(args, o.dest(f)) is not None]
    if dataset == "prefix_repetition":
        clash = [f for f, v in (("--random-prefix-len", args.random_prefix_len), ("--random-input-len", args.random_input_len),
                                ("--random-output-len", args.random_output_len), ("--input-dist", args.input_dist),
                                ("--output-dist", args.output_dist), ("--random-range-ratio", args.random_range_ratio),
                                ("--dataset-path", path)) if v]
        if clash:
            raise UserError(f"argument {clash[0]}: not allowed with --dataset-name prefix_repetition (its "
                            "--prefix-repetition-* flags set the lengths)")
    elif repetition:
        raise UserError(f"argument {repetition[0]}: needs --dataset-name prefix_repetition")

    if dataset in a.TRACE_DATASETS:
        clash = [f for f, v in (("--arrival", args.arrival), ("--burstiness", args.burstiness),
                                ("--ramp-up-strategy", args.ramp_up_strategy)) if v is not None]
        if clash:
            raise UserError(f"argument {clash[0]}: not allowed with a trace (the trace sets the arrivals)")
        shared = [f for f, v in (("--random-prefix-len", args.random_prefix_len), ("--turns", args.turns),
                                 ("--think-time", args.think_time),
                                 ("--prefix-repetition-num-prefixes", args.prefix_repetition_num_prefixes))
                  if v is not None]
        if shared:
            raise UserError(f"argument {shared[0]}: not allowed with a trace (its hash_ids say what its "
                            "prompts share; --hash-block-size sets their block)")
        w = _trace_workload(args, w, dataset, path, rate)
    else:
        if w.arrival == "trace":
            w = replace(w, arrival="gamma")
        if rate is not None:
            w = replace(w, request_rate=rate)
        if args.num_prompts is not None:
            w = replace(w, num_prompts=args.num_prompts)
        if args.arrival is not None:
            w = replace(w, arrival=args.arrival)
        if args.burstiness is not None:
            w = replace(w, burstiness=args.burstiness)
            if args.arrival is None and w.arrival == "poisson":
                w = replace(w, arrival="gamma")
        if args.ramp_up_strategy is not None:
            w = replace(w, arrival="gamma", ramp_up_strategy=args.ramp_up_strategy,
                        ramp_up_start_rps=args.ramp_up_start_rps, ramp_up_end_rps=args.ramp_up_end_rps)
        if args.burst_size is not None:
            w = replace(w, burst_size=args.burst_size)
        if dataset in ("sharegpt", "custom"):
            fixed = args.random_output_len or (args.sharegpt_output_len if dataset == "sharegpt" else args.custom_output_len)
            w = replace(w, dataset=dataset, dataset_path=path, dataset_output_len=fixed or 0)
        elif dataset in ("random", "prefix_repetition"):
            w = replace(w, dataset="random", dataset_path="")
        if dataset == "prefix_repetition":
            for flag, (path, default) in a.PREFIX_REPETITION.items():
                given = getattr(args, o.dest(flag))
                field = path.removeprefix("workload.")
                value = default if given is None else given
                if field.endswith(".mean"):  # a length: exact (see a.PREFIX_REPETITION)
                    w = replace(w, **{field.removesuffix(".mean"): LengthSpec(mean=value)})
                else:
                    w = replace(w, **{field: value})
        else:
            if args.random_prefix_len is not None:
                w = replace(w, prefix_len=args.random_prefix_len)
            if args.prefix_repetition_num_prefixes is not None:
                w = replace(w, num_prefixes=args.prefix_repetition_num_prefixes)
        if args.turns is not None:
            if args.turns > 1 and w.dataset != "random":
                raise UserError("argument --turns: needs the random or prefix_repetition dataset (a next turn's "
                                "question and answer are drawn from --random-input-len and --random-output-len)")
            w = replace(w, turns=args.turns)
        if args.think_time is not None:
            w = replace(w, think_time=args.think_time)
    if args.max_concurrency is not None:
        w = replace(w, max_concurrency=args.max_concurrency)
    for flag, name in (("client_request_ms", "client_request_s"), ("client_token_ms", "client_token_s")):
        seconds = getattr(args, flag, None)  # (in seconds: the dial's flag_scale read the ms)
        if seconds is not None:
            w = replace(w, **{name: seconds})
    for side in ("input", "output"):
        spec = getattr(w, side)
        mean = getattr(args, f"random_{side}_len")
        if side == "input" and model.kind == "encoder" and mean is None and not from_file:
            mean = model.input_len  # an embedder's requests are its fixed input length
        fields = {"dist": getattr(args, f"{side}_dist"), "mean": mean,
                  "low": getattr(args, f"{side}_len_min"), "high": getattr(args, f"{side}_len_max"),
                  "sigma": getattr(args, f"{side}_sigma")}
        spec = replace(spec, **{k: v for k, v in fields.items() if v is not None})
        if args.random_range_ratio:
            r = args.random_range_ratio
            low = math.floor(spec.mean * (1 - r))
            high = math.ceil(spec.mean * (1 + r))
            spec = replace(spec, dist="uniform", low=max(1, low), high=max(1, high))
        w = replace(w, **{side: spec})
    if w.num_prompts == 0 and w.arrival != "trace":
        raise UserError("the scenario's traffic is endless (num_prompts = 0); give --num-prompts N")
    return w


def _trace_workload(args, w: WorkloadSpec, dataset: str, path: str, rate: float | None) -> WorkloadSpec:
    """The trace at `path` as `dataset` reads it (`sim.workload.load_trace`). vLLM's timed layout
    (`timestamp`, `input_length`, `output_length`, `hash_ids`) is read as `vllm bench serve
    --dataset-name timed_trace` reads it: its timestamps times --timed-trace-sec-multiplier (1:
    seconds), --timed-trace-chunk-hash-size tokens per hash id (16), the first --num-prompts lines
    (1,000) and never more (`self_timed`), each sent at its timestamp whatever --request-rate says.
    mooncake_trace reads it in milliseconds with 512-token blocks. A trace of ours
    (`arrival_time`, `prompt_len`, `output_len`) is rescaled by --request-rate and cut or repeated
    to --num-prompts."""
    import sys

    from sim.workload import MOONCAKE_BLOCK_TOKENS, MOONCAKE_SEC_MULTIPLIER, is_timed_trace

    block, multiplier = w.hash_block_size, w.trace_sec_multiplier
    if dataset == "mooncake_trace":
        block, multiplier = MOONCAKE_BLOCK_TOKENS, MOONCAKE_SEC_MULTIPLIER
    if args.hash_block_size is not None:
        block = args.hash_block_size
    if args.trace_sec_multiplier is not None:
        multiplier = args.trace_sec_multiplier
    # A pipe (<(zcat trace.gz)) is read once, by the run: its layout is not looked at here, and a
    # rate given with one rescales it whatever its layout.
    if rate is not None and os.path.isfile(path) and is_timed_trace(path):
        print(f"batchtui: note: --request-rate {rate:g} is not used: a timed trace is sent at its own timestamps, "
              "as vllm bench serve sends it (--timed-trace-sec-multiplier scales them)", file=sys.stderr)
        rate = None
    return replace(w, arrival="trace", trace_path=path, dataset="random", dataset_path="", hash_block_size=block,
                   trace_sec_multiplier=multiplier, self_timed=True, trace_rate=rate or 0.0,
                   trace_requests=args.num_prompts or 0)


def _check_like_vllm(args, sc: Scenario, profiles, model) -> None:
    """What `vllm serve` and `vllm bench serve` refuse before serving anything."""
    config = sc.engine_config(profiles)
    if config.max_model_len > model.max_model_len and not _truthy(os.environ.get(ALLOW_LONG_MAX_MODEL_LEN)):
        flag = "argument --max-model-len: " if args.max_model_len is not None else ""
        raise UserError(f"{flag}{config.max_model_len} is longer than {model.name}'s context "
                        f"({model.max_model_len} tokens); vLLM refuses it unless "
                        f"{ALLOW_LONG_MAX_MODEL_LEN}=1 is set")
    if sc.num_gpu_blocks_override is not None and model.has_kv_cache:
        fits = replace(sc, num_gpu_blocks_override=None).deployment(profiles).num_gpu_blocks
        if sc.num_gpu_blocks_override > fits:
            raise UserError(f"argument --num-gpu-blocks-override: {sc.num_gpu_blocks_override} is not "
                            f"allowed: at most {fits:,} blocks fit in GPU memory at "
                            f"--gpu-memory-utilization {sc.gpu_memory_utilization:g} (vLLM would run out "
                            "of memory allocating the cache)")


def _spec_shorthands(args, text: str | None) -> str | None:
    """--speculative-config with --spec-method, --spec-model and --spec-tokens merged in, as vLLM
    merges them (a key given both ways is refused); None when none is given."""
    given = [(flag, key, getattr(args, o.dest(flag), None)) for flag, key, _, _ in a.SPEC_SHORTHANDS]
    given = [(flag, key, value) for flag, key, value in given if value is not None]
    if not given:
        return None
    try:
        config = json.loads(text) if text else {}
    except json.JSONDecodeError:
        config = None
    if not isinstance(config, dict):
        raise UserError(f"argument --speculative-config: {text!r} is not a JSON object")
    for flag, key, value in given:
        if key in config or key.replace("_", "-") in config:
            raise UserError(f"argument {flag}: {flag} and --speculative-config['{key}'] are mutually exclusive "
                            "(as in vLLM)")
        config[key] = value
    return json.dumps(config)


def _check_serve_flags(args) -> None:
    """vllm serve's flags the simulator takes only at the values that change nothing it models."""
    dtype = getattr(args, "dtype", None)
    if dtype in ("float", "float32"):
        raise UserError(f"argument --dtype: {dtype} is not simulated: 4-byte weights have no tensor-core peak "
                        "in the GPU profiles; give auto, half, float16 or bfloat16")
    for flag in a.PARTIAL_PREFILL_FLAGS:
        value = getattr(args, o.dest(flag), None)
        if value not in (None, 1):
            raise UserError(f"argument {flag}: {value} is refused, as vLLM's V1 engine refuses it "
                            "(NotImplementedError: Concurrent Partial Prefill is not supported); its scheduler "
                            "has no such limit, so only 1, the default, is accepted (vLLM 0.27 removed the flag)")


def _truthy(value: str | None) -> bool:
    return bool(value) and value.strip().lower() not in ("0", "false", "no", "")
