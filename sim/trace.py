"""Step-by-step traces of the continuous scheduler, in the layout of vLLM's reference cases.

A case (see `tests/data/vllm-scheduler-cases.json`) gives a scheduler `config` and `requests`
that arrive at a given iteration (`arrival_step`, 1-based). Running it here yields the same
record the reference file keeps under `expected`, so the two can be compared field for field.
A case with a `speculative_config` runs speculative decoding with each request's `accept`
pattern as the runner's verdicts (`sim.speculative.PatternAcceptance`) and records the spec
fields of `tests/data/vllm-scheduler-cases-spec.json` (drafts scheduled and accepted, tokens
sampled and delivered, drafts held, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .config import EngineConfig
from .errors import ConfigError, NotModelled, RequestRejected, SimError
from .kv import BlockPool
from .request import RUNNING, Request, check_request, check_segments
from .schedulers.base import stop_reason
from .schedulers.continuous import ContinuousScheduler
from .speculative import PatternAcceptance
from .speculative import parse as parse_speculative

CONFIG_KEYS = {
    "block_size", "num_blocks", "usable_blocks", "max_num_batched_tokens", "max_num_seqs",
    "enable_chunked_prefill", "long_prefill_token_threshold", "policy", "watermark",
    "scheduler_reserve_full_isl", "enable_prefix_caching", "async_scheduling", "max_model_len",
    # vLLM 0.33's (optional: absent is vLLM's default)
    "max_num_scheduled_tokens", "max_num_active_seqs", "long_prefill_token_threshold_adaptive",
}
SET_FIELDS = ("emitted_token", "preempted", "finished", "finish_processed_in_this_call", "spec_padding")
FIELD_ALIASES = {
    # Older async cases name three fields by the engine call rather than the step.
    "free_blocks_end_of_call": "free_blocks_end_of_step",
    "waiting_end_of_call": "waiting_end_of_step",
    "step_of_last_token": "finish_step",
}
MAX_STEPS = 100_000
"""The most iterations a case runs (vLLM's reference cases run at most 18). A trace is written as
it runs (`write_trace`), so memory does not grow with them: one request decoding for 100,000
iterations takes 1.2 s of CPU and 37 MB at its peak (290 MB when the trace was held whole; the
2-core development machine, 7 December 2026)."""
MAX_CASE_VALUE = 10_000_000  # a case is a small hand-made configuration


WHOLE_KEYS = ("block_size", "num_blocks", "usable_blocks", "max_num_batched_tokens", "max_num_seqs",
              "long_prefill_token_threshold", "max_model_len")


def case_key(path: str) -> str | None:
    """How a case's config names a dial (`sim.dials` path): an engine dial by its name, the
    scheduling policy `policy`; None for a dial a case does not set."""
    head, _, name = path.partition(".")
    if head != "engine":
        return None
    return "policy" if name == "scheduling_policy" else name


def config_from_case(cfg: dict) -> tuple[EngineConfig, BlockPool]:
    if not isinstance(cfg, dict):
        raise ConfigError("config", cfg, "an object of scheduler settings")
    for key in WHOLE_KEYS:
        v = cfg.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > MAX_CASE_VALUE:
            raise ConfigError(key, v, f"a whole number from 0 to {MAX_CASE_VALUE:,}")
    if cfg.get("num_blocks", 2) < 2:
        raise ConfigError("num_blocks", cfg.get("num_blocks"), "at least 2 blocks")
    if cfg.get("block_size", 1) < 1:
        raise ConfigError("block_size", cfg.get("block_size"), "at least 1 token a block")
    if isinstance(cfg.get("watermark", 0.0), bool) or not isinstance(cfg.get("watermark", 0.0), (int, float)):
        raise ConfigError("watermark", cfg.get("watermark"), "a fraction of the blocks in [0, 1)")
    for key in ("max_num_scheduled_tokens", "max_num_active_seqs"):
        v = cfg.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_CASE_VALUE):
            raise ConfigError(key, v, "a whole number > 0, or absent")
    unknown = set(cfg) - CONFIG_KEYS
    if unknown:
        raise ConfigError("config", sorted(unknown)[0], "a key of the case format: " + ", ".join(sorted(CONFIG_KEYS)))
    for key in ("block_size", "num_blocks", "max_num_batched_tokens", "max_num_seqs", "max_model_len"):
        if key not in cfg:
            raise ConfigError(key, None, "a value in the case's config")
    config = EngineConfig(
        batching="continuous",
        max_num_seqs=cfg["max_num_seqs"],
        max_num_batched_tokens=cfg["max_num_batched_tokens"],
        max_num_scheduled_tokens=cfg.get("max_num_scheduled_tokens"),
        max_num_active_seqs=cfg.get("max_num_active_seqs"),
        enable_chunked_prefill=bool(cfg.get("enable_chunked_prefill", True)),
        long_prefill_token_threshold=cfg.get("long_prefill_token_threshold", 0),
        long_prefill_token_threshold_adaptive=bool(cfg.get("long_prefill_token_threshold_adaptive", False)),
        scheduling_policy=cfg.get("policy", "fcfs"),
        max_model_len=cfg["max_model_len"],
        watermark=float(cfg.get("watermark", 0.0)),
        scheduler_reserve_full_isl=bool(cfg.get("scheduler_reserve_full_isl", True)),
        async_scheduling=bool(cfg.get("async_scheduling", False)),
        enable_prefix_caching=bool(cfg.get("enable_prefix_caching", False)),
    )
    try:
        config.validate()
    except ConfigError as exc:  # in the case file's words
        raise SimError(f"config: {exc.spelled(case_key)}") from None
    pool = BlockPool(cfg["num_blocks"], cfg["block_size"], caching=config.enable_prefix_caching)
    if "usable_blocks" in cfg and cfg["usable_blocks"] != pool.usable:
        raise ConfigError("usable_blocks", cfg["usable_blocks"], f"num_blocks - 1 = {pool.usable}")
    return config, pool


def run_case(case: dict) -> dict:
    """Run one case and return its trace in the `expected` layout, every iteration's record held
    (`write_trace` writes one without holding them). Raises SimError for a case that real vLLM
    would refuse (NotModelled for one that needs what is not modelled yet)."""
    replay = Replay(case)
    steps = list(replay.steps())
    return {"steps": steps, **replay.summary()}


def write_trace(case: dict, write: Callable[[str], object], indent: int | None = None) -> None:
    """Write a case's trace as JSON, the very text `json.dumps(run_case(case), indent=indent)`
    makes, an iteration's record at a time as the case runs: what is held is the scheduler's
    state and one record, never the trace (which lists every arrived request at every iteration,
    so it grows with requests x iterations). A case refused before it runs (`Replay`) writes
    nothing; one stopped by the iteration cap has written the iterations before it."""
    replay = Replay(case)
    # json.dumps's layout: nothing between items but ", " without an indent; with one, each item
    # on its own line, indented by its depth (a record is two deep: the trace, its "steps").
    pad = "" if indent is None else "\n" + " " * indent
    inner = "" if indent is None else "\n" + " " * (2 * indent)
    between = ", " if indent is None else "," + inner
    write("{" + pad + '"steps": [')
    written = False
    for record in replay.steps():
        text = json.dumps(record, indent=indent)
        if inner:  # JSON escapes a newline within a string: each one here is the layout's
            text = text.replace("\n", inner)
        write((between if written else inner) + text)
        written = True
    write((pad if written else "") + "]")
    head = "{" + pad + '"steps": []'
    rest = json.dumps({"steps": [], **replay.summary()}, indent=indent)
    write(rest[len(head):])


class Replay:
    """One case, checked and set up (a case real vLLM refuses raises SimError here, before it
    runs), then run by `steps()`, which yields each iteration's record as it is made and keeps
    none; `summary()` then gives the trace's other keys.

    One step is one engine call: the requests arriving then are added, `schedule()` builds the
    step's batch, and a batch's output is processed — the step's own, or with async scheduling
    the previous step's (the first call processes nothing)."""

    def __init__(self, case: dict) -> None:
        if not isinstance(case, dict) or "config" not in case or "requests" not in case:
            name = case.get("name", "?") if isinstance(case, dict) else case
            raise ConfigError("case", name, "an object with 'config' and 'requests'")
        if not isinstance(case["requests"], list) or not all(isinstance(r, dict) for r in case["requests"]):
            raise ConfigError("requests", case["requests"], "a list of request objects")
        config, pool = config_from_case(case["config"])
        speculative = parse_speculative(case.get("speculative_config"))
        acceptance = None
        if speculative is not None:
            acceptance = PatternAcceptance({str(r.get("id", i)): _accept_pattern(str(r.get("id", i)), r)
                                            for i, r in enumerate(case["requests"]) if isinstance(r, dict)})
        self.config, self.pool, self.speculative = config, pool, speculative
        self.sched = ContinuousScheduler(config, pool, compact_async=False,  # (explicit: the trace lists each request)
                                         speculative=speculative, acceptance=acceptance)
        specs = []
        seen: set[str] = set()
        for i, r in enumerate(case["requests"]):
            rid = str(r.get("id", i))
            if rid in seen:
                raise RequestRejected(rid, "the id is used twice in this case")
            seen.add(rid)
            step = r.get("arrival_step", 1)
            if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= MAX_STEPS:
                raise RequestRejected(rid, f"arrival_step must be a whole number from 1 to {MAX_STEPS:,} (the most "
                                           f"iterations a case runs), got {step!r}")
            try:
                check_request(rid, r.get("prompt_len"), r.get("output_len"), config, pool)
            except RequestRejected as exc:  # in the case file's words, as its config's refusals are
                raise RequestRejected(rid, exc.spelled_reason(case_key)) from None
            prio = r.get("priority", 0)
            if isinstance(prio, bool) or not isinstance(prio, int):
                raise RequestRejected(rid, f"priority must be a whole number, got {prio!r}")
            specs.append((step, i, rid, r, _segments(rid, r)))
        specs.sort(key=lambda s: (s[0], s[1]))
        self.specs = specs
        self.arrived: list[Request] = []
        self.first_token_step: dict[str, int] = {}
        self.finish_step: dict[str, int] = {}
        self.last_step = 0
        self.done = False

    def steps(self) -> Iterator[dict]:
        """Run the case, yielding each iteration's record in the `expected` layout as it is made.
        Raises SimError when the case does not finish within MAX_STEPS iterations."""
        sched, pool, config, speculative = self.sched, self.pool, self.config, self.speculative
        caching = pool.caching
        asynchronous = config.async_scheduling
        specs, arrived = self.specs, self.arrived
        first_token_step, finish_step = self.first_token_step, self.finish_step
        taken = 0  # specs[:taken] have arrived
        in_flight = None
        step = 0
        while taken < len(specs) or sched.has_work() or in_flight is not None:
            step += 1
            if step > MAX_STEPS:
                raise SimError(f"the case did not finish within {MAX_STEPS:,} iterations")
            while taken < len(specs) and specs[taken][0] <= step:
                _, i, rid, r, segments = specs[taken]
                taken += 1
                req = Request(rid, float(r.get("arrival_step", 1)), r["prompt_len"],
                              r["output_len"], priority=r.get("priority", 0), seq=i, prompt_segments=segments)
                sched.add_request(req)
                arrived.append(req)
            out = sched.schedule()
            hits = sched.prefix_hits(out)
            sched.sync()
            scheduled_tokens = {req.request_id: n for req, n in _batch(sched, out)}
            held_after_schedule = {req.request_id: pool.held(req.request_id) for req in sched.running}
            free_after_schedule = pool.free
            if asynchronous:
                # The batch just scheduled samples now; its output is processed in the next call.
                sampled = out.sampling
                for req in sampled:
                    if req.num_output_tokens + req.num_output_placeholders == 1 + (out.spec or {}).get(req, 0):
                        first_token_step.setdefault(req.request_id, step)
                if speculative is None:
                    last = [req for req in sampled if _last_token_in_flight(req, config.max_model_len)]
                else:
                    last = [req for req in sampled if _last_token_sampled(req, out, config.max_model_len)]
                processed, in_flight = in_flight, (out if not out.is_empty else None)
                result = sched.update_from_output(processed) if processed is not None else None
                emitted = [req.request_id for req in sampled]
            else:
                result = sched.update_from_output(out)
                last = result.finished
                emitted = [row.request_id for row in sched.describe(out) if row.sampled]
                for req in result.first_tokens:
                    first_token_step.setdefault(req.request_id, step)
            for req in last:
                finish_step[req.request_id] = step
            if result is not None and result.finished:
                self.last_step = step
            sched.sync()
            record = {
                "step": step,
                "scheduled_tokens": scheduled_tokens,
                "emitted_token": emitted,
                "preempted": [req.request_id for req in out.preempted],
                "finished": [req.request_id for req in last],
                "blocks_held_after_schedule": held_after_schedule,
                "free_blocks_after_schedule": free_after_schedule,
                "free_blocks_end_of_step": pool.free,
                "running_end_of_step": [req.request_id for req in sched.running],
                "waiting_end_of_step": [req.request_id for req in sched.waiting],
                "num_computed_tokens_end_of_step": {req.request_id: req.num_computed_tokens for req in arrived},
                "num_output_tokens_end_of_step": {req.request_id: req.num_output_tokens for req in arrived},
            }
            if asynchronous:
                record["finish_processed_in_this_call"] = [req.request_id for req in result.finished] if result else []
            if caching:
                record["prefix_hit_tokens"] = hits
                record["cached_blocks"] = pool.cached
                record["evictable_blocks"] = pool.evictable
            if speculative is not None:
                record.update(_spec_fields(sched, out, processed if asynchronous else out, asynchronous))
            yield record
        self.done = True

    def summary(self) -> dict:
        """The trace's keys after "steps", in the `expected` layout, once `steps()` has run out."""
        if not self.done:
            raise RuntimeError("summary() before steps() ran to the end")
        arrived = self.arrived
        trace: dict = {
            "first_token_step": self.first_token_step,
            "finish_step": self.finish_step,
            "num_preemptions": {req.request_id: req.num_preemptions for req in arrived},
            "last_step": self.last_step,
        }
        if self.pool.caching:
            trace["num_cached_tokens"] = {req.request_id: max(0, req.num_cached_tokens) for req in arrived}
        if self.speculative is not None:
            # (A case's requests ignore EOS: reaching output_len is vLLM's max_tokens, "length".)
            trace["finish_reason"] = {req.request_id: "length" if req.finish_reason in ("stop", "length")
                                      else req.finish_reason for req in arrived if req.finish_reason}
            trace["spec_totals"] = {req.request_id: {
                "verifications": req.spec_verifications, "spec_tokens_scheduled": req.spec_scheduled,
                "spec_tokens_accepted": req.spec_accepted, "tokens_sampled": req.tokens_sampled,
                "num_output_tokens": req.num_output_tokens} for req in arrived}
        return trace


def _accept_pattern(rid: str, r: dict) -> list[int]:
    """A request's acceptance pattern (its 'accept' list: drafts accepted at its v-th verification,
    repeating); [0] when it has none."""
    pattern = r.get("accept", [0])
    if (not isinstance(pattern, list) or not pattern
            or not all(isinstance(a, int) and not isinstance(a, bool) and a >= 0 for a in pattern)):
        raise RequestRejected(rid, f"its 'accept' must be a list of whole numbers >= 0, got {pattern!r}")
    return pattern


def _last_token_sampled(req: Request, out, max_model_len: int) -> bool:
    """Speculative decoding under async scheduling: this batch's tokens (1 + drafts accepted) are
    the request's last ones, counting every token sampled for it so far."""
    sampled = req.tokens_sampled
    this = 1 + (out.accepted or {}).get(req, 0)
    return (stop_reason(req, sampled, max_model_len) is not None
            and stop_reason(req, sampled - this, max_model_len) is None)


def _spec_fields(sched: ContinuousScheduler, out, processed, asynchronous: bool) -> dict:
    """A step's speculative decoding fields (the spec file's conventions): of the batch scheduled
    this call, the drafts scheduled, the padded admissions, the drafts accepted and the tokens
    sampled; the tokens appended by the batch processed this call; the blocks and drafts each
    running request holds at the end; and synchronously the drafts proposed after the step, or
    under async scheduling the tokens in flight."""
    spec = out.spec or {}
    accepted = out.accepted or {}
    running = list(sched.running)
    fields = {
        "scheduled_spec_tokens": {req.request_id: n for req, n in spec.items()},
        "spec_padding": [req.request_id for req in out.spec_padding or ()],
        "accepted_spec_tokens": {req.request_id: a for req, a in accepted.items()},
        "sampled_tokens": {req.request_id: 1 + accepted.get(req, 0) for req in out.sampling},
        "new_tokens_delivered": {req.request_id: n for req, n in
                                 ((processed.delivered or {}).items() if processed is not None else ())},
        "blocks_held_end_of_step": {req.request_id: sched.pool.held(req.request_id) for req in running},
        "draft_tokens_end_of_step": {req.request_id: req.num_drafts for req in running},
    }
    if asynchronous:
        fields["num_output_placeholders_end_of_step"] = {req.request_id: req.num_output_placeholders
                                                         for req in running}
    else:
        fields["drafts_proposed"] = {req.request_id: req.num_drafts for req in out.sampling
                                     if req.status == RUNNING}
    return fields


def _segments(rid: str, r: dict) -> tuple[tuple[str, int], ...] | None:
    """A case request's prompt as (name, length) segments (its 'prompt'), or None: one segment
    named after the request, shared with nobody."""
    prompt = r.get("prompt")
    if prompt is None:
        return None
    if not isinstance(prompt, list) or not all(isinstance(p, dict) and "seg" in p and "len" in p for p in prompt):
        raise RequestRejected(rid, "its 'prompt' must be a list of {'seg': name, 'len': n} segments")
    return check_segments(rid, [(p["seg"], p["len"]) for p in prompt], r.get("prompt_len"))


def _batch(sched: ContinuousScheduler, out) -> list[tuple[Request, int]]:
    """Who the batch just scheduled holds and how many tokens each got (compactly held decoders
    included: all of them are in it)."""
    return [(w[0], w[1]) for w in out.scheduled] + [(req, 1) for req in sched.running.decoders
                                                     if out.num_compact]


def _last_token_in_flight(req: Request, max_model_len: int) -> bool:
    """The tokens sampled so far, those in flight included, complete the request."""
    return stop_reason(req, req.num_output_tokens + req.num_output_placeholders, max_model_len) is not None


def compare(expected: dict, actual: dict) -> list[str]:
    """Differences between an `expected` block and a trace, per the file's conventions (either
    spelling of the fields older async cases name differently)."""
    return _differences(expected, actual.get("steps", []), lambda: actual)


def _differences(expected: dict, steps: Iterable[dict], rest: Callable[[], dict]) -> list[str]:
    """`compare` of a trace given as its records, taken one at a time, and its other keys, asked
    for once the records have run out (`Replay.summary`)."""
    expected = _canonical(expected)
    exp_steps = expected.get("steps", [])
    step_diffs: list[str] = []
    count = 0
    for count, a in enumerate(steps, 1):
        if count > len(exp_steps):
            continue
        e = exp_steps[count - 1]
        for key, ev in _canonical(e).items():
            av = a.get(key)
            if key in SET_FIELDS:
                same = sorted(ev) == sorted(av or [])
            else:
                same = ev == av
            if not same:
                step_diffs.append(f"step {e.get('step')}: {key}: expected {ev!r}, got {av!r}")
    actual = rest()
    diffs: list[str] = []
    for key in ("first_token_step", "finish_step", "num_preemptions", "last_step", "num_cached_tokens",
                "finish_reason", "spec_totals"):
        if key in ("num_cached_tokens", "finish_reason", "spec_totals") and key not in expected:
            continue
        if expected.get(key) != actual.get(key):
            diffs.append(f"{key}: expected {expected.get(key)!r}, got {actual.get(key)!r}")
    if len(exp_steps) != count:
        diffs.append(f"number of steps: expected {len(exp_steps)}, got {count}")
    return diffs + step_diffs


def _canonical(record: dict) -> dict:
    return {FIELD_ALIASES.get(key, key): value for key, value in record.items()}


def check_case(case: dict) -> tuple[str, list[str]]:
    """Run a case against its expectations: ("pass" | "fail" | "skip", lines that say why). A
    case real vLLM refuses passes when it is rejected; one that needs what is not modelled yet
    is skipped."""
    if not isinstance(case, dict):
        return "fail", [f"a case must be an object, not {type(case).__name__}"]
    valid = case.get("valid_in_real_vllm", True)
    expected = case.get("expected", {})
    if not isinstance(expected, dict):
        return "fail", ["its 'expected' is not an object"]
    steps = expected.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        return "fail", ["its 'expected.steps' is not a list of step objects"]
    try:
        replay = Replay(case)
        # (compared as it runs: no more of the trace held than one record)
        diffs = _differences(expected, replay.steps(), replay.summary)
    except NotModelled as exc:
        return "skip", [str(exc)]
    except SimError as exc:
        if valid:
            return "fail", [f"rejected: {exc}"]
        return "pass", [f"rejected as vLLM would: {exc}"]
    if not valid:
        return "fail", ["ran a case real vLLM refuses; expected a rejection"]
    return ("fail", [f"{len(diffs)} difference(s)"] + diffs) if diffs else ("pass", [])


def load_cases(path: str | Path) -> list[dict]:
    """Cases from a file that holds either one case or a `{"cases": [...]}` collection."""
    from .userfiles import read_text

    text = read_text(path, "cases")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SimError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except (UnicodeDecodeError, RecursionError):
        raise SimError(f"{path}: not a JSON text file") from None
    cases = None
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        cases = data["cases"]
    elif isinstance(data, dict) and "config" in data:
        cases = [data]
    elif isinstance(data, list):
        cases = data
    if cases is not None:
        for i, case in enumerate(cases):
            if not isinstance(case, dict):
                raise SimError(f"{path}: case {i + 1} is not a case object (one with 'config' and 'requests')")
        return cases
    raise SimError(f"{path}: expected a case object with 'config' and 'requests', or {{\"cases\": [...]}}")
