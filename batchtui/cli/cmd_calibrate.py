"""`batchtui calibrate`: fit the GPU's efficiencies and host overheads to measured runs and write
them as a profile.

Each result file (`vllm bench serve --save-result`, or `batchtui sim --save-result`) becomes a
scenario that replays its traffic (`measured`); `sim.fit` finds the parameters under which the
simulator reproduces every run's TTFT p50, TPOT p50 and output throughput, refusing runs that
cannot tell the parameters apart. The answer is a `[gpus.NAME]` table, complete (the base GPU's
data-sheet figures and the fitted values), written into `--output` (added to the file, or
replacing a table of the same name there; the rest of the file is kept as it was).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import stat
import tempfile
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path

from sim.dials import flag_of

from .runner import default_jobs

from . import args as a
from . import options as o
from .exits import EXIT_OK, UserError
from .output import check_writable, output_file
from .setup import user_errors
from .workers import Workers

HELP = "fit the GPU profile to measured runs (vllm bench serve, GuideLLM, aiperf) and write it as a profile file"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from sim.fit import PARAMETERS

    p.description = (
        "Fit the simulator's GPU parameters (efficiencies and host overheads) to measured "
        "`vllm bench serve --save-result` runs (or GuideLLM reports and aiperf profile exports), and write "
        "them as a GPU profile usable everywhere as "
        f"--profiles FILE {flag_of('gpu')} NAME. Give runs that pin every parameter: one request at a time (a low "
        "rate), several rates up to saturation, and one with long prompts. Prints the fitted values with "
        "their uncertainty and every run measured, simulated before and after.")
    p.add_argument("results", nargs="+", metavar="RESULT.json", help="result files of vllm bench serve --save-result, GuideLLM reports (benchmarks.json: one run "
                        "per benchmark) or aiperf exports (profile_export_aiperf.json), told apart by content")
    add_hardware_args(p, gpu_help="the GPU the runs were measured on, to start from (a profile id, its "
                                  "nvidia-smi name, or auto)")
    f = p.add_argument_group("the fit")
    f.add_argument("--output", "-o", required=True, metavar="FILE",
                   help="profile file to write the calibrated GPU into (kept: other tables in it stay)")
    f.add_argument("--name", metavar="NAME",
                   help="id of the calibrated GPU (default <BASE>-calibrated)")
    names = ", ".join(p_.name for p_ in PARAMETERS)
    f.add_argument("--fix", type=_parameter_list, default=[], metavar="NAME,...",
                   help=f"keep these at the base profile's values instead of fitting them (from {names})")
    a.add_jobs_arg(p)
    p.set_defaults(func=run)


def add_hardware_args(p: argparse.ArgumentParser, *, gpu_help: str, gpu_required: bool = True) -> None:
    """--profiles, --gpu, --model and the engine flags (calibrate and compare)."""
    from . import flag_table as t

    t.add_rows(p, (t.PROFILES, t.GPU, t.MODEL), changes={
        t.GPU.flag: {"required": gpu_required, "help": gpu_help},
        t.MODEL.flag: {"help": "the model served: a Hugging Face id or one of {models} (default: the files' model_id)"}})
    t.add_rows(p, t.engine_rows(), group="engine the runs were served with (vllm serve's flags; unset: the file's "
                                         "--metadata KEY=VALUE entries, else vLLM's defaults for the GPU)")


def _parameter_list(text: str) -> list[str]:
    from sim.fit import PARAMETER_NAMES

    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in PARAMETER_NAMES]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"expected names from {', '.join(PARAMETER_NAMES)}, got {text!r}")
    return names


def base_scenario(args, first_result: dict | None):
    """(scenario with gpu, model and profiles, profiles): the model from --model, else the first
    file's model_id."""
    from sim.scenario import Scenario

    sc = Scenario(profiles_path=args.profiles or "")
    profiles = sc.profiles()
    gpu = o.resolve_gpu(args.gpu, profiles) if args.gpu else sc.gpu
    profiles.gpu(gpu)  # an unknown GPU is named here
    model_name = args.model or (first_result or {}).get("model_id")
    if not isinstance(model_name, str) or not model_name:
        model_name = sc.model
    model = o.resolve_model(model_name, profiles)
    if model not in profiles.models:
        where = flag_of("model") if args.model else "the result's model_id"
        raise UserError(f"{where} {model_name!r} is not a known model profile; give {flag_of('model')} with one of "
                        f"{', '.join(profiles.models)} (or a Hugging Face id of one), or add it with --profiles")
    return replace(sc, gpu=gpu, model=model), profiles


def progress_printer(enabled: bool):
    import sys

    if not enabled:
        return None

    def say(text: str) -> None:
        print(f"  {text}", file=sys.stderr, flush=True)
    return say


@user_errors
def run(args: argparse.Namespace) -> int:
    from sim.fit import FitError, PARAMETER_NAMES, Point, fit

    from .measured import first_run, load_runs

    name = args.name
    if name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise UserError(f"argument --name: {name!r} is not allowed: letters, digits, '-', '_' and '.' "
                        + o.flagged("(it becomes [gpus.NAME] and {gpu} NAME)"))
    base, profiles = base_scenario(args, first_run(args.results[0]))
    name = name or f"{base.gpu}-calibrated"
    check_output(args.output, name)
    fitted = [n for n in PARAMETER_NAMES if n not in args.fix]
    with tempfile.TemporaryDirectory(prefix="batchtui-calibrate-") as trace_dir:
        runs = load_runs(args.results, base, o.given_dials(args), trace_dir, profiles)
        runs, spec_lines, spec_notes = fit_acceptance(runs)
        for line in spec_lines:
            print(line)
        points = [Point(r.label, r.scenario, r.metrics) for r in runs]
        print(f"Calibrating {profiles.model(base.model).name} on {profiles.gpu(base.gpu).name} ({base.gpu}) "
              f"from {len(runs)} run(s); fitting {', '.join(fitted)}.", flush=True)
        jobs = args.jobs or default_jobs()
        with Workers(jobs) as workers:
            try:
                result = fit(points, profiles, base.gpu, base.model, fit=fitted, mapper=workers.map,
                             progress=progress_printer(True))
            except FitError as exc:
                raise UserError(exc.spelled(flag_of)) from None
    text = profile_text(name, profiles.gpu(base.gpu), profiles.model(base.model), result, [r.label for r in runs],
                        spec_notes)
    write_profile(args.output, name, text)
    print()
    print(parameter_table(result))
    for line in undetermined_lines(result):
        print(line)
    print()
    print(points_table(runs, result))
    print()
    print(f"RMS error of TTFT p50, TPOT p50 and output throughput: {result.rms_before:.1%} with "
          f"{base.gpu}'s figures, {result.rms_after:.1%} fitted.")
    print(f"Wrote [gpus.{name}] to {args.output}. Use it with: --profiles {args.output} {flag_of('gpu')} {name}")
    return EXIT_OK


# -- speculative decoding's acceptance ---------------------------------------------------------------

def fit_acceptance(runs: list) -> tuple[list, list[str], list[str]]:
    """Speculative decoding's acceptance per draft position fitted, for each drafter (method,
    model, K), to the runs that carry vllm bench serve's spec_decode keys
    (`sim.speculative.fit_acceptance`); those runs are then replayed with it (the GPU's fit sees
    the acceptance they measured), the others keep the acceptance their config gives. Returns
    (the runs, lines to print, the lines the profile's comment keeps). A run measured with drafts
    but given no speculative config is refused: replayed without drafts it would skew the GPU's
    fit."""
    from sim.speculative import fit_acceptance as fit, with_rates

    groups: dict[tuple, list] = {}
    for run in runs:
        spec, counts = run.scenario.speculative(), run.drafts()
        if spec is None:
            if counts is not None and counts.drafts > 0:
                raise UserError(f"{run.label}: measured with speculative decoding ({counts.drafts:,} drafts in its "
                                "spec_decode keys) but no speculative config is given: add "
                                f"{flag_of('speculative_config')} JSON (or --metadata speculative_config=JSON to the run), else it would be replayed "
                                "without drafts")
            continue
        groups.setdefault((spec.method, spec.model, spec.k), []).append(run)
    out = {id(r): r for r in runs}
    lines, notes = [], []
    for (method, model, k), group in groups.items():
        spec = group[0].scenario.speculative()
        name = f"{method}{f' ({model})' if model else ''}, K={k}"
        given = ", ".join(f"{r:.3f}" for r in spec.acceptance_rates)
        keyed = [r for r in group if r.drafts() is not None and r.drafts().drafts > 0]
        if not keyed:
            lines.append(_fill(f"Speculative decoding {name}: no run carries vllm bench serve's spec_decode keys, so "
                               f"its acceptance is left as given: {given} per position ({spec.acceptance_source})."))
            continue
        try:
            result = fit([r.drafts() for r in keyed], k)
        except ValueError as exc:
            raise UserError(f"{keyed[0].label}: {exc}") from None
        config = with_rates(spec, result.rates)
        for r in keyed:
            out[id(r)] = replace(r, scenario=replace(r.scenario, speculative_config=config))
        how = ("from their per-position rates" if result.per_position else
               "from accepted tokens per draft alone (no per-position rates): a constant acceptance at each "
               "position assumed")
        lines.append(_fill(f"Speculative decoding {name}: acceptance per draft position fitted to {result.drafts:,} "
                           f"drafts in {result.runs} run(s), {how}; replayed with it:"))
        lines.append(f"  {'position':<9} {'given':>7} {'fitted':>7}  {'± (1 sigma)':>11}")
        for i, (rate, sigma) in enumerate(zip(result.rates, result.sigma)):
            lines.append(f"  {i:<9} {spec.acceptance_rates[i]:>7.3f} {rate:>7.3f}  {'± ' + format(sigma, '.3f'):>11}")
        rest = [r.label for r in group if all(r is not x for x in keyed)]
        if rest:
            lines.append(_fill(f"  Without spec_decode keys, {', '.join(rest)} keep the acceptance given: {given} "
                               f"({spec.acceptance_source})."))
        lines.append(f"  Use it with: {flag_of('speculative_config')} '{config}'")
        notes.append(f"speculative decoding {name}: acceptance per position fitted to {result.drafts:,} drafts: "
                     + ", ".join(f"{r:.4f}" for r in result.rates) + f"; {flag_of('speculative_config')} '{config}'")
    return [out[id(r)] for r in runs], lines, notes


def _fill(text: str) -> str:
    import textwrap

    return textwrap.fill(text, width=100, subsequent_indent="  ")


# -- output ---------------------------------------------------------------------------------------


def parameter_table(result) -> str:
    from sim.fit import PARAMETERS, value_text

    rows = [f"{'parameter':<20} {'base':>11} {'fitted':>11}  {'± (1 sigma)':>12}"]
    for p in PARAMETERS:
        base, value = result.base[p.name], result.values[p.name]
        if p.name in result.fitted:
            sigma = result.sigma[p.name]
            spread = ("± " + value_text(p.name, sigma)) if sigma == sigma and sigma != float("inf") else "undetermined"
        elif p.name in result.undetermined:
            spread = "not determined"
        elif p.name in result.hidden:
            spread = "not shown"
        else:
            spread = "(kept)"
        rows.append(f"{p.name:<20} {value_text(p.name, base):>11} {value_text(p.name, value):>11}  {spread:>12}")
    return "\n".join(rows)


def undetermined_lines(result) -> list[str]:
    """One line for each parameter the runs did not determine: what the fit gave, that the base
    value is kept, and which run would pin it."""
    from sim.fit import PARAMETERS, value_text

    lines = []
    for p in PARAMETERS:
        if p.name in result.hidden:
            lines.append(hidden_line(p, result))
        if p.name not in result.undetermined:
            continue
        value, sigma = result.undetermined[p.name]
        sigma_text = value_text(p.name, sigma) if math.isfinite(sigma) else "an unbounded error"
        lines.append(f"{p.name} ({p.label}) is not determined by these runs: the fit gave {value_text(p.name, value)} "
                     f"± {sigma_text}; kept at the base profile's {value_text(p.name, result.base[p.name])}. "
                     f"To pin it, add {o.flagged(p.needs)}.")
    return lines


def hidden_line(p, result) -> str:
    """Why a host cost no run showed is not fitted, what the runs allow of it, and what it is kept
    at."""
    from sim.fit import value_text

    bound, base, kept = result.hidden[p.name], result.base[p.name], result.values[p.name]
    allowed = (f"any value up to {value_text(p.name, bound)} gives the same figures" if math.isfinite(bound)
               else "no value tried changes their figures")
    if kept < base:
        keep = (f"kept at {value_text(p.name, kept)}, the most these runs allow (the base profile's "
                f"{value_text(p.name, base)} would slow them)")
    else:
        keep = f"kept at the base profile's {value_text(p.name, base)}"
    return (f"{p.name} ({p.label}) is not shown by these runs: they ran with async scheduling, under which the "
            f"host's work overlaps the forward pass, and it never took longer than the pass ({allowed}); {keep}. "
            "To measure it, add runs served with --no-async-scheduling, where the host's work adds to every pass.")


def points_table(runs, result) -> str:
    from sim.fit import METRICS

    short = {"median_ttft_ms": "TTFT p50 ms", "median_tpot_ms": "TPOT p50 ms", "output_throughput": "out tok/s"}
    head = f"{'run':<28} {'metric':<12} {'measured':>10} {'before':>10} {'after':>10} {'error':>8}"
    rows = [head, "-" * len(head)]
    for i, run in enumerate(runs):
        # long names keep their ends: a GuideLLM report's runs differ in "#N strategy"
        label = run.label if len(run.label) <= 28 else run.label[:11] + "..." + run.label[-14:]
        for j, (key, _) in enumerate(METRICS):
            meas, before, after = result.measured[i, j], result.before[i, j], result.after[i, j]
            if meas != meas:
                continue
            error = f"{after / meas - 1:+.1%}" if after == after else "-"
            rows.append(f"{label:<28} {short[key]:<12} {_fmt(meas):>10} {_fmt(before):>10} "
                        f"{_fmt(after):>10} {error:>8}")
            label = ""  # on the run's first row only
    return "\n".join(rows)


def _fmt(value: float) -> str:
    if value != value:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"


_NOT_COPIED = ("id", "name", "nvidia_smi_names", "aliases")
"""GpuProfile fields a calibrated table does not copy from its base GPU."""


def profile_text(name: str, gpu, model, result, labels: list[str], notes: list[str] = ()) -> str:
    """A complete [gpus.NAME] table: the base GPU's figures and the fitted values, with a comment
    saying where they came from (and `notes`: what else was fitted, such as the acceptance of
    speculative decoding, which a GPU table does not hold)."""
    from sim.fit import PARAMETERS, value_text

    date = datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"# Calibrated by batchtui calibrate on {date}: {model.name} on {gpu.name} ({gpu.id}),",
             f"# fitted to {len(labels)} measured run(s):"]
    # a file's name, and a GuideLLM report's benchmark; a name's line breaks would end the comment
    lines += ["#   " + "".join(c if c.isprintable() else "?" for c in label) for label in labels]
    lines.append(f"# RMS error of TTFT p50, TPOT p50 and output throughput: {result.rms_before:.1%} with the "
                 f"base figures, {result.rms_after:.1%} fitted.")
    lines += ["# " + "".join(c if c.isprintable() else "?" for c in note) for note in notes]
    lines.append(f"[gpus.{_key(name)}]")
    lines.append(f"name = {_toml_string(gpu.name + ' (calibrated)')}")
    fitted_here = {p.name for p in PARAMETERS}
    for field in fields(gpu):
        # Every figure of the base GPU but those fitted (below) and its names: `--gpu auto` and
        # the base's aliases keep finding the base. What a file cannot say is left out: an
        # unknown price (None) or compute capability (0).
        value = getattr(gpu, field.name)
        if field.name in fitted_here or field.name in _NOT_COPIED or value is None \
                or (field.name == "compute_capability" and not value):
            continue
        lines.append(f"{field.name} = {value!r}")
    for p in PARAMETERS:
        value = result.values[p.name]
        if p.name in result.fitted:
            note = f"  # fitted, ± {value_text(p.name, result.sigma[p.name])}"
        elif p.name in result.undetermined:
            value_fit, sigma = result.undetermined[p.name]
            note = (f"  # kept from the base profile: not determined by these runs (the fit gave "
                    f"{value_text(p.name, value_fit)} ± {value_text(p.name, sigma)})")
        elif p.name in result.hidden:
            bound = result.hidden[p.name]
            most = f"; they allow up to {value_text(p.name, bound)}" if math.isfinite(bound) else ""
            kept = "the most they allow" if value < result.base[p.name] else "kept from the base profile"
            note = f"  # {kept}: hidden behind the forward pass in these runs (async scheduling{most})"
        else:
            note = "  # kept from the base profile"
        lines.append(f"{p.name} = {float(f'{value:.6g}')!r}{note}")
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_string(name)


def _table_header(line: str) -> str | None:
    """The table a `[...]` header line opens, without quotes, or None."""
    m = re.match(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", line)
    if not m:
        return None
    return ".".join(part.strip().strip('"').strip("'") for part in m.group(1).split("."))


def check_output(path: str, name: str) -> None:
    """Before the fit: refuse an --output its table could not be written into afterwards (a
    missing folder, a directory, a read-only file, a file that is not a profile file), as
    `write_profile` would refuse it, so that the fit's minutes are not spent first."""
    check_writable(path, "--output")
    _profile_file(path, name, "")


def write_profile(path: str, name: str, table: str) -> None:
    """Put `table` into the profile file at `path`: replace a [gpus.NAME] table already there
    (with the comment lines just above it), or append; every other line stays as it was. The
    result is checked as a profile file before it replaces the old one."""
    text = _profile_file(path, name, table)
    with output_file(path, "--output") as sink:
        sink.write(text)


def _profile_file(path: str, name: str, table: str) -> str:
    """The text `write_profile` writes, checked as a profile file read from where `path` is (a
    model's `hf_config` is relative to its file's folder); `table` empty: the file without it."""
    from sim.errors import ProfileError
    from sim.profiles import load_profiles

    old = _old_text(path)
    lines = old.splitlines()
    start = next((i for i, line in enumerate(lines) if _table_header(line) == f"gpus.{name}"), None)
    if start is None:
        text = (old.rstrip("\n") + "\n\n" if old.strip() else "") + table
    else:
        end = next((j for j in range(start + 1, len(lines)) if _table_header(lines[j]) is not None), len(lines))
        while end > start + 1 and (lines[end - 1].startswith("#") or not lines[end - 1].strip()):
            end -= 1  # the comments above the next table are that table's
        first = start
        while first > 0 and lines[first - 1].startswith("#"):
            first -= 1
        text = "\n".join(lines[:first]) + ("\n" if first else "") + table + (
            "\n" + "\n".join(lines[end:]) + "\n" if end < len(lines) else "")
    try:
        fd, name_ = tempfile.mkstemp(prefix=".calibrated.", suffix=".toml", dir=Path(path).parent if old else None)
    except OSError as exc:
        raise UserError(f"argument --output: cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    check = Path(name_)
    try:
        check.write_text(text, encoding="utf-8")
        try:
            checked = load_profiles(check)
            if table:
                checked.gpu(name)
        except ProfileError as exc:
            raise UserError(f"argument --output: {path} would not be a valid profile file: "
                            f"{str(exc).replace(str(check), path)}") from None
    finally:
        check.unlink()
    return text


def _old_text(path: str) -> str:
    """What the profile file at `path` holds now: "" when there is none, or when it is standard
    output or a stream (/dev/null, a pipe), written to and never read."""
    if path == "-":
        return ""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return ""
    except FileNotFoundError:
        return ""
    except OSError:
        pass  # read_text says why, in the words every file a user names gets
    from sim.userfiles import FileRefused, read_text

    try:
        return read_text(Path(path), "profiles")  # bounded, as every file a user names
    except FileRefused as exc:
        raise UserError(f"argument --output: {exc}") from None
