"""Regenerate tests/data/vllm-flags.txt: every flag of `vllm serve` and `vllm bench serve`, read
from vLLM's own argument definitions.

Where the source comes from: vLLM's wheel on PyPI, fetched with pip's ordinary client, e.g.

    pip download --no-deps vllm==0.33.0 -d /tmp/vllm-wheel
    python tools/vllm_flags_from_source.py /tmp/vllm-wheel/vllm-0.33.0-*.whl

(an unpacked source tree, holding vllm/, works too). Nothing is imported or run from it: the
Python files are parsed (ast) and the `add_argument` calls of the functions that build the two
commands' parsers are read, with the dataclass fields that become `--field-name` flags. A call
whose spelling cannot be read stops the script, naming it, so a change in vLLM's layout is seen
rather than skipped.

Flags of earlier releases already in the file and gone from this one are kept, marked
"serve-older" / "bench-older": published command lines still carry them.

Stdlib only; writes the file through a temporary file renamed into place.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests/data/vllm-flags.txt"

# command -> (file, function) whose add_argument calls build the command's parser, in vLLM's
# order; "Class.method" for a method. Module-level functions they call in the same files are
# followed (add_dataset_parser -> add_random_dataset_base_args ...).
SOURCES = {
    "serve": [
        ("vllm/entrypoints/common/cli_args.py", "make_arg_parser"),
        ("vllm/entrypoints/common/cli_args.py", "BaseFrontendArgs.add_cli_args"),
        ("vllm/engine/arg_utils.py", "EngineArgs.add_cli_args"),
        ("vllm/engine/arg_utils.py", "AsyncEngineArgs.add_cli_args"),
    ],
    "bench": [
        ("vllm/benchmarks/serve.py", "add_cli_args"),
    ],
}
# Files whose module-level functions a command's functions may call.
HELPERS = {
    "serve": ["vllm/entrypoints/common/cli_args.py", "vllm/engine/arg_utils.py"],
    "bench": ["vllm/benchmarks/serve.py", "vllm/benchmarks/datasets/datasets.py",
              "vllm/benchmarks/datasets.py"],
}
# A function that adds one flag per dataclass field (f"--{key.replace('_', '-')}" in a loop over
# get_kwargs(cls)): the class vLLM calls it on, and that class's file.
FIELD_LOOPS = {
    "BaseFrontendArgs.add_cli_args": ("vllm/entrypoints/common/cli_args.py", "FrontendArgs"),
}
# vLLM's FlexibleArgumentParser rewrites "-O3", "-O=3" and "-O 3" to "--optimization-level 3"
# before parsing: -O is a spelling of that flag (checked in its source, not assumed).
REWRITES = {"serve": ("vllm/utils/argparse_utils.py", "-O", "--optimization-level",
                      ('arg.startswith("-O")', '"--optimization-level"'))}


class Source:
    """The Python files of a wheel or a source tree."""

    def __init__(self, where: Path):
        self.where = where
        self.zip = zipfile.ZipFile(where) if where.is_file() else None

    def has(self, name: str) -> bool:
        if self.zip is not None:
            return name in self.zip.namelist()
        return (self.where / name).is_file()

    def read(self, name: str) -> str:
        if self.zip is not None:
            return self.zip.read(name).decode()
        return (self.where / name).read_text()

    def version(self) -> str:
        for name in ("vllm/_version.py",):
            if self.has(name):
                text = self.read(name)
                version = re.search(r"__version__ = version = '([^']+)'", text)
                commit = re.search(r"__commit_id__ = commit_id = '([^']+)'", text)
                return (version.group(1) if version else "?") + (f" (commit {commit.group(1)})" if commit else "")
        return "unknown version"


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{node.name}.{item.name}"] = item
    return out


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _fields(classes: dict[str, ast.ClassDef], name: str) -> list[str]:
    """A dataclass's fields, its bases' first (as dataclasses.fields orders them)."""
    cls = classes[name]
    out: list[str] = []
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            out += [f for f in _fields(classes, base.id) if f not in out]
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if "ClassVar" in ast.unparse(item.annotation):
                continue
            if item.target.id not in out:
                out.append(item.target.id)
    return out


def _calls_in_order(node: ast.AST) -> list[ast.Call]:
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def flags_of(src: Source, command: str) -> list[tuple[str, list[str]]]:
    """[(long spelling or positional name, short spellings)] of one command, in vLLM's order."""
    trees = {name: ast.parse(src.read(name)) for name in HELPERS[command] if src.has(name)}
    helpers = {}
    for name, tree in trees.items():
        for fname, fn in _functions(tree).items():
            if "." not in fname:
                helpers.setdefault(fname, fn)
    out: list[tuple[str, list[str]]] = []
    seen_fns: set[int] = set()

    def walk(fn: ast.FunctionDef, qualname: str, path: str) -> None:
        if id(fn) in seen_fns:
            return
        seen_fns.add(id(fn))
        for call in _calls_in_order(fn):
            func = call.func
            if isinstance(func, ast.Name) and func.id in helpers:
                walk(helpers[func.id], func.id, path)
                continue
            if not (isinstance(func, ast.Attribute) and func.attr == "add_argument"):
                continue
            names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if any(isinstance(a, ast.JoinedStr) for a in call.args) and qualname in FIELD_LOOPS:
                file, cls = FIELD_LOOPS[qualname]
                classes = _classes(ast.parse(src.read(file)))
                out.extend((f"--{field.replace('_', '-')}", []) for field in _fields(classes, cls))
                continue
            if not names:
                raise SystemExit(f"{path}:{call.lineno}: an add_argument call whose spelling cannot be read: "
                                 f"{ast.unparse(call)[:120]}")
            longs = [n for n in names if n.startswith("--")]
            shorts = [n for n in names if n.startswith("-") and not n.startswith("--")]
            if not longs and not shorts:  # a positional argument
                out.append((names[0], []))
            else:
                out.append(((longs or shorts)[0], longs[1:] + (shorts if longs else shorts[1:])))

    for path, qualname in SOURCES[command]:
        if not src.has(path):
            raise SystemExit(f"{src.where}: no {path} (vLLM's layout changed: update SOURCES)")
        fns = _functions(ast.parse(src.read(path)))
        if qualname not in fns:
            raise SystemExit(f"{path}: no {qualname} (vLLM's layout changed: update SOURCES)")
        walk(fns[qualname], qualname, path)
    unique: dict[str, list[str]] = {}
    for flag, short in out:
        unique.setdefault(flag, short)
    if command in REWRITES:
        path, short, flag, marks = REWRITES[command]
        if flag in unique and src.has(path) and all(mark in src.read(path) for mark in marks):
            unique[flag] = unique[flag] + [short]
    return list(unique.items())


def earlier(text: str) -> list[tuple[str, str, list[str]]]:
    """(command, flag, short spellings) of every flag line of the current file."""
    rows = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            command, flag, *short = line.split()
            rows.append((command.removesuffix("-older"), flag, short))
    return rows


def render(src: Source, current: dict[str, list[tuple[str, list[str]]]],
           older: list[tuple[str, str, list[str]]]) -> str:
    lines = [
        "# Every flag of `vllm serve` and `vllm bench serve`, read from vLLM's own argument definitions by",
        "# tools/vllm_flags_from_source.py (rerun it to refresh this file; its docstring says how to get the",
        f"# source). Read from: vLLM {src.version()}, the wheel on PyPI:",
    ]
    for command, parts in SOURCES.items():
        lines.append(f"#   {command}: " + "; ".join(f"{path} ({fn})" for path, fn in parts)
                     + " and the functions they call")
    lines += [f"#   FrontendArgs' fields become --field-name flags ({', '.join(FIELD_LOOPS)}).",
              *(f"#   {short} is {flag}, as {path} rewrites it before parsing."
                for path, short, flag, _ in REWRITES.values()),
              "# One flag a line: command, long spelling (as written in the source), short spellings.",
              "# \"serve-older\" / \"bench-older\": a flag of an earlier release that this one no longer has",
              "# (published command lines still carry them)."]
    for command in SOURCES:
        lines += [" ".join([command, flag, *short]) for flag, short in current[command]]
    lines += [" ".join([f"{command}-older", flag, *short]) for command, flag, short in older]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="vLLM's wheel (.whl) or an unpacked tree holding vllm/")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    src = Source(args.source)
    current = {command: flags_of(src, command) for command in SOURCES}
    now = {(command, flag.replace("_", "-")) for command, rows in current.items() for flag, _ in rows}
    older = []
    if args.out.exists():
        for command, flag, short in earlier(args.out.read_text()):
            key = (command, flag.replace("_", "-"))
            if key not in now and key not in {(c, f) for c, f, _ in older}:
                older.append((command, flag, short))
    text = render(src, current, older)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=".vllm-flags.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    counts = ", ".join(f"{command} {len(rows)}" for command, rows in current.items())
    print(f"{args.out}: vLLM {src.version()}: {counts} flags; {len(older)} of earlier releases kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
