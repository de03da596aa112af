"""`batchtui serve`: the simulator's engine behind vLLM's OpenAI-compatible HTTP interface.

- `tokens`: how many tokens a prompt is and which ids they have (no tokenizer: a stated rule, and
  the model family's special tokens), and the filler text of an answer and where stops end it;
- `templates`: chats laid out as the models' chat templates lay them out;
- `fields`: every field of vLLM's request models, honoured, accepted or refused (one table);
- `pacer`: one engine for every connection, run on the wall clock (scaled), one iteration at a
  time: each request's tokens are handed out when the simulated GPU would have produced them;
- `prom`: /metrics in Prometheus text with vLLM 0.33's metric names, labels and buckets;
- `guard`: what keeps it answering when clients misbehave: the connection limit, idle timeouts,
  body limits, and failures logged once per kind with a count;
- `api`: the aiohttp application (/v1/completions, /v1/chat/completions, /tokenize,
  /detokenize, /v1/models, /health, /metrics) answering as vLLM answers.

Nothing here imports Textual; aiohttp and prometheus-client are imported only by `batchtui serve`.
"""
