"""Command lines copied unchanged from public benchmark write-ups and vLLM's own documentation
replay in `batchtui sim` (the lines pasted after it): each runs, or is refused for a reason the
manual documents. Each source's address is given with its lines. A shell loop's variable is
written as the shell expands it on one pass; nothing else is changed. Every line runs in well
under ten seconds here (the longest, 1,280 requests, in about two), so none is shortened."""

from __future__ import annotations

import json
import shlex

import pytest

from batchtui.cli import main

PUBLISHED = [
    {   # a concurrency sweep's C=64 pass
        "source": "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on",
        "lines": ["vllm serve meta-llama/Llama-3.1-8B-Instruct",
                  "vllm bench serve --model meta-llama/Llama-3.1-8B-Instruct \\\n"
                  "--dataset-name random --random-input-len 1024 --random-output-len 128 \\\n"
                  "--ignore-eos --max-concurrency 64 --num-prompts 1280 \\\n"
                  "--request-rate inf --metadata vllm=0.23.0 gpu=a100-40gb \\\n"
                  "--save-result --result-filename sweep_c64.json"],
        "files": ["sweep_c64.json"],
    },
    {
        "source": "https://learn.arm.com/learning-paths/servers-and-cloud-computing/vllm-benchmark-quantisation/"
                  "4-benchmarking/",
        "lines": ["vllm serve \\\n  --model meta-llama/Llama-3.1-8B \\\n  --max-num-batched-tokens 8192 \\\n"
                  "  --max-model-len 4096",
                  "vllm bench serve \\\n  --model meta-llama/Llama-3.1-8B \\\n  --dataset-name sharegpt \\\n"
                  "  --dataset-path ./ShareGPT_V3_unfiltered_cleaned_split.json \\\n  --num-prompts 256 \\\n"
                  "  --request-rate 8 \\\n  --max-concurrency 10 \\\n  --top-p 1 --temperature 0 \\\n"
                  "  --percentile-metrics ttft,tpot \\\n  --metric-percentiles 50,95,99 \\\n"
                  "  --save-result --result-dir bench_out --result-filename serve.json"],
        "files": ["bench_out/serve.json"],
    },
    {   # the vllm-project/vllm-skills bench-serve skill
        "source": "https://skill4agent.com/en/skill/vllm-project-vllm-skills/vllm-bench-serve/compare",
        "lines": ["vllm bench serve \\\n--backend openai-chat \\\n--host 127.0.0.1 \\\n--port 8000 \\\n"
                  "--model Qwen/Qwen2.5-1.5B-Instruct \\\n--endpoint /v1/chat/completions \\\n--save-result \\\n"
                  "--result-dir ./bench-results \\\n--metadata \"version=0.6.0\" \"tp=1\""],
        "dirs": ["bench-results"],
    },
    {   # vLLM's CLI guide
        "source": "https://docs.vllm.ai/en/latest/cli/index.html",
        "lines": ["vllm serve meta-llama/Llama-2-7b-hf --port 8100"],
    },
    {
        "source": "https://docs.vllm.ai/en/latest/cli/index.html",
        "lines": ["vllm serve meta-llama/Llama-2-7b-hf --uds /tmp/vllm.sock"],
    },
    {   # the CLI usage page of vLLM's documentation mirror
        "source": "https://www.mintlify.com/vllm-project/vllm/serving/cli-usage",
        "lines": ["vllm serve meta-llama/Llama-3.2-1B-Instruct \\\n  --dtype auto \\\n  --max-model-len 4096 \\\n"
                  "  --trust-remote-code"],
    },
    {
        "source": "https://www.mintlify.com/vllm-project/vllm/serving/cli-usage",
        "lines": ["vllm serve meta-llama/Llama-3.2-1B-Instruct \\\n  --data-parallel-size 4 \\\n"
                  "  --tensor-parallel-size 2"],
        "refused": "argument --data-parallel-size: 4 is not simulated: several engine replicas",
    },
    {   # a served model name and a local tokenizer path: no config to build the model from
        "source": "http://en.pswp.cn/web/95877.shtml",
        "lines": ["vllm bench serve \\\n--backend vllm \\\n--base-url http://127.0.0.1:9400 \\\n"
                  "--endpoint /v1/completions \\\n--dataset-name random \\\n--model qwen32b \\\n"
                  "--tokenizer /mnt/data/models/DeepSeek-R1-Distill-Qwen-32B \\\n--seed 12345 \\\n"
                  "--random-input-len 2048 \\\n--random-output-len 2048 \\\n--num-prompts 16 \\\n"
                  "--request-rate 8 \\\n--metric-percentiles 95,99 \\\n--trust-remote-code"],
        "refused": "argument --model: qwen32b is not a known model",
    },
]


def sharegpt(path):
    word = "word "
    convs = [{"conversations": [{"from": "human", "value": word * (20 + 7 * i)},
                                {"from": "gpt", "value": word * (40 + 11 * i)}]} for i in range(50)]
    path.write_text(json.dumps(convs))


@pytest.mark.parametrize("case", PUBLISHED, ids=lambda c: c["source"].split("/")[2] + ":" + c["lines"][0][:30])
def test_a_published_command_line_replays(case, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sharegpt(tmp_path / "ShareGPT_V3_unfiltered_cleaned_split.json")
    # As the shell reads them: a backslash at the end of a line continues it.
    words = [w for line in case["lines"] for w in shlex.split(line.replace("\\\n", " "))]
    code = main(["sim", *words])
    out, err = capsys.readouterr()
    if "refused" in case:
        assert code == 2 and case["refused"] in err and err.count("\n") == 1, err
        return
    assert code == 0, err
    assert "Successful requests:" in out and "Traceback" not in err
    for name in case.get("files", []):
        assert json.loads((tmp_path / name).read_text())["completed"] > 0
    for name in case.get("dirs", []):
        assert len(list((tmp_path / name).glob("*.json"))) == 1


def test_the_refusals_are_the_documented_ones():
    from pathlib import Path

    from tools import docs_tables

    manual = docs_tables.page("vllm-flags.md")
    assert "several engine replicas behind one server" in manual
    assert "any model runs from its Hugging Face config.json" in manual
