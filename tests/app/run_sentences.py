"""Sentences about the run hold: a figure the lesson pane quotes of the live run (a prediction's
result, a challenge's verdict) is either live, agreeing with the run as it is now, or dated ("at
t 40 s"), agreeing with the frame of that moment. A present-tense sentence whose number froze
while the panes moved on fails.

What counts as a sentence about the run: every sentence the pane shows that quotes a figure
(TTFT p99 2.61 s, 238 requests waiting, 58 preemptions...), except the lesson's own words (its
text, questions, choices and explanations, whose figures the simulator computes for the step:
tests/unit/test_figures.py and test_claims.py hold them) and an exercise's givens (a drill's
question and worked answer, a reading's table, the cheat sheet)."""

from __future__ import annotations

import re
from collections.abc import Callable

from sim.reports import recent_worst_gap
from steps import figures

TIME = r"([\d,.]+ m?s)"
COUNT = r"([\d,]+)"
RATE = r"([\d,.]+k?)"

QUANTITIES: tuple[tuple[str, str, Callable], ...] = (
    # (name, pattern of the figure in a sentence, its value in a frame, in the units shown)
    ("TTFT p99", rf"TTFT p99 (?:had reached |was |is |of )?{TIME}", lambda s: s.metrics.ttft_p99),
    ("TTFT p50", rf"TTFT p50 (?:was |is |of )?{TIME}", lambda s: s.metrics.ttft_p50),
    ("TPOT p99", rf"TPOT p99 (?:was |is |of )?(?:only )?{TIME}", lambda s: s.metrics.tpot_p99),
    ("TPOT p50", rf"TPOT p50 (?:was |is |of )?{TIME}", lambda s: s.metrics.tpot_p50),
    ("end-to-end p50", rf"end-to-end p50 {TIME}", lambda s: s.metrics.e2e_p50),
    ("queue", rf"(?:{COUNT} requests (?:waiting|queued)|\bqueue {RATE})", lambda s: s.queue_len),  # 12k past 10,000
    ("tokens/s", rf"{RATE} tokens/s", lambda s: s.metrics.output_tokens_per_s),
    ("requests/s", rf"(?:requests/s {RATE}|{RATE} requests/s finished)", lambda s: s.metrics.requests_per_s),
    ("preemptions", rf"{COUNT} preemptions?\b", lambda s: s.metrics.num_preemptions),
    ("running", rf"(?:{COUNT} sequences running|{COUNT} of [\d,]+ seats busy)", lambda s: s.running),
    ("worst gap", rf"worst gap (?:between two tokens )?(?:was )?{TIME}",
     lambda s: (recent_worst_gap(s), s.metrics.itl_max)),
    ("padding", r"(?:padding ([\d.]+)%|([\d.]+)% of seat-iterations)", lambda s: s.metrics.padding_share * 100),
    ("KV full", r"([\d.]+)% full", lambda s: 100 * s.kv_blocks_used / max(1, s.kv_blocks_usable)),
)
DATED = re.compile(r"\b[Aa]t t ([\d,.]+) s\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
HEADINGS = r"^\s*(?:Predict, then run|Break it|Drill: .*|Read the percentiles|Worked answer)\s*$"
"""An activity's title lines: a heading, not the start of the sentence under it."""


def value_of(shown: str) -> tuple[float, float]:
    """A figure as written ("2.61 s", "485 ms", "9,694", "1.2k") -> (value, half its last digit);
    times in seconds."""
    shown = shown.strip()
    scale = 1.0
    if shown.endswith(" ms"):
        shown, scale = shown[:-3], 1e-3
    elif shown.endswith(" s"):
        shown = shown[:-2]
    if shown.endswith("k"):
        shown, scale = shown[:-1], 1e3
    digits = shown.replace(",", "").rstrip(".")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits) * scale, 0.5 * 10.0 ** -decimals * scale


def agrees(shown: str, actual) -> bool:
    value, half = value_of(shown)
    options = actual if isinstance(actual, tuple) else (actual,)
    return any(abs(value - a) <= half + 1e-9 + 1e-6 * abs(a) for a in options)


def normal(text: str) -> str:
    """Letters and digits only, lower case: what a sentence says, whatever its wrapping or marks."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def given_texts(step, view) -> list[str]:
    """The lesson's own words for a step and the givens of its activity view (not readings of
    the run): text, hints, question, choices, each choice's line, explanation, reveal; a drill's
    or a reading's question and answer, a challenge's goal, the cheat sheet."""
    params = step.activity.params
    texts = [step.body_md, step.reveal_md, *step.hints]
    for key in ("question", "choices", "feedback", "explain"):
        value = params.get(key)
        texts += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    question = getattr(view, "question", None)
    for name in ("prompt_md", "derivation_md", "table_md", "explanation"):
        texts.append(getattr(question, name, "") or "")
    texts += list(getattr(question, "hints", ()) or ()) + list(getattr(question, "choices", ()) or ())
    texts.append(getattr(view, "text_md", "") or "")
    challenge = getattr(view, "challenge", None)
    texts.append(getattr(challenge, "goal_md", "") or "")
    return texts


def sentences(text: str) -> list[str]:
    """The sentences of drawn text: paragraphs and list items apart (a blank line, a bullet or a
    number starts one), each split at its full stops; wrapped lines joined, the pane's scroll bar
    left out."""
    text = re.sub(r"[▁▂▃▄▅▆▇█]", " ", text)
    blocks = re.split(r"\n\s*\n|\n\s*(?=[•*-] |\d+\. )|" + HEADINGS, text, flags=re.M)
    return [sentence for block in blocks for sentence in SENTENCE_END.split(" ".join(block.split())) if sentence]


def run_sentence_problems(pane_text: str, givens: list[str], frames: "Frames") -> list[str]:
    """Each figure of the run quoted in `pane_text` that is neither live (the last frame shown,
    this run's or the one beside it) nor true at the moment its sentence states."""
    given = normal(" ".join(givens))
    problems = []
    for sentence in sentences(pane_text):
        found = [(name, shown, measure) for name, pattern, measure in QUANTITIES
                 for m in re.finditer(pattern, sentence) for shown in m.groups() if shown]
        if not found or normal(sentence) in given:
            continue
        dated = DATED.search(sentence)
        moments = frames.at.get(dated.group(1), []) if dated else frames.at.get(frames.last, [])[-1:]
        if not moments:
            problems.append(f"no frame at the time it states: {sentence!r}")
            continue
        snaps = [snap for moment in moments for snap in moment if snap is not None]
        for name, shown, measure in found:
            if not any(agrees(shown, measure(snap)) for snap in snaps):
                read = ", ".join(sorted({str(measure(snap)) for snap in snaps}))
                problems.append(f"{name} {shown}: the run {'read ' + read + ' then' if dated else 'reads ' + read + ' now'}"
                                f", in {sentence!r}")
    return problems


class Frames:
    """Every frame an activity panel is given, by its time as a reading dates it
    (`steps.figures.fmt`, as activities write "at t 61 s"): `at[time]` lists (this run, the run
    beside) pairs; `last` is the time of the frame on screen now."""

    def __init__(self, panel=None) -> None:
        self.at: dict[str, list] = {}
        self.last = ""
        if panel is not None:
            given = panel.update_snapshot

            def update_snapshot(snapshot, compare=None):
                self.add(snapshot, compare)
                given(snapshot, compare)

            panel.update_snapshot = update_snapshot

    def add(self, snapshot, compare=None) -> None:
        self.last = figures.fmt(snapshot.time)
        self.at.setdefault(self.last, []).append((snapshot, compare))
