"""tools/vllm_flags_from_source.py reads vLLM's argument definitions without importing them: run
on a small tree laid out as vLLM's, it finds every spelling, keeps the flags of earlier releases and
stops at a call it cannot read."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tool():
    spec = importlib.util.spec_from_file_location("vllm_flags_from_source", ROOT / "tools/vllm_flags_from_source.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FILES = {
    "vllm/_version.py": "__version__ = version = '9.9.0'\n__commit_id__ = commit_id = 'gabc'\n",
    "vllm/utils/argparse_utils.py": """
        def parse(arg):
            if arg.startswith("-O"):
                return ["--optimization-level", arg[2:]]
        """,
    "vllm/entrypoints/common/cli_args.py": """
        class BaseFrontendArgs:
            lora_modules: list | None = None
            tokens_only: bool = False

            @classmethod
            def add_cli_args(cls, parser):
                kwargs = get_kwargs(cls)
                for key, value in kwargs.items():
                    parser.add_argument(*value.pop("flags", []), f"--{key.replace('_', '-')}", **value)

        class FrontendArgs(BaseFrontendArgs):
            host: str | None = None
            port: int = 8000
            NOT_A_FLAG: "ClassVar[int]" = 3

        def get_kwargs(cls):
            return {}

        def make_arg_parser(parser):
            parser.add_argument("model_tag", nargs="?")
            parser.add_argument("--api-server-count", "-asc", type=int)
            FrontendArgs.add_cli_args(parser)
        """,
    "vllm/engine/arg_utils.py": """
        class EngineArgs:
            @staticmethod
            def add_cli_args(parser):
                group = parser.add_argument_group("ModelConfig")
                group.add_argument("--model")
                group.add_argument("--tensor-parallel-size", "-tp", type=int)
                group.add_argument("--optimization-level")
                group.add_argument("--gpu-memory-utilization", "--device-memory-utilization")

        class AsyncEngineArgs(EngineArgs):
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--enable-log-requests")
        """,
    "vllm/benchmarks/serve.py": """
        from vllm.benchmarks.datasets import add_dataset_parser

        def add_cli_args(parser):
            add_dataset_parser(parser)
            parser.add_argument("--label")
        """,
    "vllm/benchmarks/datasets/datasets.py": """
        def add_dataset_parser(parser):
            parser.add_argument("--seed", type=int)
            add_random_args(parser)

        def add_random_args(parser):
            parser.add_argument("--random-input-len", type=int)
        """,
}


def tree(tmp_path: Path, **changes: str) -> Path:
    for name, text in {**FILES, **changes}.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path / "src"


def flag_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def test_reads_every_spelling_and_keeps_earlier_releases_flags(tmp_path, capsys):
    out = tmp_path / "flags.txt"
    out.write_text("# old header\nserve --model\nserve --num-scheduler-steps\nbench --sonnet-input-len\n")
    assert tool().main([str(tree(tmp_path)), "--out", str(out)]) == 0
    assert flag_lines(out) == [
        "serve model_tag",
        "serve --api-server-count -asc",
        "serve --lora-modules",  # the base class's fields first, as dataclasses.fields orders them
        "serve --tokens-only",
        "serve --host",
        "serve --port",
        "serve --model",
        "serve --tensor-parallel-size -tp",
        "serve --optimization-level -O",  # vLLM's parser rewrites -O3 to --optimization-level 3
        "serve --gpu-memory-utilization --device-memory-utilization",
        "serve --enable-log-requests",
        "bench --seed",  # add_dataset_parser, then what it calls, then the rest of add_cli_args
        "bench --random-input-len",
        "bench --label",
        "serve-older --num-scheduler-steps",
        "bench-older --sonnet-input-len",
    ]
    assert "vLLM 9.9.0 (commit gabc)" in out.read_text()
    assert "serve 11, bench 3 flags; 2 of earlier releases kept" in capsys.readouterr().out


def test_a_call_it_cannot_read_stops_it_and_leaves_the_file(tmp_path):
    out = tmp_path / "flags.txt"
    out.write_text("serve --model\n")
    src = tree(tmp_path, **{"vllm/benchmarks/serve.py": """
        NAMES = ["--label"]

        def add_cli_args(parser):
            parser.add_argument(*NAMES)
        """})
    with pytest.raises(SystemExit, match=r"serve.py:5: an add_argument call whose spelling cannot be read"):
        tool().main([str(src), "--out", str(out)])
    assert out.read_text() == "serve --model\n"


def test_a_moved_function_is_named(tmp_path):
    src = tree(tmp_path, **{"vllm/engine/arg_utils.py": "class EngineArgs:\n    pass\n"})
    with pytest.raises(SystemExit, match="no EngineArgs.add_cli_args"):
        tool().main([str(src), "--out", str(tmp_path / "flags.txt")])
