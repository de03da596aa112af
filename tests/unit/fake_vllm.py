"""A stand-in for a real vLLM server, for `batchtui bench`'s tests: the routes and shapes vLLM 0.33
answers (/v1/models, /tokenize with its request and response, /metrics under vLLM's names, streamed
/v1/completions and /v1/chat/completions with usage), a toy tokenizer that is not batchtui's rule,
and faults on demand. It runs on an event loop of its own in a thread, on a free port of
127.0.0.1, so a client under test can run in the test's own thread.

The toy tokenizer: a word of up to four letters is one token, a longer word two; a completion's
prompt gets one more (a BOS token, as vLLM adds special tokens to a completion's prompt), and a
chat six per message plus four (a template). Answers are one event per token, `TOKEN_S` apart.
"""

from __future__ import annotations

import asyncio
import json
import threading

from aiohttp import web

TOKEN_S = 0.002
MODEL = "fake-org/Fake-7B"


def toy_tokens(text: str) -> int:
    return sum(1 if len(w) <= 4 else 2 for w in text.split())


class FakeVllm:
    """`FakeVllm(**faults).start()`; `.url`; `.stop()`. Faults: every `fail_every`-th request is
    answered HTTP 503 in vLLM's error shape; every `cut_every`-th is cut after two events (its
    connection closed). `tokenize=False`: no /tokenize route; `spec=True`: speculative decoding's
    counters in /metrics."""

    def __init__(self, tokenize: bool = True, fail_every: int = 0, cut_every: int = 0, spec: bool = False) -> None:
        self.tokenize_route = tokenize
        self.fail_every = fail_every
        self.cut_every = cut_every
        self.spec = spec
        self.requests = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.running = 0
        self.peak_running = 0
        self.bodies: list[dict] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.runner = None
        self.url = ""
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    # -- routes
    async def models(self, request):
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "root": MODEL}]})

    async def tokenize(self, request):
        body = await request.json()
        n = toy_tokens(body["prompt"]) + (1 if body.get("add_special_tokens", True) else 0)
        return web.json_response({"count": n, "max_model_len": 8192, "tokens": list(range(n)), "token_strs": None})

    async def metrics(self, request):
        label = f'{{engine="0",model_name="{MODEL}"}}'
        lines = [
            "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{label} {self.running}.0",
            "# TYPE vllm:num_requests_waiting gauge", f"vllm:num_requests_waiting{label} 0.0",
            "# TYPE vllm:kv_cache_usage_perc gauge", f"vllm:kv_cache_usage_perc{label} {self.running / 100}",
            "# TYPE vllm:num_preemptions_total counter", f"vllm:num_preemptions_total{label} 0.0",
            "# TYPE vllm:prefix_cache_queries_total counter",
            f"vllm:prefix_cache_queries_total{label} {float(self.prompt_tokens)}",
            "# TYPE vllm:prefix_cache_hits_total counter", f"vllm:prefix_cache_hits_total{label} 0.0",
            "# TYPE vllm:prompt_tokens_total counter", f"vllm:prompt_tokens_total{label} {float(self.prompt_tokens)}",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{label} {float(self.generation_tokens)}",
        ]
        if self.spec:  # three drafts of two tokens a request, three tokens accepted
            n = self.requests
            lines += ["# TYPE vllm:spec_decode_num_drafts_total counter", f"vllm:spec_decode_num_drafts_total{label} {3 * n}",
                      "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
                      f"vllm:spec_decode_num_draft_tokens_total{label} {6 * n}",
                      "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
                      f"vllm:spec_decode_num_accepted_tokens_total{label} {3 * n}",
                      "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
                      f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="0"}} {2 * n}',
                      f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="1"}} {n}']
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def generate(self, request):
        body = await request.json()
        self.bodies.append(body)
        self.requests += 1
        n = self.requests
        chat = "messages" in body
        if self.fail_every and n % self.fail_every == 0:
            return web.json_response({"error": {"message": "the engine is overloaded", "type": "ServiceUnavailable",
                                                "param": None, "code": 503}}, status=503)
        if chat:
            prompt = sum(toy_tokens(m["content"]) + 6 for m in body["messages"]) + 4
            tokens = body["max_completion_tokens"]
        else:
            prompt = toy_tokens(body["prompt"]) + 1
            tokens = body["max_tokens"]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self.running += 1
        self.peak_running = max(self.peak_running, self.running)
        try:
            if chat:
                await response.write(b'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}\n\n')
            for i in range(tokens):
                await asyncio.sleep(TOKEN_S)
                if self.cut_every and n % self.cut_every == 0 and i == 2:
                    request.transport.close()
                    return response
                choice = {"index": 0, "delta": {"content": " tok"}} if chat else {"index": 0, "text": " tok"}
                await response.write(b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n")
                self.generation_tokens += 1
            self.prompt_tokens += prompt
            usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
            await response.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
            await response.write(b"data: [DONE]\n\n")
        finally:
            self.running -= 1
        return response

    # -- running
    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/metrics", self.metrics)
        if self.tokenize_route:
            app.router.add_post("/tokenize", self.tokenize)
        app.router.add_post("/v1/completions", self.generate)
        app.router.add_post("/v1/chat/completions", self.generate)
        return app

    def start(self) -> FakeVllm:
        def serve() -> None:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)

            async def up() -> None:
                self.runner = web.AppRunner(self._app(), handler_cancellation=True, access_log=None)
                await self.runner.setup()
                site = web.TCPSite(self.runner, "127.0.0.1", 0)
                await site.start()
                port = self.runner.addresses[0][1]
                self.url = f"http://127.0.0.1:{port}"
                self._ready.set()

            self.loop.run_until_complete(up())
            self.loop.run_forever()
            self.loop.run_until_complete(self.runner.cleanup())
            self.loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the fake server did not start"
        return self

    def stop(self) -> None:
        """Stop listening and close every connection (a server gone away)."""
        if self.loop is not None and self._thread is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)

    def __enter__(self) -> FakeVllm:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
