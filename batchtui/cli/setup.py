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
from . import flag_table as t
from . import options as o
from .exits import UserError

ALLOW_LONG_MAX_MODEL_LEN = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def command_flags(args: argparse.Namespace) -> dict[str, str]:
    """How this command line spells the dials it sets by flags other than their own: with
    --dataset-name prefix_repetition, the lengths (given, or the dataset's defaults)."""
    return t.dataset_rows(getattr(args, "dataset_name", None))


def given_paths(args: argparse.Namespace) -> set[str]:
    """The dials (paths) whose flags this command line gave (`flag_table.given_paths`)."""
    return t.given_paths(args)


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

    def __init__(self, scenario: Scenario, profiles, recorded: dict | None = None, *, deployed: bool = True) -> None:
        """`deployed` False: the scenario's own GPU and TP size are not deployed (`search`, whose
        grid sets them point by point, and says of each point whether it fits)."""
        self.scenario = scenario
        self.profiles = profiles
        self.deployment = scenario.deployment(profiles) if deployed else None
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


def build_setup(args: argparse.Namespace, *, rate_flag: bool = True, traffic: bool = True,
                deployed: bool = True) -> Setup:
    """`traffic` False: a server's setup (`batchtui serve`), whose requests come from outside: the
    workload is empty and no traffic flag is read. `deployed`: as `Setup` takes it."""
    from . import vllm_flags

    recorded = vllm_flags.check(args)  # refuses what the simulator cannot give, before any work
    _check_serve_flags(args)
    sc = Scenario.load(args.scenario) if args.scenario else Scenario(workload=default_workload())
    file_dials = scenario_dials(sc) if args.scenario else set()
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
            raise UserError(f"argument {flag_of('model')}: {args.model} is not a known model (known: "
                            f"{', '.join(profiles.models)}, their Hugging Face ids and aliases); any other "
                            "model runs from its Hugging Face config.json: add --hf-config-path FILE")
    if getattr(args, "seed", None) is not None:
        changes["seed"] = args.seed
    if getattr(args, "offline", None) is not None:  # a batch job: vLLM's LLM class, its defaults (Scenario.offline)
        changes["offline"] = True
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
    try:
        _check_like_vllm(args, sc, profiles, model, deployed)
        setup = Setup(sc, profiles, recorded, deployed=deployed)
    except ConfigError as exc:
        raise _files_refusal(exc, args, file_dials) from None
    if recorded:
        import sys

        print(vllm_flags.recorded_line(recorded), file=sys.stderr)
    return setup


def scenario_dials(sc: Scenario) -> set[str]:
    """The dials a scenario file sets: its engine table's, and every other it gives a value other
    than its default (one it sets to the default refuses nothing a default would not)."""
    from sim.dials import differing

    return differing(Scenario(), replace(sc, engine={})) | {f"engine.{k}" for k in sc.engine}


def _files_refusal(exc: ConfigError, args: argparse.Namespace, file_dials: set[str]) -> Exception:
    """A refusal of dials together, as a file's refusal of one of them reads (`Scenario.from_toml`:
    the file, then its keys) when it names a dial the --scenario file sets and none the command
    line gave; otherwise left to the command line's words (`user_errors`)."""
    named = set(exc.dials())
    if named & file_dials and not named & given_paths(args):
        return UserError(f"{args.scenario}: {exc}")
    return exc


def _refuse(text: str) -> None:
    """A user's mistake whose message names dials as `{path}`, each spelled by its flag."""
    from sim.dials import spelled

    raise UserError(spelled(text, flag_of))


def _workload(args, w: WorkloadSpec, model, rate_flag: bool, from_file: bool) -> WorkloadSpec:
    """The traffic the flags describe, from `w` (the defaults or the --scenario file's): which
    dataset, the checks vllm bench serve makes, then the table's one rule (`flag_table.apply_traffic`)
    and the rules that read several flags at once."""
    rate = getattr(args, "request_rate", None) if rate_flag else None
    dataset = args.dataset_name
    path = args.dataset_path
    # The scenario file's own trace, while no flag names other traffic: replayed as a trace given
    # by flag is, its rate, count and timing as the file has them unless a flag sets them.
    kept = w.arrival == "trace" and args.workload is None and dataset is None and path is None
    if kept:
        dataset, path = "timed_trace", w.trace_path
    _check_traffic(args, dataset, path, rate)
    if args.workload is not None:
        dataset, path = "timed_trace", args.workload
    if dataset in a.TRACE_DATASETS:
        w = _trace_workload(args, w, dataset, path, rate, kept)
        w = t.apply_traffic(args, w, dataset, skip=("workload.request_rate", "workload.num_prompts"))
    else:
        if w.arrival == "trace":
            w = replace(w, arrival="gamma")
        if dataset in ("sharegpt", "custom"):
            fixed = args.random_output_len or (args.sharegpt_output_len if dataset == "sharegpt" else args.custom_output_len)
            w = replace(w, dataset=dataset, dataset_path=path, dataset_output_len=fixed or 0)
        elif dataset in ("random", t.PREFIX_REPETITION):
            w = replace(w, dataset="random", dataset_path="")
        arrival = w.arrival
        w = t.apply_traffic(args, w, dataset)
        if args.burstiness is not None and args.arrival is None and arrival == "poisson":
            w = replace(w, arrival="gamma")  # gaps shaped by --burstiness are gamma's
        if args.ramp_up_strategy is not None:
            w = replace(w, arrival="gamma")
        if args.turns is not None and args.turns > 1 and w.dataset != "random":
            _refuse("argument {workload.turns}: needs the random or prefix_repetition dataset (a next turn's "
                    "question and answer are drawn from {workload.input.mean} and {workload.output.mean})")
    if model.kind == "encoder" and args.random_input_len is None and not from_file:
        w = replace(w, input=replace(w.input, mean=model.input_len))  # an embedder's requests: its fixed input
    if args.random_range_ratio:
        r = args.random_range_ratio
        for side in ("input", "output"):
            spec = getattr(w, side)
            low, high = math.floor(spec.mean * (1 - r)), math.ceil(spec.mean * (1 + r))
            w = replace(w, **{side: replace(spec, dist="uniform", low=max(1, low), high=max(1, high))})
    if w.num_prompts == 0 and w.arrival != "trace":
        _refuse("the scenario's traffic is endless (num_prompts = 0); give {workload.num_prompts} N")
    return w


def _check_traffic(args, dataset: str | None, path: str | None, rate: float | None) -> None:
    """What vllm bench serve refuses in its traffic flags, and the flags the dataset sets itself."""
    from .vllm_flag_rows import DATASET_REFUSALS

    if args.workload is not None:
        if dataset not in (None, "timed_trace") or path is not None:
            _refuse("argument {workload.trace_path}: not allowed with {workload.dataset}/{workload.dataset_path} "
                    "({workload.trace_path} FILE is {workload.dataset} timed_trace {workload.dataset_path} FILE)")
        dataset, path = "timed_trace", args.workload
    files = ("sharegpt", "custom") + a.TRACE_DATASETS
    if dataset in DATASET_REFUSALS:
        _refuse(f"argument {{workload.dataset}}: {dataset} is not simulated: {DATASET_REFUSALS[dataset]}")
    if dataset in files:
        for flag in ("--no-oversample", "--disable-shuffle"):
            if getattr(args, t.dest(flag), False):
                raise UserError(f"argument {flag}: not simulated with a dataset file (its prompts are shuffled "
                                "with the seed and a short file is oversampled, as vLLM does by default)")
    if dataset in ("random", None) and path is not None and dataset is not None:
        _refuse("argument {workload.dataset_path}: not allowed with {workload.dataset} random (vLLM's rule: "
                "name the file's kind, sharegpt, custom or timed_trace)")
    if dataset in files and path is None:
        _refuse(f"argument {{workload.dataset}}: {dataset} needs {{workload.dataset_path}} FILE")
    if dataset is None and path is not None:
        _refuse("argument {workload.dataset_path}: give {workload.dataset} too (sharegpt, custom or timed_trace)")
    for trace_dial in ("workload.trace_sec_multiplier", "workload.hash_block_size"):
        if getattr(args, t.row_of(trace_dial).attr) is not None and dataset not in a.TRACE_DATASETS:
            _refuse(f"argument {{{trace_dial}}}: needs a trace ({{workload.dataset}} timed_trace "
                    "{workload.dataset_path} FILE)")
    if args.ramp_up_strategy is not None:
        if rate is not None:
            _refuse("argument {workload.request_rate}: not allowed with {workload.ramp_up_strategy} (the ramp "
                    "sets the rate), as in vllm bench serve")
        if args.ramp_up_start_rps is None or args.ramp_up_end_rps is None:
            _refuse("argument {workload.ramp_up_strategy}: give both {workload.ramp_up_start_rps} and "
                    "{workload.ramp_up_end_rps}")
        if args.ramp_up_start_rps > args.ramp_up_end_rps:
            _refuse(f"argument {{workload.ramp_up_end_rps}}: {args.ramp_up_end_rps:g} is below the start rate "
                    f"{args.ramp_up_start_rps:g}")
    elif args.ramp_up_start_rps is not None or args.ramp_up_end_rps is not None:
        _refuse("argument {workload.ramp_up_start_rps}: needs {workload.ramp_up_strategy} linear or exponential")
    if args.random_range_ratio and (args.input_dist or args.output_dist):
        _refuse("argument --random-range-ratio: not allowed with {workload.input.dist}/{workload.output.dist}")
    own = [row for row in t.TRAFFIC_ROWS if row.dataset and row.given(args) is not None]
    if dataset == t.PREFIX_REPETITION:
        clash = [row.flag for row in map(t.row_of, ("workload.prefix_len", "workload.input.mean", "workload.output.mean",
                                                      "workload.input.dist", "workload.output.dist"))
                 if row.given(args)]
        clash += [f for f, v in (("--random-range-ratio", args.random_range_ratio),
                                 (flag_of("workload.dataset_path"), path)) if v]
        if clash:
            _refuse(f"argument {clash[0]}: not allowed with {{workload.dataset}} prefix_repetition (its "
                    "--prefix-repetition-* flags set the lengths)")
    elif any(not row.any_dataset for row in own):
        flag = next(row.flag for row in own if not row.any_dataset)
        _refuse(f"argument {flag}: needs {{workload.dataset}} prefix_repetition")
    if dataset in a.TRACE_DATASETS:
        clash = [row.flag for row in map(t.row_of, ("workload.arrival", "workload.burstiness",
                                                      "workload.ramp_up_strategy", "workload.burst_size"))
                 if row.given(args) is not None]
        if clash:
            raise UserError(f"argument {clash[0]}: not allowed with a trace (the trace sets the arrivals)")
        shared = [row.flag for row in map(t.row_of, ("workload.prefix_len", "workload.turns", "workload.think_time",
                                                       "workload.num_prefixes")) if row.given(args) is not None]
        if shared:
            _refuse(f"argument {shared[0]}: not allowed with a trace (its hash_ids say what its prompts share; "
                    "{workload.hash_block_size} sets their block)")


def _trace_workload(args, w: WorkloadSpec, dataset: str, path: str, rate: float | None,
                    kept: bool = False) -> WorkloadSpec:
    """The trace at `path` as `dataset` reads it (`sim.workload.load_trace`). vLLM's timed layout
    (`timestamp`, `input_length`, `output_length`, `hash_ids`) is read as `vllm bench serve
    --dataset-name timed_trace` reads it: its timestamps times --timed-trace-sec-multiplier (1:
    seconds), --timed-trace-chunk-hash-size tokens per hash id (16), the first --num-prompts lines
    (1,000) and never more (`self_timed`), each sent at its timestamp whatever --request-rate says.
    mooncake_trace reads it in milliseconds with 512-token blocks. A trace of ours
    (`arrival_time`, `prompt_len`, `output_len`) is rescaled by --request-rate and cut or repeated
    to --num-prompts. `kept`: `w`'s own trace (a scenario file's), whose rate, count and timing
    stand where no flag sets them."""
    import sys

    from sim.workload import MOONCAKE_BLOCK_TOKENS, MOONCAKE_SEC_MULTIPLIER, is_timed_trace

    block, multiplier = w.hash_block_size, w.trace_sec_multiplier
    if dataset == "mooncake_trace":  # (the flags, when given, set them after: `flag_table.apply_traffic`)
        block, multiplier = MOONCAKE_BLOCK_TOKENS, MOONCAKE_SEC_MULTIPLIER
    # A pipe (<(zcat trace.gz)) is read once, by the run: its layout is not looked at here, and a
    # rate given with one rescales it whatever its layout.
    self_timed = w.self_timed if kept else True
    if rate is not None and self_timed and os.path.isfile(path) and is_timed_trace(path):
        from sim.dials import spelled

        print(spelled(f"batchtui: note: {{workload.request_rate}} {rate:g} is not used: a timed trace is sent at its "
                      "own timestamps, as vllm bench serve sends it ({workload.trace_sec_multiplier} scales them)",
                      flag_of), file=sys.stderr)
        rate = None
    if kept and rate is None:
        rate = w.trace_rate
    return replace(w, arrival="trace", trace_path=path, dataset="random", dataset_path="", hash_block_size=block,
                   trace_sec_multiplier=multiplier, self_timed=self_timed, trace_rate=rate or 0.0,
                   trace_requests=args.num_prompts or (w.trace_requests if kept else 0))


def _check_like_vllm(args, sc: Scenario, profiles, model, deployed: bool = True) -> None:
    """What `vllm serve` and `vllm bench serve` refuse before serving anything (`deployed`
    False: what depends on the GPU and TP size is left to each of search's points)."""
    config = sc.engine_config(profiles)
    if config.max_model_len > model.max_model_len and not _truthy(os.environ.get(ALLOW_LONG_MAX_MODEL_LEN)):
        flag = o.flagged("argument {engine.max_model_len}: ") if args.max_model_len is not None else ""
        raise UserError(f"{flag}{config.max_model_len} is longer than {model.name}'s context "
                        f"({model.max_model_len} tokens); vLLM refuses it unless "
                        f"{ALLOW_LONG_MAX_MODEL_LEN}=1 is set")
    refusal = sc.override_refusal(profiles) if deployed else None
    if refusal is not None:
        raise UserError(flag_message(refusal, given_paths(args)))


def _spec_shorthands(args, text: str | None) -> str | None:
    """--speculative-config with --spec-method, --spec-model and --spec-tokens merged in, as vLLM
    merges them (a key given both ways is refused); None when none is given."""
    given = [(flag, key, getattr(args, t.dest(flag), None)) for flag, key, _, _ in a.SPEC_SHORTHANDS]
    given = [(flag, key, value) for flag, key, value in given if value is not None]
    if not given:
        return None
    try:
        config = json.loads(text) if text else {}
    except json.JSONDecodeError:
        config = None
    if not isinstance(config, dict):
        raise UserError(f"argument {flag_of('speculative_config')}: {text!r} is not a JSON object")
    for flag, key, value in given:
        if key in config or key.replace("_", "-") in config:
            _refuse(f"argument {flag}: {flag} and {{speculative_config}}['{key}'] are mutually exclusive (as in vLLM)")
        config[key] = value
    return json.dumps(config)


def _check_serve_flags(args) -> None:
    """vllm serve's flags the simulator takes only at the values that change nothing it models."""
    dtype = getattr(args, "dtype", None)
    if dtype in ("float", "float32"):
        raise UserError(f"argument --dtype: {dtype} is not simulated: 4-byte weights have no tensor-core peak "
                        "in the GPU profiles; give auto, half, float16 or bfloat16")
    for flag in a.PARTIAL_PREFILL_FLAGS:
        value = getattr(args, t.dest(flag), None)
        if value not in (None, 1):
            raise UserError(f"argument {flag}: {value} is refused, as vLLM's V1 engine refuses it "
                            "(NotImplementedError: Concurrent Partial Prefill is not supported); its scheduler "
                            "has no such limit, so only 1, the default, is accepted (vLLM 0.27 removed the flag)")


def _truthy(value: str | None) -> bool:
    return bool(value) and value.strip().lower() not in ("0", "false", "no", "")
