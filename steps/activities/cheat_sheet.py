"""Step 19's cheat sheet, filled for a scenario."""

from __future__ import annotations

import re

from sim.scenario import Scenario

from .base import Kind


CHEAT_SHEET_MD = """\
### {{model_name}} on {{gpu_name}}

- **Ceiling** = bandwidth ÷ weight bytes: {{bandwidth_tb}} TB/s ÷ {{weights_gb}} GB ≈ **{{ceiling}} tok/s**
  (real ≈ {{real_share_pct}}%: {{ceiling_real}}).
- **One request**: {{prefill_ms}} ms + {{decode_steps}} × {{tpot_ms}} ms ≈ {{request_s}} s alone.
- {{in_flight_line}}
- **Cache tokens** = ({{memory_utilization}} × {{gpu_memory_gb}} − {{weights_gb}} − {{reserve_gb}}) GB ÷ {{kv_kib_per_token}} KiB ≈ **{{cache_tokens}}**;
  **cache batch** = {{cache_tokens}} ÷ {{per_sequence}} ≈ **{{cache_batch}}**.
- **Replicas** = ⌈peak ÷ ({{headroom}} × SLO rate)⌉; saturated at {{saturated_rate}} req/s: a
  {{cheat_peak}} req/s peak needs over {{cheat_replicas_floor}}.
- **Shared prefix**: the helpdesk chat ({{helpdesk_prefix}}-token system prompt, {{helpdesk_turns}} turns)
  finds **{{helpdesk_hit_pct}}%** of prompt tokens cached: TTFT p50 {{helpdesk_ttft_on_ms}} ms ({{helpdesk_ttft_off_ms}} uncached).
- **Mixture of experts**: a token runs only its top experts; {{moe_name}} reads {{moe_experts_one}}
  of {{moe_experts}} a layer for one token, {{moe_experts_batch}} for {{moe_batch}}: weights read grow with the batch.
- **Speculative decoding** ({{spec_name}}, K = {{spec_k}}): tokens {{spec_speedup_one}}× as fast alone,
  {{spec_speedup_full}}× with {{seats}} in flight (below one: slower).

**Tuning order**: token budget (the TPOT you accept), seats (the batch λ × W needs), KV cache
to hold them.

**Chat**: {{chat_seats_line}}; a modest budget; watch TTFT and TPOT p99 per pool.

**An offline job**: seats up to the cache batch; a large budget; watch tokens/s.
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
    from ..figures import Lab

    text = _filled(CHEAT_SHEET_MD, Lab(scenario))
    _FILLED[:] = [(scenario, text), *_FILLED[:_KEEP - 1]]
    return text


def _filled(text: str, lab) -> str:
    """The sheet filled item by item (a bullet, a paragraph): an item whose figures this setting
    cannot give says so and why, in place of its figures, and the rest of the sheet stands. (Step
    19's L40S with Llama 3.1 8B at memory 0.78 runs, but EAGLE-3's head there leaves the KV cache
    short of max_model_len: vLLM would refuse it, and the speculative line cannot be worked.)"""
    from sim.dials import label_of
    from sim.errors import SimError

    from ..figures import FigureError, fill

    try:
        return fill(text, lab)  # (one fill for the whole sheet, the usual case)
    except FigureError as exc:
        if exc.why is None:
            raise
    out = []
    for item in re.split(r"(?m)^(?=- )|(?<=\n\n)", text):
        try:
            out.append(fill(item, lab))
        except FigureError as exc:
            title = re.match(r"- (\*\*[^*]+\*\*)", item)
            if title is None or exc.why is None:
                raise
            why = exc.why.spelled(label_of) if isinstance(exc.why, SimError) else str(exc.why)
            out.append(f"- {title.group(1)}: cannot be worked for this setting: {why}" + item[len(item.rstrip()):])
    return "".join(out)


KIND = Kind("cheat_sheet", "", frozenset(), lambda step: None)  # the app renders the sheet itself
