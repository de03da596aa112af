"""The playground's `l`: a model (the mixtures of experts among them) on a kind of GPU, with the
fewest GPUs of that kind that hold it, and a speculative decoding method with its draft tokens.

It gets a scenario (the live run's) and the GPU kinds to offer, and dismisses with a
`PickedDeployment` (or None): the playground checks it and runs it, or says why not and keeps
the model it had. Nothing here touches the run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from sim.deployments import ModelChoice, model_choices
from sim.profiles import TENSOR_PARALLEL_SIZES
from sim.speculative import EAGLE3_HEADS, METHOD_NAMES, MAX_SPECULATIVE_TOKENS, PICKED_K, PICKED_METHODS, method_offered

from ..keys import display
from .modal import OverlayScreen

METHODS = ("none",) + PICKED_METHODS
"""What `s` cycles through: off, then each method a picker offers."""


@dataclass(frozen=True)
class PickedDeployment:
    """What the learner picked: a model on `gpus` GPUs of a kind (None: no tensor-parallel size
    holds it) and a speculative decoding method ("none" for off) with K draft tokens."""

    model_id: str
    gpu: str
    gpus: int | None
    method: str
    k: int


def choice_line(choice: ModelChoice, gpu_name: str, width: int) -> str:
    """One model's row: its name, dense or its experts, MTP if it has it, and the GPUs it needs."""
    kind = f"MoE {choice.experts_per_token} of {choice.experts} experts" if choice.experts else "dense"
    if choice.mtp_layers:
        kind += ", MTP"
    needs = (f"{choice.gpus} × {gpu_name}" if choice.gpus is not None
             else f"over {TENSOR_PARALLEL_SIZES[-1]} × {gpu_name}")
    left = f"{choice.name:<17} {kind:<26}"
    return f"{left} {needs}"[:width]


def method_line(method: str, k: int, choice: ModelChoice | None, profiles, width: int) -> str:
    """The speculative decoding line: the method and K, and whether the highlighted model takes
    it (an EAGLE-3 head named where the line has room)."""
    if method == "none":
        return "Speculative decoding: none"
    words = f"Speculative decoding: {METHOD_NAMES[method]}, K = {k}"
    if choice is None:
        return words
    model = profiles.model(choice.model_id)
    why = method_offered(method, model)
    if why is not None:
        return f"{words}: not for {choice.name}"
    head = f"{words}, head {EAGLE3_HEADS[model.hf_id]}" if method == "eagle3" else words
    return head if len(head) <= width else words


class ModelPickerScreen(OverlayScreen[PickedDeployment | None]):
    """↑ ↓ a model, ← → the GPU kind, s the method, + - its draft tokens, Enter runs it; Escape,
    q or l keep the model the run has."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [
        Binding("escape,q,l", "close", "keep", show=False),
        Binding("left", "gpu(-1)", show=False), Binding("right", "gpu(1)", show=False),
        Binding("s", "method", show=False),
        Binding("plus,equals_sign", "draft_tokens(1)", show=False), Binding("minus", "draft_tokens(-1)", show=False),
    ]

    def __init__(self, scenario, gpus: tuple[str, ...]) -> None:
        super().__init__()
        self.scenario = scenario
        """The live run's scenario: the model it runs is highlighted; its settings size the rows."""
        self.profiles = scenario.profiles()
        self.gpus = gpus if scenario.gpu in gpus else (scenario.gpu, *gpus)
        """The GPU kinds ← → step through (the step's GPU dial's)."""
        self.gpu = scenario.gpu
        spec = scenario.speculative()
        self.method = spec.method if spec is not None and spec.method in METHODS else "none"
        self.k = spec.k if spec is not None else PICKED_K
        self.choices: list[ModelChoice] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-body"):
            ascii_only = self.app.settings.ascii_only
            arrows = [display(name, ascii_only) for name in ("up", "down", "left", "right")]
            title = (f"{arrows[0]} {arrows[1]} model · {arrows[2]} {arrows[3]} GPU · s drafts · + - K · "
                     "Enter runs · Esc keeps")
            yield Static(self.app.words(title), id="picker-title", markup=False)
            yield Static("", id="picker-gpu", markup=False)
            yield Static("", id="picker-method", markup=False)
            yield OptionList(id="picker-list")
            yield Static("", id="picker-about", markup=False)

    def on_mount(self) -> None:
        if not self.query(OptionList):
            return  # the app is quitting: mounted without being composed
        self.fill()
        self.query_one(OptionList).focus()

    # -- what is shown
    @property
    def highlighted(self) -> ModelChoice | None:
        listing = self.query_one(OptionList)
        index = listing.highlighted
        return self.choices[index] if index is not None and index < len(self.choices) else None

    def fill(self) -> None:
        """The rows for the GPU kind on show, the highlight kept on the same model."""
        words = self.app.words
        listing = self.query_one(OptionList)
        keep = self.highlighted.model_id if self.choices and self.highlighted else self.scenario.model
        self.choices = model_choices(self.scenario.replace(gpu=self.gpu), self.profiles)
        gpu = self.profiles.gpu(self.gpu)
        listing.clear_options()
        width = max(20, min(self.app.size.width, 78) - 4)
        listing.add_options([Option(words(choice_line(c, gpu.name, width)), id=c.model_id)
                             for c in self.choices])
        ids = [c.model_id for c in self.choices]
        listing.highlighted = ids.index(keep) if keep in ids else 0
        self.query_one("#picker-gpu", Static).update(
            words(f"On {gpu.name}: each row, the fewest GPUs that hold the model"))
        self.show_choice()

    def show_choice(self) -> None:
        words = self.app.words
        choice = self.highlighted
        width = max(20, min(self.app.size.width, 78) - 2)
        self.query_one("#picker-method", Static).update(words(method_line(self.method, self.k, choice,
                                                                          self.profiles, width)))
        self.query_one("#picker-about", Static).update(words(choice.description) if choice else "")

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.show_choice()

    # -- keys
    def action_gpu(self, step: int) -> None:
        at = self.gpus.index(self.gpu)
        self.gpu = self.gpus[(at + step) % len(self.gpus)]
        self.fill()

    def action_method(self) -> None:
        self.method = METHODS[(METHODS.index(self.method) + 1) % len(METHODS)]
        self.show_choice()

    def action_draft_tokens(self, step: int) -> None:
        if self.method != "none":
            self.k = max(1, min(MAX_SPECULATIVE_TOKENS, self.k + step))
            self.show_choice()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        choice = self.choices[event.option_index]
        self.dismiss(PickedDeployment(choice.model_id, self.gpu, choice.gpus, self.method, self.k))
