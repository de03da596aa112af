"""`batchtui serve` as vLLM 0.33's twin (issue 42, item 2): /tokenize and /detokenize in vLLM's
shapes, with vLLM's bench client's own prompt alignment; chats counted on the models' templates;
every vllm: metric vLLM 0.33 exposes that the engine can know, against the list taken from vLLM's
source (tests/data/vllm-metrics.txt); every field of vLLM's request models honoured or refused
(the table `batchtui.serve.fields`, against tests/data/vllm-request-fields.txt and the manual).

The servers run in this process, on a thread of their own (an event loop each), on a free port of
127.0.0.1, at a time scale that answers in milliseconds; the clients are plain HTTP."""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtui.serve import fields, templates, tokens
from sim.workload import estimate_tokens

pytest.importorskip("aiohttp")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
pytestmark = pytest.mark.wall_clock("servers")


class Served:
    """A `batchtui serve` in this process: its event loop on a thread, `cmd_serve.start` on it."""

    def __init__(self, *flags: str, scale: str = "100") -> None:
        from batchtui.cli import cmd_serve
        from batchtui.cli.parser import build_parser
        from batchtui.cli.setup import build_setup

        args = build_parser("serve").parse_args(["serve", "--port", "0", "--time-scale", scale, *flags])
        args.model = args.model or args.model_tag
        setup = build_setup(args, traffic=False)
        name = args.served_model_name or setup.deployment.model.hf_id
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.served = asyncio.run_coroutine_threadsafe(cmd_serve.start(args, setup, name), self.loop).result(60)
        self.url = "http://" + self.served.line.split("http://")[1].split(",")[0]

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.served.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def post(self, path: str, body: dict, expect: int = 200) -> dict:
        data = json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, payload = r.status, r.read()
        except urllib.error.HTTPError as exc:
            status, payload = exc.code, exc.read()
        assert status == expect, (status, payload[:500])
        return json.loads(payload)

    def events(self, path: str, body: dict) -> list:
        """A streamed answer's server-sent events, parsed (without the final [DONE])."""
        data = json.dumps({**body, "stream": True}).encode()
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        out = []
        with urllib.request.urlopen(req, timeout=60) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("data: "):
                    out.append(line[6:])
        assert out[-1] == "[DONE]"
        return [json.loads(e) for e in out[:-1]]

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as r:
            return r.read().decode()


@pytest.fixture(scope="module")
def server():
    s = Served()
    yield s
    s.stop()


def refused(server, path: str, body: dict, param: str, message: str) -> None:
    """A 400 in vLLM's error shape naming `param`, its message holding `message`."""
    err = server.post(path, body, 400)["error"]
    assert err["code"] == 400 and err["type"] == "BadRequestError" and err["param"] == param, err
    assert message in err["message"], err


# -- /tokenize and /detokenize -------------------------------------------------------------------------

def test_tokenize_and_detokenize_answer_in_vllms_shapes(server):
    r = server.post("/tokenize", {"model": MODEL, "prompt": "Hello world, how are you?", "return_token_strs": True})
    assert set(r) == {"count", "max_model_len", "tokens", "token_strs"} and r["max_model_len"] == 131072
    # Llama 3's tokenizer puts its begin-of-text token first unless add_special_tokens is false
    assert r["token_strs"] == ["<|begin_of_text|>", "Hello", " world", ",", " how", " are", " you", "?"]
    assert r["count"] == len(r["tokens"]) == 8
    bare = server.post("/tokenize", {"prompt": "Hello world, how are you?", "add_special_tokens": False})
    assert bare["tokens"] == r["tokens"][1:] and bare["token_strs"] is None
    assert server.post("/detokenize", {"model": MODEL, "tokens": r["tokens"]}) == \
        {"prompt": "<|begin_of_text|>Hello world, how are you?"}
    refused(server, "/detokenize", {"tokens": [200, 9906]}, "tokens", "Token id 200 is out of vocabulary")
    assert server.post("/tokenize", {"model": "other", "prompt": "x"}, 404)["error"]["type"] == "NotFoundError"
    refused(server, "/tokenize", {"prompt": 3}, "prompt", "Input should be a valid string")


def test_tokenize_counts_what_the_completion_counts(server):
    text = "The quick brown fox jumps over the lazy dog, twice; supercalifragilistic 12345 __init__\n\n  end"
    r = server.post("/tokenize", {"prompt": text})
    done = server.post("/v1/completions", {"prompt": text, "max_tokens": 1})
    assert done["usage"]["prompt_tokens"] == r["count"] == estimate_tokens(text) + 1
    chat = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]}
    t = server.post("/tokenize", chat)
    c = server.post("/v1/chat/completions", {**chat, "max_tokens": 1})
    assert c["usage"]["prompt_tokens"] == t["count"]
    hello = server.post("/tokenize", {"messages": [{"role": "user", "content": "Hello"}]})
    assert hello["count"] == 36  # (the manual's figure: 25 for the system turn, 6 the message, 5 the header)
    assert server.post("/detokenize", {"tokens": t["tokens"]})["prompt"].startswith(
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n")


def _bench_prompt(rng: random.Random, words: int) -> str:
    """Text like vllm bench serve's random prompts (decoded random token ids): glued word pieces,
    digits, punctuation."""
    pieces = ["ing", " the", "ation", " Const", "ructor", " 2024", ".", "?!", " über", "_id", "Tok", " en", "\n",
              " (", "ä", " ->", "xyz", " 7", "olog", "ies"]
    return "".join(rng.choice(pieces) for _ in range(words))


def test_vllm_bench_aligns_its_prompts_through_tokenize(server):
    """vLLM 0.33's `vllm bench serve` (benchmarks/serve.py, _align_prompts_to_server_tokenizer)
    for the random and prefix_repetition datasets: it tokenizes its first prompt on the server
    ({"model", "prompt", "add_special_tokens": false}, reading "tokens"); when the count differs
    from the prompt's length it tokenizes every prompt, and one with more tokens than its length
    is replaced by /detokenize ({"model", "tokens"}, reading "prompt") of its first tokens. The
    prompts it sends then count exactly their lengths here."""
    rng = random.Random(7)
    wanted = [rng.randint(20, 200) for _ in range(12)]
    prompts = [_bench_prompt(rng, 2 * n) for n in wanted]

    def tokenize(prompt: str) -> list[int]:
        return server.post("/tokenize", {"model": MODEL, "prompt": prompt, "add_special_tokens": False})["tokens"]

    first = tokenize(prompts[0])
    assert len(first) != wanted[0]  # (the client's tokenizer is not the server's: it re-aligns)
    aligned = []
    for prompt, n in zip(prompts, wanted, strict=True):
        ids = tokenize(prompt)
        assert len(ids) > n  # (these prompts are longer than their lengths, as the random dataset's are)
        aligned.append(server.post("/detokenize", {"model": MODEL, "tokens": ids[:n]})["prompt"])
    for prompt, n in zip(aligned, wanted, strict=True):
        assert len(tokenize(prompt)) == n
        done = server.post("/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": 2,
                                                "ignore_eos": True})
        assert done["usage"]["prompt_tokens"] == n + 1  # and the begin-of-text token vLLM adds for a Llama


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=200), k=st.integers(min_value=0, max_value=400),
       special=st.booleans())
def test_a_prefix_of_the_ids_decodes_to_a_text_of_that_many_tokens(text, k, special):
    tok = tokens.Tokenizer(tokens.LLAMA3)
    if special:
        text = text[:len(text) // 2] + "<|eot_id|>" + text[len(text) // 2:]
    ids = tok.encode(text)
    assert tok.decode(ids) == text and len(ids) == tok.count(text)
    k = min(k, len(ids))
    assert tok.count(tok.decode(ids[:k])) == k
    assert tok.encode(tok.decode(ids[:k])) == ids[:k]


# -- chats on the models' templates ---------------------------------------------------------------------

def _count(text: str, specials: tuple[str, ...]) -> int:
    """Tokens of a text the test lays out: each special token one, the rest by the rule."""
    total = 0
    for part in re.split("(" + "|".join(re.escape(s) for s in specials) + ")", text):
        if part:
            total += 1 if part in specials else estimate_tokens(part)
    return total


def test_a_llama_3_chat_is_counted_on_its_template(server):
    """The layout of Llama 3.1 Instruct's chat template (tokenizer_config.json), written out here."""
    chat = [{"role": "user", "content": "  What is continuous batching?  "},
            {"role": "assistant", "content": "Scheduling at every step."}, {"role": "user", "content": "Why?"}]
    laid = ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is continuous batching?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nScheduling at every step.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n")
    want = _count(laid, tokens.LLAMA3.specials)
    r = server.post("/v1/chat/completions", {"model": MODEL, "messages": chat, "max_completion_tokens": 2})
    assert r["usage"]["prompt_tokens"] == want
    assert server.post("/detokenize", {"tokens": server.post("/tokenize", {"messages": chat})["tokens"]})["prompt"] == laid
    # without the generation prompt, the assistant's header is left out
    head = _count("<|start_header_id|>assistant<|end_header_id|>\n\n", tokens.LLAMA3.specials)
    assert server.post("/tokenize", {"messages": chat, "add_generation_prompt": False})["count"] == want - head
    # the request's own system message replaces nothing: it follows the date lines
    sys_chat = [{"role": "system", "content": "Be brief."}, *chat]
    assert server.post("/tokenize", {"messages": sys_chat})["count"] == want + estimate_tokens("Be brief.")
    refused(server, "/v1/chat/completions", {"messages": chat, "add_generation_prompt": True,
                                             "continue_final_message": True}, "continue_final_message",
            "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")


def test_a_qwen_chat_is_counted_on_its_template():
    """Qwen2.5 Instruct's layout: ChatML turns and its default system message."""
    tok = tokens.Tokenizer(tokens.family_of("Qwen/Qwen2.5-7B-Instruct"))
    assert tok.family is tokens.QWEN2 and tok.bos_id is None
    chat = [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": [{"type": "text", "text": "One"}, {"type": "text", "text": "two"}]}]
    laid = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nOne\ntwo<|im_end|>\n<|im_start|>assistant\n")
    parts = templates.render("qwen2.5", chat)
    assert "".join(text for _, text in parts) == laid
    assert sum(tok.count(text) for _, text in parts) == _count(laid, tokens.QWEN2.specials)


messages = st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["system", "user", "assistant", "tool", "developer"]),
    "content": st.one_of(st.none(), st.text(max_size=40))}), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None)
@given(chat=messages, template=st.sampled_from(["llama3", "qwen2.5", "chatml"]), gen=st.booleans())
def test_a_chats_parts_add_up_to_its_whole(chat, template, gen):
    """A chat's parts (its prefix-cache identity, message by message) count what its whole text
    counts: the layouts cut only where tokens end."""
    tok = tokens.Tokenizer({"llama3": tokens.LLAMA3, "qwen2.5": tokens.QWEN2, "chatml": tokens.CHATML}[template])
    parts = templates.render(template, chat, add_generation_prompt=gen)
    assert sum(tok.count(text) for _, text in parts) == tok.count("".join(text for _, text in parts))


# -- the filler's stops -----------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(max_tokens=st.integers(1, 60), min_tokens=st.integers(0, 60), include=st.booleans(),
       stop=st.lists(st.one_of(st.sampled_from([" batch", "GPU and", "of", "d t", "zebra", "e", " the batch"]),
                               st.text(alphabet=" abcdefghijklmnoprstuvwyGPU", min_size=1, max_size=12)),
                     max_size=3),
       stop_ids=st.lists(st.sampled_from(tokens.WORD_IDS), max_size=2))
def test_stops_end_the_filler_where_vllms_checks_would(max_tokens, min_tokens, include, stop, stop_ids):
    """`plan_answer` against vLLM's checks done token by token on the whole filler: a stop token
    id after min_tokens ends it (its text left out unless included); else a stop string that
    completes after min_tokens' text, the earliest completing."""
    min_tokens = min(min_tokens, max_tokens)
    got = tokens.plan_answer(max_tokens, min_tokens, stop, frozenset(stop_ids), include)
    text = ""
    want = tokens.Answer(max_tokens)
    for i in range(max_tokens):
        word = tokens.filler_word(i)
        if i + 1 > min_tokens and tokens.WORD_IDS[i % len(tokens.WORDS)] in stop_ids:
            want = tokens.Answer(i + 1, "stop", tokens.WORD_IDS[i % len(tokens.WORDS)],
                                 len(text) + (len(word) if include else 0))
            break
        checked_from = tokens.filler_chars(min_tokens) if i + 1 > min_tokens else None
        text += word
        if checked_from is None:
            continue
        ends = [(text.find(s, max(0, checked_from - len(s) + 1)), s) for s in stop]
        ends = [(at + len(s), at, s) for at, s in ends if at != -1 and at + len(s) > len(text) - len(word)]
        if ends:
            end, at, s = min(ends, key=lambda e: e[0])
            want = tokens.Answer(i + 1, "stop", s, end if include else at)
            break
    assert got == want


# -- request options ----------------------------------------------------------------------------------------

def test_completions_default_to_16_tokens_and_cut_max_tokens_to_the_context(server):
    r = server.post("/v1/completions", {"prompt": "Hi"})
    assert r["usage"]["completion_tokens"] == 16 and r["choices"][0]["finish_reason"] == "length"
    prompt = list(range(1000, 1000 + 131000))
    big = server.post("/v1/completions", {"prompt": prompt, "max_tokens": 100})
    assert big["usage"]["completion_tokens"] == 72  # what the context leaves, as vLLM 0.33 cuts it
    refused(server, "/v1/completions", {"prompt": "Hi", "max_tokens": 200000}, "max_tokens",
            "max_tokens=200000 cannot be greater than max_model_len=131072. Please request fewer output tokens.")
    refused(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                             "max_completion_tokens": 200000}, "max_completion_tokens",
            "max_completion_tokens=200000 cannot be greater than max_model_len=131072.")
    refused(server, "/v1/completions", {"prompt": list(range(131073)), "max_tokens": 1}, "input_tokens",
            "your prompt contains 131073 input tokens, which exceeds this limit even without any output tokens")
    refused(server, "/v1/completions", {"prompt": "Hi", "max_tokens": 4, "min_tokens": 5}, "min_tokens",
            "min_tokens must be less than or equal to max_tokens=4, got 5.")


def test_n_runs_n_requests_in_the_engine(server):
    before = _samples(server.metrics())
    r = server.post("/v1/completions", {"prompt": list(range(40)), "max_tokens": 5, "n": 3})
    assert [c["index"] for c in r["choices"]] == [0, 1, 2]
    assert all(c["text"] == " the batch of tokens runs" for c in r["choices"])
    assert r["usage"]["prompt_tokens"] == 40 and r["usage"]["completion_tokens"] == 15
    after = _samples(server.metrics())
    assert _delta(before, after, "vllm:request_success_total", finished_reason="length") == 3
    assert _delta(before, after, "vllm:request_params_n_bucket", le="2.0") == 0
    assert _delta(before, after, "vllm:request_params_n_bucket", le="5.0") == 1
    assert _delta(before, after, "vllm:prompt_tokens_total") == 120  # each choice prefills its prompt...
    assert _delta(before, after, "vllm:prefix_cache_hits_total") == 64  # ...the later two from the cache
    events = server.events("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "n": 2,
                                                    "max_tokens": 3})
    finished = {e["choices"][0]["index"]: e["choices"][0]["finish_reason"] for e in events if e["choices"]
                and e["choices"][0]["finish_reason"]}
    assert finished == {0: "length", 1: "length"}
    refused(server, "/v1/completions", {"prompt": "Hi", "n": 2, "temperature": 0}, "n",
            "n must be 1 when using greedy sampling, got 2.")


def test_stop_strings_and_token_ids_match_the_filler(server):
    r = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 30, "stop": ["batch", "zebra"]})
    c = r["choices"][0]
    assert (c["text"], c["finish_reason"], c["stop_reason"]) == (" the ", "stop", "batch")
    assert r["usage"]["completion_tokens"] == 2
    c = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 30, "stop": "batch",
                                        "include_stop_str_in_output": True})["choices"][0]
    assert c["text"] == " the batch"
    c = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 30, "stop": "batch", "min_tokens": 3})
    assert c["usage"]["completion_tokens"] == 18  # the next " batch" after the first three tokens
    c = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 30, "stop": "zebra"})["choices"][0]
    assert c["finish_reason"] == "length" and c["stop_reason"] is None
    of = server.post("/tokenize", {"prompt": " of", "add_special_tokens": False})["tokens"][0]
    c = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 30, "stop_token_ids": [of]})["choices"][0]
    assert (c["text"], c["finish_reason"], c["stop_reason"]) == (" the batch", "stop", of)
    events = server.events("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                    "max_tokens": 30, "stop": ["tokens"]})
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]) == " the batch of "
    assert events[-1]["choices"][0]["finish_reason"] == "stop" and events[-1]["choices"][0]["stop_reason"] == "tokens"
    refused(server, "/v1/completions", {"prompt": "Hi", "stop": ["a", ""]}, "stop", "stop cannot contain an empty string.")


def test_logprobs_are_the_fillers_own(server):
    c = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 3, "logprobs": 2})["choices"][0]["logprobs"]
    assert c == {"text_offset": [0, 4, 10], "token_logprobs": [0.0, 0.0, 0.0], "tokens": [" the", " batch", " of"],
                 "top_logprobs": [{" the": 0.0}, {" batch": 0.0}, {" of": 0.0}]}
    chat = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "logprobs": True, "top_logprobs": 1}
    content = server.post("/v1/chat/completions", chat)["choices"][0]["logprobs"]["content"]
    assert content[1] == {"token": " batch", "logprob": 0.0, "bytes": list(b" batch"),
                          "top_logprobs": [{"token": " batch", "logprob": 0.0, "bytes": list(b" batch")}]}
    ids = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 1, "logprobs": 0,
                                          "return_tokens_as_token_ids": True})["choices"][0]["logprobs"]
    assert ids["tokens"] == [f"token_id:{tokens.WORD_IDS[0]}"]
    refused(server, "/v1/chat/completions", {**chat, "logprobs": False}, "top_logprobs",
            "when using `top_logprobs`, `logprobs` must be set to true.")
    refused(server, "/v1/completions", {"prompt": "Hi", "logprobs": 21}, "logprobs",
            "Requested sample logprobs of 21, which is greater than max allowed: 20")


def test_stream_options_and_token_ids(server):
    body = {"prompt": [5, 6, 7], "max_tokens": 4}
    plain = server.events("/v1/completions", body)
    assert all("usage" not in e for e in plain)  # include_usage defaults to false in vLLM 0.33
    usage = server.events("/v1/completions", {**body, "stream_options": {"include_usage": True}})
    assert usage[-1]["choices"] == [] and usage[-1]["usage"]["completion_tokens"] == 4
    cont = server.events("/v1/completions", {**body, "stream_options": {"include_usage": True,
                                                                        "continuous_usage_stats": True}})
    assert all("usage" in e for e in cont)
    refused(server, "/v1/completions", {**body, "stream_options": {"include_usage": True}}, "stream_options",
            "Stream options can only be defined when `stream=True`.")
    r = server.post("/v1/completions", {**body, "return_token_ids": True})["choices"][0]
    assert r["prompt_token_ids"] == [5, 6, 7] and r["token_ids"] == list(tokens.WORD_IDS[:4])
    chunked = server.events("/v1/completions", {**body, "max_tokens": 12, "stream_interval": 4})
    assert len(chunked) <= 4 and "".join(e["choices"][0]["text"] for e in chunked) == tokens.filler(0, 12)


def test_prompt_options(server):
    text = "Prefix caching shares the blocks of a prompt's head."
    with_bos = server.post("/v1/completions", {"prompt": text, "max_tokens": 1})["usage"]["prompt_tokens"]
    bare = server.post("/v1/completions", {"prompt": text, "max_tokens": 1, "add_special_tokens": False})
    assert bare["usage"]["prompt_tokens"] == with_bos - 1
    cut = server.post("/v1/completions", {"prompt": list(range(100)), "max_tokens": 1, "truncate_prompt_tokens": 10})
    assert cut["usage"]["prompt_tokens"] == 10
    ids = list(range(7000, 7000 + 64))
    first = server.post("/v1/completions", {"prompt": ids, "max_tokens": 1, "cache_salt": "alice"})
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    other = server.post("/v1/completions", {"prompt": ids, "max_tokens": 1, "cache_salt": "bob"})
    assert other["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    again = server.post("/v1/completions", {"prompt": ids, "max_tokens": 1, "cache_salt": "alice"})
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == 48
    several = server.post("/v1/completions", {"prompt": ["one two", "three"], "max_tokens": 2, "n": 2})
    assert [c["index"] for c in several["choices"]] == [0, 1, 2, 3]
    assert several["usage"]["prompt_tokens"] == 2 + 1 + 1 + 1  # each prompt once, with its begin token
    assert server.post("/v1/completions", {"prompt": "x", "max_tokens": 1, "request_id": "abc"})["id"] == "cmpl-abc"


def test_every_field_of_vllms_requests_is_in_the_table_and_the_manual():
    rows = {}
    for line in (ROOT / "tests/data/vllm-request-fields.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, route, names = (part.strip() for part in line.split("|"))
            rows[name] = set(names.split())
    assert {f.name for f in fields.fields_of("completions")} == rows["CompletionRequest"]
    assert {f.name for f in fields.fields_of("chat")} == rows["ChatCompletionRequest"]
    assert all(f.kind in fields.KINDS and f.note for f in fields.FIELDS)
    from tools import docs_tables

    assert "\n<!-- table: request-fields -->\n" in (docs_tables.DOCS / "serve.md").read_text()
    assert "\n" + fields.markdown_table() + "\n" in docs_tables.page("serve.md")


# A value each field takes that is not its default (for the refused: one the simulator cannot honour).
GIVEN = {"echo": True, "suffix": "end", "prompt_logprobs": 1, "logprob_token_ids": [1], "use_beam_search": True,
         "allowed_token_ids": [1, 2], "bad_words": ["batch"], "response_format": {"type": "json_object"},
         "structured_outputs": {"json": {}}, "repetition_detection": {"max_pattern_size": 4},
         "watermarking": True, "return_weight_versions": True, "prompt_embeds": "AAAA", "kv_transfer_params": {},
         "ec_transfer_params": {"x": 1}, "tools": [{"type": "function", "function": {"name": "f"}}],
         "tool_choice": "auto", "chat_template": "{{ messages }}", "return_prompt_text": True,
         "seed": 7, "temperature": 0.7, "top_p": 0.9, "top_k": 5, "min_p": 0.1, "frequency_penalty": 0.5,
         "presence_penalty": -0.5, "repetition_penalty": 1.1, "logit_bias": {"5": 1.0}, "length_penalty": 0.8,
         "skip_special_tokens": False, "spaces_between_special_tokens": False, "user": "me", "session_id": "s",
         "vllm_xargs": {"a": 1}, "routed_experts_prompt_start": 2, "return_token_offsets": True,
         "mm_payload": "none", "return_mm_kwargs": False, "thinking_token_budget": 10, "reasoning_effort": "low",
         "include_reasoning": False, "parallel_tool_calls": False, "documents": [{"title": "t", "text": "x"}],
         "media_io_kwargs": {}, "mm_processor_kwargs": {}}


@pytest.mark.parametrize("route", ["completions", "chat"])
def test_each_field_is_refused_with_vllms_error_or_taken(server, route):
    path = "/v1/completions" if route == "completions" else "/v1/chat/completions"
    base = {"prompt": "Hi"} if route == "completions" else {"messages": [{"role": "user", "content": "Hi"}]}
    base["max_tokens"] = 2
    for f in fields.fields_of(route):
        if f.kind == "honoured":
            continue  # (their tests are above)
        body = {**base, f.name: GIVEN[f.name]}
        if f.kind == "refused":
            err = server.post(path, body, 400)["error"]
            assert err["param"] == f.name and err["type"] == "BadRequestError", (f.name, err)
        else:
            assert server.post(path, body)["usage"]["completion_tokens"] == 2, f.name
    refused(server, path, {**base, "temperature": 3}, "temperature", "temperature must be in [0, 2], got 3.0.")
    refused(server, path, {**base, "seed": 2**64}, "seed", "seed: Input should be between")


@pytest.mark.parametrize("policy", ["priority", "fcfs"])
def test_priority_orders_the_queue_under_the_priority_policy(policy):
    """One seat: a long request runs, then an urgent one (priority -5) and a patient one (5) come.
    Under the priority policy the urgent one is served first (vLLM's priority scheduling, lower
    first); under fcfs the priority is ignored, as vLLM ignores it. The order is the engine's (each
    request's first token on its clock, as the server's observer hears it): the order the clients'
    answers come back in is the machine's (the two late ones end a few ms apart, and a pacer
    catching up after the machine starved it hands both out at once)."""
    s = Served("--scheduling-policy", policy, "--max-num-seqs", "1", scale="5")
    try:
        served = []  # (arrival, first token, end) of each request, on the engine's clock
        observer = s.served.pacer.observer
        finished = observer.finished

        def hear(stream, req) -> None:
            served.append((req.arrival_time, req.first_token_time, req.finish_time))
            finished(stream, req)

        observer.finished = hear

        def send(priority: int, tokens_: int) -> None:
            s.post("/v1/completions", {"prompt": list(range(50)), "max_tokens": tokens_, "priority": priority})

        def until(condition) -> None:
            deadline = time.monotonic() + 30
            while not condition() and time.monotonic() < deadline:
                threading.Event().wait(0.005)

        scheduler = s.served.pacer.engine.scheduler
        first = threading.Thread(target=send, args=(0, 2000))
        first.start()
        until(lambda: scheduler.running)
        late = [threading.Thread(target=send, args=(p, 5)) for p in (5, -5)]
        for queued, t in enumerate(late, 1):
            t.start()
            # Each late request is in the queue before the next is sent (a fixed pause let a busy
            # machine send the second after the long one had ended: the seat went to the first).
            until(lambda: len(scheduler.waiting) >= queued)
        for t in (first, *late):
            t.join(60)
        assert len(served) == 3, served
        long_, patient, urgent = sorted(served)  # (the order they were sent in: each queued before the next)
        assert urgent[0] < long_[2], ("both late ones were queued while the long one ran", served)
        urgent, patient = urgent[1], patient[1]
        assert urgent < patient if policy == "priority" else patient < urgent, served
    finally:
        s.stop()


# -- /metrics against vLLM's list ---------------------------------------------------------------------------

def _fixture():
    buckets, cache, metrics = {}, [], []
    for line in (ROOT / "tests/data/vllm-metrics.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split("|")]
        if cells[0].startswith("bucket "):
            buckets[cells[0].split()[1]] = cells[1]
        elif cells[0] == "cache_config":
            cache = cells[1].split()
        else:
            metrics.append(cells)
    return buckets, cache, metrics


def _samples(text: str) -> dict:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _delta(before: dict, after: dict, name: str, **labels) -> float:
    def total(samples):
        return sum(v for (n, ls), v in samples.items() if n == name
                   and all(dict(ls).get(k) == w for k, w in labels.items()))
    return total(after) - total(before)


def _check_metrics(text: str, present: set[str]) -> None:
    """`text` (a /metrics page) has every metric of the fixture whose status is in `present`,
    with vLLM's type, labels (and their values) and buckets, and no other vllm: metric."""
    buckets, cache, listed = _fixture()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    exposed = {n for n in families if n.startswith("vllm:")}
    served = set()
    for name, kind, labels, family, status in listed:
        base = name[:-len("_total")] if kind == "counter" and name.endswith("_total") else name
        if status not in present:
            assert not any(n.startswith(base.rstrip("*")) for n in exposed), (name, status)
            assert status.startswith(("served", "not-modelled: ")), (name, status)
            continue
        served.add(base)
        assert base in families, name
        f = families[base]
        assert f.type == kind, (name, f.type)
        want = {}
        for label in labels.split(","):
            key, _, values = label.partition("=")
            want[key] = set(values.split("/")) if values else None
        if "cache_config" in want:
            want.pop("cache_config")
            want.update(dict.fromkeys(cache))
        samples = [s for s in f.samples if not s.name.endswith(("_sum", "_count"))]
        assert samples, name
        for key, values in want.items():
            assert all(key in s.labels for s in samples), (name, key)
            if values is not None:
                assert {s.labels[key] for s in samples} == values, (name, key)
        extra = {k for s in samples for k in s.labels} - set(want) - {"le"}
        assert not extra, (name, extra)
        if family != "-":
            bounds = buckets[family]
            if bounds.startswith("1-2-5"):
                bounds = " ".join(str(b) for b in _one_two_five(131072))
            les = sorted({float(s.labels["le"]) for s in samples} - {float("inf")})
            assert les == [float(b) for b in bounds.split()], name
    assert exposed == served  # no vllm: metric vLLM 0.33 does not have
    assert "vllm:time_per_output_token_seconds" not in families  # (vLLM 0.33 has none of that name)


def test_metrics_are_vllms_names_types_labels_and_buckets(server):
    server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3})
    server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 3, "stop": "batch"})
    _check_metrics(server.metrics(), {"served"})


def test_a_speculative_servers_metrics_add_vllms_spec_decode_counters():
    s = Served("--speculative-config", '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", '
                                       '"num_speculative_tokens": 3}')
    try:
        s.post("/v1/completions", {"prompt": list(range(32)), "max_tokens": 20})
        _check_metrics(s.metrics(), {"served", "served-with --speculative-config"})
    finally:
        s.stop()


@pytest.mark.parametrize("flags, model", [
    (("--model", "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--tensor-parallel-size", "8",
      "--speculative-config", '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'), "deepseek-ai/DeepSeek-V3"),
    (("--model", "openai/gpt-oss-120b", "--gpu", "h100-sxm", "--speculative-config",
      '{"method": "eagle3", "model": "nvidia/gpt-oss-120b-Eagle3", "num_speculative_tokens": 3}'),
     "openai/gpt-oss-120b"),
])
def test_a_mixture_of_experts_is_served_by_name_with_drafts_and_vllms_spec_decode_counters(flags, model):
    """The issue's deployments by name (DeepSeek-V3 on eight H200 with MTP, gpt-oss-120b on one
    H100 with an EAGLE-3 head): answers of the asked length under the model's own name, and
    /metrics with vLLM 0.33's vllm:spec_decode_* counters, one per position."""
    s = Served(*flags)
    try:
        r = s.post("/v1/completions", {"model": model, "prompt": list(range(40)), "max_tokens": 24,
                                       "ignore_eos": True})
        assert r["model"] == model and r["usage"]["completion_tokens"] == 24
        text = s.metrics()
        _check_metrics(text, {"served", "served-with --speculative-config"})
        k = json.loads(flags[-1])["num_speculative_tokens"]
        families = {f.name: f for f in text_string_to_metric_families(text)}
        drafts = families["vllm:spec_decode_num_drafts"].samples[0].value
        draft_tokens = families["vllm:spec_decode_num_draft_tokens"].samples[0].value
        positions = families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples
        assert drafts > 0 and draft_tokens == k * drafts
        assert sorted(p.labels["position"] for p in positions) == [str(i) for i in range(k)]
        accepted = families["vllm:spec_decode_num_accepted_tokens"].samples[0].value
        assert accepted == sum(p.value for p in positions)
    finally:
        s.stop()


def _one_two_five(top: int) -> list[int]:
    out, scale = [], 1
    while True:
        for m in (1, 2, 5):
            if m * scale > top:
                return out
            out.append(m * scale)
        scale *= 10


def test_metrics_measure_the_requests_as_vllm_does(server):
    before = _samples(server.metrics())
    usage = server.post("/v1/completions", {"prompt": list(range(9000, 9100)), "max_tokens": 6})["usage"]
    stopped = server.post("/v1/completions", {"prompt": "Hi", "max_tokens": 30, "stop": "tokens"})["usage"]
    after = _samples(server.metrics())
    d = lambda name, **labels: _delta(before, after, name, **labels)  # noqa: E731
    assert d("vllm:request_success_total", finished_reason="length") == 1
    assert d("vllm:request_success_total", finished_reason="stop") == 1
    assert d("vllm:prompt_tokens_total") == usage["prompt_tokens"] + stopped["prompt_tokens"]
    assert d("vllm:generation_tokens_total") == usage["completion_tokens"] + stopped["completion_tokens"] == 10
    assert d("vllm:request_generation_tokens_sum") == 10 and d("vllm:request_generation_tokens_count") == 2
    assert d("vllm:request_params_max_tokens_sum") == 6 + 30
    # an iteration's tokens: the prompts computed in it and the tokens it generated, all told
    computed = d("vllm:prompt_tokens_by_source_total", source="local_compute")
    assert d("vllm:iteration_tokens_total_sum") == computed + 10
    assert d("vllm:prompt_tokens_by_source_total", source="local_cache_hit") == d("vllm:prompt_tokens_cached_total")
    # one inter-token gap per later token; phases add up: queue + inference = e2e
    assert d("vllm:inter_token_latency_seconds_count") == 10 - 2
    for name in ("vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
                 "vllm:request_decode_time_seconds", "vllm:e2e_request_latency_seconds"):
        assert d(name + "_count") == 2, name
    assert d("vllm:request_queue_time_seconds_sum") + d("vllm:request_inference_time_seconds_sum") == \
        pytest.approx(d("vllm:e2e_request_latency_seconds_sum"))
    assert d("vllm:request_prefill_time_seconds_sum") + d("vllm:request_decode_time_seconds_sum") == \
        pytest.approx(d("vllm:request_inference_time_seconds_sum"))
    info = [k for k in after if k[0] == "vllm:cache_config_info"]
    assert len(info) == 1 and dict(info[0][1])["block_size"] == "16" and dict(info[0][1])["enable_prefix_caching"] == "True"
