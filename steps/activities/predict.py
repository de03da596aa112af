"""Predict, then run."""

from __future__ import annotations

from sim.reports import RECENT_GAP_POINTS, EngineSnapshot
from sim.scenario import Scenario

from ..figures import fmt
from ..model import seat_names
from ..numbers import count, exact_count, latency, percent, worst_gap
from .base import Kind


RECENT_GAP_SAMPLES = RECENT_GAP_POINTS
"""Series points the "recent" worst gap looks back over (`sim.reports.recent_worst_gap`)."""


_SHOW = {
    # Each figure as the panes print it (`steps.numbers`), so a reading and the compare table
    # beside it agree digit for digit ("TPOT p50 8.00 ms" in both).
    "queue_len": ("queue", lambda s: exact_count(s.queue_len)),
    "running": ("running", lambda s: f"{s.running:,}"),
    "requests_per_s": ("requests/s", lambda s: count(s.metrics.requests_per_s)),
    "output_tokens_per_s": ("tokens/s", lambda s: count(s.metrics.output_tokens_per_s)),
    "ttft_p50": ("TTFT p50", lambda s: latency(s, s.metrics.ttft_p50)),
    "ttft_p99": ("TTFT p99", lambda s: latency(s, s.metrics.ttft_p99)),
    "tpot_p50": ("TPOT p50", lambda s: latency(s, s.metrics.tpot_p50)),
    "tpot_p99": ("TPOT p99", lambda s: latency(s, s.metrics.tpot_p99)),
    "itl_max": ("worst gap", worst_gap),
    "e2e_p50": ("end-to-end p50", lambda s: latency(s, s.metrics.e2e_p50)),
    "padding_share": ("padding", lambda s: percent(s.metrics.padding_share)),
    "mean_running": ("mean running", lambda s: count(s.metrics.mean_running)),
    "num_preemptions": ("preemptions", lambda s: f"{s.metrics.num_preemptions:,}"),
}


class Predict:
    """Commit to a guess (a choice number), then run and compare; after a wrong guess, guess
    again against the run already seen (`again`), each wrong choice answered by its own line."""

    def __init__(self, question_md: str, choices: tuple[str, ...], answer: int, explain: str,
                 show: tuple[str, ...] = (), compute: str = "", scenario: Scenario | None = None,
                 run_dials: dict | None = None, watch_seconds: float = 20.0, compare_label: str = "",
                 run_note: str = "", feedback: tuple[str, ...] = (), own_label: str = "",
                 names: tuple[str, tuple[str, str]] | None = None) -> None:
        self.question_md = question_md
        self.choices = choices
        self.answer = answer
        self.explain = explain
        self.feedback = feedback
        """One line per choice: for a wrong one, why it is tempting and why it is wrong (the
        answer's is empty)."""
        self.show = show
        self.compute = compute
        self.scenario = scenario
        self.run_dials = dict(run_dials or {})
        """Dials (dotted scenario paths) the run is made with once the guess is in: the setting
        the question asks about, if the step does not start there."""
        self.watch_seconds = watch_seconds
        """Simulated seconds the run goes on after the guess before the answer is revealed."""
        self.compare_label = compare_label
        """What the step's side-by-side run is called, if it has one."""
        self.own_label = own_label or "the run here"
        """What the step's own run is called beside that one: what differs ("continuous
        batching"), as the seat pane's caption and the compare table's column name it."""
        self.names = names
        """The two runs named by what differs (`steps.model.Comparison.names`), or None."""
        self.run_note = run_note
        """The run's settings in words ("Token budget 512 tokens"), said with the numbers."""
        self.guess: int | None = None
        """The guess the run was made for (the first)."""
        self.tried: list[int] = []
        """Every choice guessed, in order (the first is `guess`)."""

    @property
    def ends_with_job(self) -> bool:
        """The run is a finite job: the answer comes when it ends, if before watch_seconds."""
        return self.scenario is not None and self.scenario.workload.num_prompts > 0

    def wait_words(self) -> str:
        """When the answer shows, as the learner is told: the moment it really does."""
        after = f"after {self.watch_seconds:g} simulated s"
        return f"when the job ends or {after}" if self.ends_with_job else after

    def commit(self, guess: int) -> str:
        if not 1 <= guess <= len(self.choices):
            raise ValueError(f"choose 1 to {len(self.choices)}")
        self.guess = guess
        self.tried = [guess]
        return f"Your guess: {guess}. {_sentence(self.choices[guess - 1])} The run starts now: watch it."

    def again(self, guess: int) -> bool:
        """Another guess, once the run's result is in; whether it is right. ValueError for a
        number that is no choice."""
        if not 1 <= guess <= len(self.choices):
            raise ValueError(f"choose 1 to {len(self.choices)}")
        if guess not in self.tried:
            self.tried.append(guess)
        return guess == self.answer

    def wrong_words(self, guess: int) -> str:
        """What a wrong choice is told: why it is tempting, and why the run says otherwise."""
        return f"Not {guess}: {self.feedback[guess - 1]}" if self.feedback else f"Not {guess}."

    def live_numbers(self, snapshot: EngineSnapshot | None, other: EngineSnapshot | None = None) -> str:
        def figures(snap: EngineSnapshot) -> str:
            return ", ".join(f"{_SHOW[key][0]} {_SHOW[key][1](snap)}" for key in self.show)

        text = figures(snapshot) if snapshot is not None else ""
        if text and other is not None and self.compare_label:
            # A side-by-side step: the answer is in the difference, so give both runs.
            text = f"{self.own_label}: {text}; {self.compare_label[0].lower()}{self.compare_label[1:]}: {figures(other)}"
        if self.compute == "offline_gain" and snapshot is not None and other is not None:
            # Job against job: requests done by the same moment (tokens/s over the last seconds
            # of a job that is ending would mislead). Best read when this job has finished.
            a, b = snapshot.metrics.completed, other.metrics.completed
            if a and b:
                own, beside = self.run_names(snapshot, other)
                ended = "finished its" if snapshot.finished else "had done"
                text = (f"{own} {ended} {a:,} requests while {beside} did {b:,}: at that pace {beside} take "
                        f"about {fmt(snapshot.time * a / b)} s for the same work, {fmt(a / b)} times as long")
        return text

    def run_names(self, snapshot: EngineSnapshot, other: EngineSnapshot) -> tuple[str, str]:
        """The two runs as the seat panes and the compare table name them; seats as each run
        has them now (the seats dial may have moved since the step began)."""
        if self.names is None:
            return "this run", "the run beside"
        if self.names[0] == "seats":
            return seat_names(snapshot.max_num_seqs, other.max_num_seqs)
        return self.names[1]

    def reading(self, snapshot: EngineSnapshot | None = None, other: EngineSnapshot | None = None) -> str:
        """The run's figures as a sentence dated by the moment they were read ("" if none)."""
        numbers = self.live_numbers(snapshot, other)
        if not numbers:
            return ""
        where = f", with {self.run_note}" if self.run_note else ""
        # A reading at one moment, said so: the live panes go on moving after it.
        at = f" at t {fmt(snapshot.time)} s" if snapshot is not None else ""
        return f"In the simulation{where}{at}: {numbers}."

    def verdict(self, guess: int | None = None) -> str:
        """A line on a guess (the first if None) once the run is in: right, or the answer shown
        in its place."""
        guess = self.guess if guess is None else guess
        if guess != self.answer:
            return f"The answer is {self.answer}: {_sentence(self.choices[self.answer - 1])}"
        return "Right this time." if len(self.tried) > 1 else "You called it."

    def reveal(self, snapshot: EngineSnapshot | None = None, other: EngineSnapshot | None = None) -> str:
        """Why the answer is right, and the run's reading that shows it."""
        tail = self.reading(snapshot, other)
        return f"{self.explain}\n\n{tail}" if tail else self.explain


def _sentence(text: str) -> str:
    """A choice as a sentence: "More replicas" -> "More replicas."."""
    text = text.rstrip()
    return text if text[-1:] in ".!?" else text + "."


PREDICT_SHOW = tuple(_SHOW)
MAX_FEEDBACK = 160
"""Characters a wrong choice's line may take: one sentence, a few lines of the lesson pane."""
PREDICT_COMPUTE = ("", "offline_gain")


def _check(step) -> None:
    p = step.activity.params
    choices = p.get("choices")
    if not isinstance(p.get("question"), str) or not isinstance(p.get("explain"), str):
        raise ValueError("a predict needs question and explain strings")
    if not isinstance(choices, list) or not 2 <= len(choices) <= 9 or not all(isinstance(c, str) for c in choices):
        raise ValueError("choices must list 2 to 9 strings (picked with number keys)")
    answer = p.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, int) or not 1 <= answer <= len(choices):
        raise ValueError("answer must be the number of the right choice, from 1")
    bad = [k for k in p.get("show", []) if k not in PREDICT_SHOW]
    if bad:
        raise ValueError(f"show: unknown figure {bad[0]!r}; known: {', '.join(PREDICT_SHOW)}")
    if p.get("compute", "") not in PREDICT_COMPUTE:
        raise ValueError(f"compute must be one of {', '.join(c for c in PREDICT_COMPUTE if c)}")
    batches = p.get("batches", [1, 64])
    if (not isinstance(batches, list) or len(batches) != 2 or not all(isinstance(b, int) and b > 0 for b in batches)
            or batches[0] >= batches[1]):
        raise ValueError("batches must be two batch sizes, the smaller first")
    hides = p.get("hides", [])
    if not isinstance(hides, list) or any(h not in ("batch", "req/s") for h in hides):
        raise ValueError('hides lists the curve plots that answer the question: "batch", "req/s"')
    feedback = p.get("feedback")
    if (not isinstance(feedback, list) or len(feedback) != len(choices)
            or not all(isinstance(f, str) for f in feedback)):
        raise ValueError("feedback must give one line per choice: why a wrong one is tempting and wrong")
    for number, line in enumerate(feedback, 1):
        if number == answer and line.strip():
            raise ValueError(f"feedback: choice {number} is the answer; its line stays empty")
        if number != answer and not 20 <= len(line.strip()) <= MAX_FEEDBACK:
            raise ValueError(f"feedback: choice {number} needs one line of its own (up to {MAX_FEEDBACK} "
                             "characters): why it is tempting and why it is wrong")
    watch = p.get("watch_s", 20.0)
    if isinstance(watch, bool) or not isinstance(watch, (int, float)) or not 1 <= watch <= 600:
        raise ValueError("watch_s must be 1 to 600 simulated seconds")
    run = p.get("run", {})
    if not isinstance(run, dict):
        raise ValueError("run must be a table of dial settings (dotted scenario paths)")
    dials = {d.name: d for d in step.dials}
    for path, value in run.items():
        if path not in dials:
            raise ValueError(f"run: {path!r} is not one of the step's dials")
        dials[path].check(value)


def _dial_words(step, settings: dict) -> str:
    """Dial settings as the learner reads them on the dials: "Token budget 512 tokens"."""
    words = []
    for dial in step.dials:
        if dial.name in settings:
            value = settings[dial.name]
            shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{value:g}" \
                if isinstance(value, float) else str(value)
            words.append(f"{dial.label} {shown}" + (f" {dial.unit}" if dial.unit else ""))
    return ", ".join(words)


def _own_label(step) -> str:
    """The step's own run named beside its comparison's, by what differs ("continuous
    batching", "512 seats"); "" without a comparison or a difference the names say."""
    names = step.compare.names(step.scenario) if step.compare else None
    if names is None:
        return ""
    what, (own, _) = names
    return f"{own} batching" if what == "batching" else own


def _build(step) -> Predict:
    p = step.activity.params
    return Predict(p["question"], tuple(p["choices"]), p["answer"], p["explain"],
                   tuple(p.get("show", ())), p.get("compute", ""), step.scenario, p.get("run"),
                   float(p.get("watch_s", 20.0)), step.compare.label if step.compare else "",
                   _dial_words(step, p.get("run", {})), tuple(p.get("feedback", ())), _own_label(step),
                   step.compare.names(step.scenario) if step.compare else None)


KIND = Kind("predict", "", frozenset({"question", "choices", "answer", "explain", "show", "compute", "run",
                                      "watch_s", "batches", "hides", "feedback"}), _build, _check)
