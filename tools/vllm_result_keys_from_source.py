"""Regenerate tests/data/vllm-bench-result-keys.txt: every key `vllm bench serve --save-result`
writes into its result file, read from vLLM's own `vllm/benchmarks/serve.py`, with the condition
under which it writes each.

Where the source comes from: vLLM's wheel on PyPI, fetched with pip's ordinary client, e.g.

    pip download --no-deps vllm==0.33.0 -d /tmp/vllm-wheel
    python tools/vllm_result_keys_from_source.py /tmp/vllm-wheel/vllm-0.33.0-*.whl

(an unpacked source tree, holding vllm/, works too). Nothing is imported or run from it: the file
is parsed (ast) and read where the result is built:

- in `main_async`, `result_json["key"] = ...` (the run's setup; `--metadata` entries are written
  under their own names), then the benchmark's result merged in;
- in `benchmark`, the `result = {...}` dicts, `result["key"] = ...`, `result.update(...)` of a
  dict built in the same file (`_get_server_metrics_results`, `probe_stats`), and the statistics
  `process_one_metric(name, ...)` writes (`mean_{metric}_ms` ...), once per metric it is called
  for;
- the per-request arrays `main_async` deletes unless `--save-detailed`.

Each key's condition is the source text of the `if` tests around it (`not (...)` in an `else`),
innermost last, joined with " and " ("always" when there is none). A layout this script does not
recognise stops it, naming what it met, so a change in vLLM is seen rather than skipped.

Stdlib only; writes the file through a temporary file renamed into place.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests/data/vllm-bench-result-keys.txt"
SOURCE = "vllm/benchmarks/serve.py"


def read_source(where: str) -> tuple[str, str]:
    """(serve.py's text, a description of where it came from)."""
    path = Path(where)
    if path.is_dir():
        return (path / SOURCE).read_text(encoding="utf-8"), f"{path} (unpacked)"
    with zipfile.ZipFile(path) as wheel:
        return wheel.read(SOURCE).decode("utf-8"), f"{path.name} (the wheel on PyPI)"


def _function(tree: ast.AST, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise SystemExit(f"{SOURCE}: no function {name}(): vLLM's layout changed")


def _walk(body: list[ast.stmt], conditions: tuple[str, ...] = ()):
    """(statement, the conditions around it) for every statement of `body`, into ifs, loops and
    withs (not into nested functions)."""
    for stmt in body:
        yield stmt, conditions
        if isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            yield from _walk(stmt.body, conditions + (test,))
            yield from _walk(stmt.orelse, conditions + (f"not ({test})",))
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            yield from _walk(stmt.body, conditions)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
            yield from _walk(stmt.body, conditions)
            for handler in getattr(stmt, "handlers", []):
                yield from _walk(handler.body, conditions)


def _condition(conditions: tuple[str, ...]) -> str:
    return " and ".join(conditions) if conditions else "always"


def _subscript_key(target: ast.expr, name: str) -> ast.expr | None:
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
        return target.slice
    return None


def _dict_keys(node: ast.Dict) -> list[str]:
    keys = []
    for key in node.keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise SystemExit(f"{SOURCE}: a result dict key that is not a string: {ast.unparse(key)}")
        keys.append(key.value)
    return keys


def _returned_dict(function: ast.FunctionDef) -> list[str]:
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict) and node.value.keys:
            return _dict_keys(node.value)
    raise SystemExit(f"{SOURCE}: {function.name}() returns no dict of keys")


def keys(source: str) -> list[tuple[str, str, str]]:
    """(kind, key, condition): kind "setup", "result", "metric" (a statistic per metric: the key
    has `{metric}` in it), "metric-call" (a metric the statistics are written for), "detailed"
    (an array kept only with --save-detailed)."""
    tree = ast.parse(source)
    out: list[tuple[str, str, str]] = []
    main = _function(tree, "main_async")
    for stmt, conditions in _walk(main.body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                key = _subscript_key(target, "result_json")
                if key is None:
                    continue
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out.append(("setup", key.value, _condition(conditions)))
                elif any(isinstance(n, ast.Name) and n.id == "kvstring" for n in ast.walk(key)):
                    out.append(("setup", "{metadata}", _condition(conditions)))
                else:
                    raise SystemExit(f"{SOURCE}: result_json[{ast.unparse(key)}]: a key this script cannot read")
        if isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.List) and any(
                isinstance(n, ast.Delete) for n in ast.walk(stmt)):
            for element in stmt.iter.elts:
                out.append(("detailed", element.value, _condition(conditions)))
    bench = _function(tree, "benchmark")
    helpers = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    dicts = {}  # local name -> keys of the dict literal assigned to it (probe_stats ...)
    for stmt, conditions in _walk(bench.body):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict) and stmt.value.keys:
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    dicts[target.id] = _dict_keys(stmt.value)
                    if target.id == "result":
                        out += [("result", k, _condition(conditions)) for k in _dict_keys(stmt.value)]
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                key = _subscript_key(target, "result")
                if key is None:
                    continue
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    raise SystemExit(f"{SOURCE}: result[{ast.unparse(key)}]: a key this script cannot read")
                out.append(("result", key.value, _condition(conditions)))
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "update"
                and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == "result"):
            arg = stmt.value.args[0]
            if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id in helpers:
                helper = helpers[arg.func.id]
                out += [("result", k, _condition(conditions + (f"{arg.func.id}() is not empty",)))
                        for k in _returned_dict(helper)]
            elif isinstance(arg, ast.Name) and arg.id in dicts:
                out += [("result", k, _condition(conditions)) for k in dicts[arg.id]]
            else:
                raise SystemExit(f"{SOURCE}: result.update({ast.unparse(arg)}): keys this script cannot read")
        if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "process_one_metric"):
            name = stmt.value.args[0]
            out.append(("metric-call", name.value, _condition(conditions)))
    metric = next((f for f in ast.walk(bench) if isinstance(f, ast.FunctionDef) and f.name == "process_one_metric"),
                  None)
    if metric is None:
        raise SystemExit(f"{SOURCE}: benchmark() has no process_one_metric(): vLLM's layout changed")
    attribute = metric.args.args[0].arg
    for node in ast.walk(metric):
        if isinstance(node, ast.Assign):
            key = _subscript_key(node.targets[0], "result")
            if isinstance(key, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else
                               "{metric}" if ast.unparse(v.value) == attribute else "{percentile}"
                               for v in key.values)
                out.append(("metric", text, "the metric is in --percentile-metrics"
                            + (" (each --metric-percentiles)" if "{percentile}" in text else "")))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", help="vLLM's wheel, or an unpacked source tree holding vllm/")
    args = p.parse_args()
    text, where = read_source(args.source)
    rows = keys(text)
    lines = [
        "# Every key `vllm bench serve --save-result` writes, read from vLLM's own source by",
        "# tools/vllm_result_keys_from_source.py (rerun it to refresh this file; its docstring says how",
        f"# to get the source). Read from: {SOURCE} of {where}.",
        "# One key a line: kind | key | the condition around it in the source (\"always\": none).",
        "# kind: setup (main_async's result_json), result (benchmark()'s result), metric (a statistic",
        "# written per metric: {metric} and {percentile} are filled in), metric-call (a metric the",
        "# statistics are written for), detailed (an array deleted unless --save-detailed).",
    ]
    lines += [f"{kind} | {key} | {condition}" for kind, key, condition in rows]
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=OUT.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, OUT)
    print(f"{OUT.relative_to(ROOT)}: {len(rows)} keys", file=sys.stderr)


if __name__ == "__main__":
    main()
