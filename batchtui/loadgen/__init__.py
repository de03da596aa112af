"""A load generator for OpenAI-compatible servers (a real vLLM, `batchtui serve`, any other):
what `batchtui bench` runs, kept apart from the command line so other parts of batchtui (a
playground beside a live server) can drive a server with the same client.

- `client`: `Client`, one aiohttp session to one server: `send` streams one completion or chat
  and measures it as `vllm bench serve` does (`Outcome`: TTFT, the gaps between chunks, latency,
  tokens as the server's usage counts them, the error in one line); `models`, `tokenize`,
  `metrics_text`.
- `prompts`: texts of exact token counts (`Prompts`): words the server's `/tokenize` counts as one
  token each, or, without that route, a stated rule (a word a token).
- `scrape`: the server's `/metrics` read under vLLM's metric names (`Scrape`), before, during
  and after a run (`ServerWatch`).
- `traffic`: `send_traffic`, a scenario's requests sent on the wall clock as `sim.arrivals`
  plans them (the same arrivals, lengths, client cap and conversations the simulator serves),
  stopped cleanly on request.
- `measure`: the figures `vllm bench serve` computes from what the client saw, under its keys.

Nothing here imports Textual; aiohttp and prometheus-client are imported with these modules.
"""
