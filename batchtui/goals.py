"""What a step without a question asks of the learner, and when it is done.

Steps with a prediction, a drill, a reading or a break-it challenge say that themselves (their
view's `goal()`). The others are completed by doing what the lesson asks, watched on the live
run (STEPS.md):

- a continuous-batching step whose dials set the scheduler's limits (steps 6 and 12): make
  each of those limits bind at least once (the iteration view names it), with settings of the
  learner's own (a limit that binds at the step's starting settings does not count);
- a dynamic-batching step (step 4): find a traffic that one batch size cannot keep up with and a
  bigger one can;
- the cheat sheet (step 19): work it out for another GPU or model;
- the playground (step 20): move a dial, write the scenario to a file and open it again.

A goal observes what the screen passes it (frames, dial changes, keys) and says `ask`, `state`
("open" or "done") and a short `note` of what is still open. Pure logic: no Textual here.
"""

from __future__ import annotations

from typing import Any

from .limit_words import LIMIT_WORDS

LIMIT_OF_DIAL = {
    "engine.max_num_batched_tokens": "token_budget",
    "engine.max_num_seqs": "max_num_seqs",
    "gpu_memory_utilization": "kv_cache",
    "num_gpu_blocks_override": "kv_cache",
}
SETTLE_S = 2.0
"""Simulated seconds a dynamic-batching setting runs before it counts as keeping up or not."""
BEHIND_BATCHES = 4
"""A queue of this many full batches means the setting is falling behind."""


class StepGoal:
    """The default: nothing to complete, only a suggestion."""

    def __init__(self, step) -> None:
        self.step = step

    @property
    def ask(self) -> str:
        if self.step.dials:
            return "Run it (space), move the dials (tab) and watch what changes"
        return "Run it (space) and watch"

    @property
    def done(self) -> bool:
        return False

    @property
    def completable(self) -> bool:
        return False

    def note(self, short: bool = False) -> str:
        """What is still open, in a few words (`short`: fewer, for a narrow line)."""
        return ""

    # What the screen passes on; each returns True if the goal's state changed.
    def observe(self, snapshot) -> bool:
        return False

    def dial_moved(self, name: str, value: Any) -> bool:
        return False

    def key(self, action: str) -> bool:
        return False


class Checklist(StepGoal):
    """Done when every item is ticked; the note lists them, ticked or open."""

    items: dict[str, str] = {}
    short_items: dict[str, str] = {}
    """Fewer words for some items, for a narrow goal line (each keeps its key)."""

    def __init__(self, step) -> None:
        super().__init__(step)
        self.ticked: set[str] = set()

    @property
    def completable(self) -> bool:
        return True

    @property
    def done(self) -> bool:
        return bool(self.items) and self.ticked >= set(self.items)

    def tick(self, item: str) -> bool:
        if item in self.items and item not in self.ticked:
            self.ticked.add(item)
            return True
        return False

    def note(self, short: bool = False) -> str:
        words = {**self.items, **self.short_items} if short else self.items
        return " ".join(f"{said} {'✓' if item in self.ticked else '○'}" for item, said in words.items())


class BindingLimits(Checklist):
    """Make each limit the step's dials control bind at least once, once a dial has moved: what
    binds at the step's own settings is the lesson's example, not the learner's doing."""

    def __init__(self, step, limits: list[str]) -> None:
        super().__init__(step)
        self.items = {limit: LIMIT_WORDS[limit].short for limit in limits}
        self.moved = False

    @property
    def ask(self) -> str:
        return "Make each limit bind:"

    def dial_moved(self, name: str, value: Any) -> bool:
        self.moved = True
        return False

    def observe(self, snapshot) -> bool:
        report = snapshot.last
        return self.moved and report is not None and self.tick(report.binding_limit)


class KeepUp(Checklist):
    """Dynamic batching: at one traffic, a batch size that falls behind and a bigger one that
    keeps up. A setting counts once it has run SETTLE_S simulated seconds."""

    items = {"behind": "a batch size falls behind", "keeps_up": "a bigger one keeps up"}
    short_items = {"behind": "a size falls behind"}

    def __init__(self, step) -> None:
        super().__init__(step)
        self.setting: tuple[Any, Any] | None = None
        self.since = 0.0
        self.verdicts: dict[tuple[Any, Any], bool] = {}
        """(traffic, batch size) -> kept up."""
        self.rate = None

    @property
    def ask(self) -> str:
        return "Same traffic:"

    def dial_moved(self, name: str, value: Any) -> bool:
        if name == "workload.request_rate":
            self.rate = value
        return False

    def observe(self, snapshot) -> bool:
        rate = self.rate if self.rate is not None else self.step.scenario.workload.request_rate
        setting = (rate, snapshot.max_num_seqs)
        if setting != self.setting:
            self.setting, self.since = setting, snapshot.time
            return False
        if setting in self.verdicts or snapshot.time - self.since < SETTLE_S:
            return False
        batch = max(1, snapshot.max_num_seqs)
        if snapshot.queue_len > BEHIND_BATCHES * batch:
            self.verdicts[setting] = False
        elif snapshot.queue_len <= batch:
            self.verdicts[setting] = True
        else:
            return False
        changed = False
        for (r, size), kept_up in self.verdicts.items():
            if kept_up:
                continue
            changed |= self.tick("behind")
            if any(kept and r2 == r and size2 > size for (r2, size2), kept in self.verdicts.items()):
                changed |= self.tick("keeps_up")
        return changed


class OtherHardware(Checklist):
    """The cheat sheet: work it out again for another GPU or model."""

    items = {"hardware": "the sheet for another GPU or model"}

    @property
    def ask(self) -> str:
        return "Turn a dial:"

    def dial_moved(self, name: str, value: Any) -> bool:
        return name in ("gpu", "model") and self.tick("hardware")


class Playground(Checklist):
    items = {"dial": "move a dial", "save": "save it (w)", "open": "open it again (o)"}
    short_items = {"save": "save (w)", "open": "reopen (o)"}

    @property
    def ask(self) -> str:
        return "Your own server:"

    def dial_moved(self, name: str, value: Any) -> bool:
        return self.tick("dial")

    def key(self, action: str) -> bool:
        return self.tick({"save_scenario": "save", "load_scenario": "open"}.get(action, ""))


def goal_for(step) -> StepGoal:
    """The goal of a step whose activity asks no question of its own."""
    kind = step.activity.kind
    if kind == "cheat_sheet":
        return OtherHardware(step)
    if kind == "playground":
        return Playground(step)
    batching = step.scenario.engine_config().batching
    if batching == "dynamic":
        return KeepUp(step)
    limits = []
    for dial in step.dials:
        limit = LIMIT_OF_DIAL.get(dial.name)
        if limit and limit not in limits:
            limits.append(limit)
    if batching == "continuous" and len(limits) >= 2:
        return BindingLimits(step, limits)
    return StepGoal(step)
