"""Step 19's cheat sheet, filled for a scenario."""

from __future__ import annotations

from sim.scenario import Scenario

from .base import Kind


CHEAT_SHEET_MD = """\
### {{model_name}} on {{gpu_name}}

- **Ceiling** = bandwidth ÷ weight bytes: {{bandwidth_tb}} TB/s ÷ {{weights_gb}} GB ≈ **{{ceiling}} tok/s**
  (real ≈ {{real_share_pct}}%: {{ceiling_real}}).
- **One request** = prefill + (out − 1) × TPOT: {{prefill_ms}} ms + {{decode_steps}} × {{tpot_ms}} ms ≈
  {{request_s}} s alone.
- {{in_flight_line}}
- **Cache tokens** = (util × memory − weights − reserve) ÷ KV per token:
  ({{memory_utilization}} × {{gpu_memory_gb}} − {{weights_gb}} − {{reserve_gb}}) GB ÷ {{kv_kib_per_token}} KiB ≈ **{{cache_tokens}}**.
- **Cache batch** = cache tokens ÷ (in + out): {{cache_tokens}} ÷ {{per_sequence}} ≈ **{{cache_batch}}**.
- **Replicas** = ⌈peak ÷ ({{headroom}} × SLO rate)⌉, the SLO rate read off a sweep (step 16). It is below
  the saturated rate, {{saturated_rate}} req/s here, so a peak of {{cheat_peak}} req/s needs more than
  {{cheat_peak}} ÷ ({{headroom}} × {{saturated_rate}}) ≈ {{cheat_replicas_floor}} replicas.
- **Shared prefix** (prefix caching, on in vLLM by default): prompt tokens already in the cache, in
  whole blocks, are not computed again. The helpdesk as a chat ({{helpdesk_prefix}}-token system prompt,
  {{helpdesk_turns}} turns, each resending the history) finds **{{helpdesk_hit_pct}}%** of its prompt
  tokens cached: TTFT p50 {{helpdesk_ttft_on_ms}} ms, against {{helpdesk_ttft_off_ms}} ms with caching off.

**Tuning order**: `--max-num-batched-tokens` (the TPOT you accept), then `--max-num-seqs` (the batch
λ × W needs), then the KV cache (`--gpu-memory-utilization`) to hold that batch.

**Chat, with an SLO**: {{chat_seats_line}}; a modest token budget protects TPOT; watch TTFT p99 and
TPOT p99 per pool.

**An offline job**: seats up to the cache batch (≈ {{cache_batch}}); a large token budget for big
prefills; watch tokens/s and the job's time.
"""
"""The recap, worked for the live profile by the same figures the lessons state (steps.figures)."""


_FILLED: list[tuple[Scenario, str]] = []
"""The last few sheets filled, with the scenario each is for, compared by identity: a step's
scenario is one frozen object for the whole session, so opening step 19 again reads its sheet
here; a dial that moved brings a new object, which is filled anew."""
_KEEP = 4


def cheat_sheet_md(scenario: Scenario) -> str:
    """The recap with every formula worked for this scenario's GPU, model, memory setting and
    traffic: the ceiling and one request (step 1), the batch in flight at its rate measured as
    step 9 measures it, the cache batch as step 15 counts it, the replicas bound of step 16, and
    what a shared prefix saves the multi-turn helpdesk. Takes about 0.2 s the first time (a
    saturated run, one steady rate, the helpdesk with caching on and off), nothing after."""
    for seen, text in _FILLED:
        if seen is scenario:
            return text
    from ..figures import Lab, fill

    text = fill(CHEAT_SHEET_MD, Lab(scenario))
    _FILLED[:] = [(scenario, text), *_FILLED[:_KEEP - 1]]
    return text


KIND = Kind("cheat_sheet", "", frozenset(), lambda step: None)  # the app renders the sheet itself
