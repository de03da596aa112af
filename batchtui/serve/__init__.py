"""`batchtui serve`: the simulator's engine behind vLLM's OpenAI-compatible HTTP interface.

- `tokens`: how many tokens a prompt or a chat is (no tokenizer: a stated rule), and the filler
  text of an answer;
- `pacer`: one engine for every connection, run on the wall clock (scaled), one iteration at a
  time: each request's tokens are handed out when the simulated GPU would have produced them;
- `prom`: /metrics in Prometheus text with vLLM's metric names and buckets;
- `guard`: what keeps it answering when clients misbehave: the connection limit, idle timeouts,
  body limits, and failures logged once per kind with a count;
- `api`: the aiohttp application (/v1/completions, /v1/chat/completions, /v1/models, /health,
  /metrics) answering as vLLM answers.

Nothing here imports Textual; aiohttp and prometheus-client are imported only by `batchtui serve`.
"""
