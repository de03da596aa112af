"""Speculative decoding: vLLM's `--speculative-config`, how often drafts are accepted, and the
shape of the drafter that proposes them.

A drafter proposes K tokens after each step; the next step's target forward pass verifies them
with the request's own next token (1 + K rows), and keeps the longest accepted prefix plus one
token of its own. The scheduler's side (drafts count against the token budget, rejected drafts
roll back `num_computed_tokens` while their KV blocks stay held, ...) is in
`sim.schedulers.continuous`; the cost of verifying and of drafting in `sim.cost`.

Acceptance is given per draft position as vLLM's metrics give it (its "Per-position acceptance
rate" log line, `vllm bench serve`'s `spec_decode_per_position_acceptance_rates`): rate i is the
share of drafts whose first i+1 tokens were all accepted, so the rates never rise. The defaults
per method come from published vLLM measurements (`DEFAULT_ACCEPTANCE`); a config pins its own
with vLLM's synthetic rejection sampling (`"rejection_sample_method": "synthetic"` and
`synthetic_acceptance_rates` or `synthetic_acceptance_length`), which makes real vLLM accept
drafts at exactly those rates, so the simulator and vLLM read the same JSON the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .errors import ConfigError

METHODS = ("eagle", "eagle3", "mtp", "ngram", "draft_model")
"""The methods modelled (vLLM's names; its per-model MTP names, deepseek_mtp and the like, are mtp)."""

NOT_MODELLED = ("medusa", "mlp_speculator", "suffix", "custom_class", "extract_hidden_states", "ngram_gpu",
                "dflash", "dspark")

# Keys vLLM's SpeculativeConfig takes that change nothing the simulator prices (recorded, accepted).
RECORDED_KEYS = (
    "prompt_lookup_max", "prompt_lookup_min", "disable_padded_drafter_batch", "enforce_eager", "quantization",
    "max_model_len", "revision", "code_revision", "draft_sample_method", "use_local_argmax_reduction",
    "disable_eagle_block_drop", "attention_backend", "moe_backend", "kv_cache_dtype", "draft_load_config",
    "index_share_for_mtp_iteration", "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob",
)
KEYS = ("method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "rejection_sample_method",
        "synthetic_acceptance_rates", "synthetic_acceptance_length") + RECORDED_KEYS
REFUSED_KEYS = {
    "parallel_drafting": "parallel drafting (all drafts in one pass) is not modelled",
    "num_speculative_tokens_per_batch_size": "dynamic speculative decoding (K by batch size) is not modelled",
    "use_heterogeneous_vocab": "draft and target vocabularies that differ are not modelled",
    "enable_adaptive_verification": "adaptive verification (DSpark only in vLLM) is not modelled",
    "tensor_parallel_size": "vLLM refuses it in a speculative config: pass draft_tensor_parallel_size",
}
MAX_SPECULATIVE_TOKENS = 64
SPEC_JSON = "a JSON object of vLLM's speculative config: method, model, num_speculative_tokens and the like"

# Per-position acceptance rates (the share of drafts whose first i+1 tokens are accepted) by
# method, with where each comes from. Positions past a list's end continue at its last
# conditional rate (rate[i] / rate[i-1]): an assumption, said where it is used.
DEFAULT_ACCEPTANCE: dict[str, tuple[tuple[float, ...], str]] = {
    # vLLM issue 26191 (2025): Llama 3.1 8B Instruct with yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, K=7,
    # MT-Bench, temperature 0, vLLM V1: "acceptance at token 0..6: 0.74 0.54 0.41 0.31 0.23 0.17
    # 0.13", mean acceptance length 3.53.
    "eagle3": ((0.74, 0.54, 0.41, 0.31, 0.23, 0.17, 0.13),
               "vLLM issue 26191: Llama 3.1 8B + EAGLE-3 head, MT-Bench, temperature 0"),
    # vLLM issue 20780 (2025): Llama 3.1 8B with yuhuili/EAGLE-LLaMA3.1-Instruct-8B on MT-Bench,
    # mean acceptance length by K: 2.10 (K=2), 2.29, 2.39, 2.43, 2.45, 2.47 (K=7); rate i is
    # AL(K=i+1) - AL(K=i) from the third position on; the first two (which only sum to 1.10 there)
    # are split so that the conditional rate of the second equals the third's.
    "eagle": ((0.73, 0.37, 0.19, 0.10, 0.04, 0.02, 0.02),
              "vLLM issue 20780: Llama 3.1 8B + EAGLE head, MT-Bench (acceptance lengths by K)"),
    # vLLM PR 48892 (2026): an MTP speculator run 8 steps, GSM8K, temperature 0, vLLM's bench
    # "Per-position acceptance (%)": 76.17 61.58 51.25 42.43 36.40 30.94 27.22 23.65. (DeepSeek-V3's
    # report, arXiv 2412.19437 section 5.4.3, gives 85-90% for its one MTP token.)
    "mtp": ((0.7617, 0.6158, 0.5125, 0.4243, 0.3640, 0.3094, 0.2722, 0.2365),
            "vLLM PR 48892: an 8-step MTP speculator, GSM8K, temperature 0"),
    # vLLM issue 19254 (2025): n-gram, K=3, vLLM V1 under load, "Per-position acceptance rate:
    # 0.615, 0.464, 0.383" (mean acceptance length 2.46), the middle of the three intervals it
    # logs (0.543/0.357/0.264 and 0.730/...).
    "ngram": ((0.615, 0.464, 0.383),
              "vLLM issue 19254: n-gram, K=3, vLLM V1, per-position acceptance under load"),
}
DRAFT_MODEL_ACCEPTANCE_NEEDED = (
    "a draft model's acceptance depends on the pair of models and the traffic: give the per-position "
    "rates you measured (vLLM's 'Per-position acceptance rate') as \"rejection_sample_method\": "
    "\"synthetic\" with \"synthetic_acceptance_rates\" [...] or \"synthetic_acceptance_length\"")

NGRAM_PROPOSAL_SHARE = 0.10
"""The share of steps in which n-gram lookup finds a match and proposes drafts (it proposes
nothing otherwise, and that step verifies nothing). vLLM issue 19254's steady interval: 8,703
drafted tokens (2,901 drafts of K=3, 5,306 accepted) among 33,991 generated tokens (3,399.1
tokens/s over 10 s): 2,901 x 1 + 5,306 tokens came with drafts, so 25,784 steps had none, and
2,901 of the 28,685 steps (10 %) proposed. Prompt lookup matches far more on editing and
summarising traffic (vLLM PR 24344, an edit dataset: 993 of 1,814 steps, 55 %)."""

DRAFT_PASS_OVERHEAD_S = 0.45e-3
"""The fixed part of one drafter pass on the GPU's critical path, beyond its weights and KV read
(`sim.cost`'s roofline): kernel launches, the draft's own sampling and the next pass's inputs. From
vLLM issue 20780 (Llama 3.1 8B, H100, batch 1, MT-Bench): a step with K drafts took
TPOT x acceptance length = 10.2, 11.4, 12.5, 13.7, 14.5, 15.2 ms for K = 2..7 with the EAGLE-3 head,
about 1.00 ms more a draft, and 9.2, 9.8, 10.7, 11.5, 12.1, 12.8 ms with the EAGLE-1 head, about
0.73 ms more; the heads' rooflines here (0.28 and 0.55 ms a pass, EAGLE-1's head reading the full
128k-token output head) leave 0.72 and 0.18 ms: 0.45 ms, their mean, is taken for every drafter."""

EAGLE3_DRAFT_VOCAB = 32000
"""EAGLE-3 heads predict over a reduced vocabulary (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's
config.json: draft_vocab_size 32000 of Llama 3's 128,256)."""


EAGLE3_HEADS: dict[str, str] = {
    # Published EAGLE-3 heads by target (Hugging Face ids), from the EAGLE authors' table of
    # EAGLE-3 models (SafeAILab/EAGLE README, "EAGLE-3 Models"; official for the Llama 3 heads),
    # and for gpt-oss-20b Red Hat's speculators release (RedHatAI/gpt-oss-20b-speculator.eagle3).
    # A model without one here can still run EAGLE-3 from a --speculative-config naming its head.
    "meta-llama/Llama-3.1-8B-Instruct": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "meta-llama/Llama-3.3-70B-Instruct": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "lmsys/sglang-EAGLE3-Llama-4-Scout-17B-16E-Instruct-v1",
    "Qwen/Qwen3-30B-A3B": "AngelSlim/Qwen3-a3B_eagle3",
    "Qwen/Qwen3-32B": "AngelSlim/Qwen3-32B_eagle3",
    "Qwen/Qwen3-235B-A22B": "nvidia/Qwen3-235B-A22B-Eagle3",
    "openai/gpt-oss-120b": "nvidia/gpt-oss-120b-Eagle3",
    "openai/gpt-oss-20b": "RedHatAI/gpt-oss-20b-speculator.eagle3",
}

PICKED_METHODS = ("eagle3", "ngram", "mtp")
"""The methods a model picker offers (besides none): EAGLE-3 where a head is published, n-gram
for every model (it needs no weights), MTP where the model carries MTP layers."""
PICKED_K = 3
"""The draft tokens a picker starts from: the published points the simulator is checked against
were measured at K=3 (vLLM issue 20780's EAGLE-3 TPOT at batch 1, 7.07 ms without and 4.09 ms
with, and issue 19254's n-gram acceptance above)."""
METHOD_NAMES = {"eagle": "EAGLE", "eagle3": "EAGLE-3", "mtp": "MTP", "ngram": "n-gram", "draft_model": "a draft model"}


def method_offered(method: str, model) -> str | None:
    """Why `method` cannot be picked for `model` (a `ModelProfile`) in one line; None if it can."""
    if method == "eagle3" and model.hf_id not in EAGLE3_HEADS:
        return f"no published EAGLE-3 head for {model.name} is listed here"
    if method == "mtp" and model.mtp_layers <= 0:
        return f"{model.name} has no MTP layers (no num_nextn_predict_layers in its config.json)"
    if method not in PICKED_METHODS:
        return f"{method} is not offered here: one of " + ", ".join(PICKED_METHODS)
    return None


def picked_config(method: str | None, model, k: int) -> str | None:
    """The `--speculative-config` JSON for `method` with K = `k` draft tokens on `model` (None:
    off), as vLLM reads it; ConfigError, in one line, for a method the model cannot take."""
    if method in (None, "", "none"):
        return None
    why = method_offered(method, model)
    if why is not None:
        raise _refuse(f"method: {method}", "a method this model offers", why)
    data = {"method": method, "num_speculative_tokens": k}
    if method == "eagle3":
        data["model"] = EAGLE3_HEADS[model.hf_id]
    text = json.dumps(data)
    parse(text)  # (K checked as any config's)
    return text


@dataclass(frozen=True)
class SpeculativeConfig:
    """One `--speculative-config`, checked: the method, K, the draft model (a head's or a small
    model's id), the per-position acceptance rates the run draws from and where they come from."""

    method: str
    num_speculative_tokens: int
    model: str | None = None
    draft_tensor_parallel_size: int | None = None
    acceptance_rates: tuple[float, ...] = ()
    acceptance_source: str = ""
    synthetic: bool = False  # the rates were pinned by vLLM's synthetic rejection sampling
    text: str = ""

    @property
    def k(self) -> int:
        return self.num_speculative_tokens

    @property
    def lookahead_tokens(self) -> int:
        """KV slots vLLM reserves beyond the scheduled tokens of a running request
        (`Scheduler.num_lookahead_tokens`): K for drafters that keep KV of their own (EAGLE, MTP,
        a draft model), none for n-gram."""
        return 0 if self.method == "ngram" else self.num_speculative_tokens

    @property
    def draft_slots_per_seat(self) -> int:
        """vLLM's `max_num_new_slots_for_drafting`: a draft model keeps one unsliced input token
        per request, which vLLM takes off the token budget for every seat
        (`VllmConfig._set_max_num_scheduled_tokens`); the others need none."""
        return 1 if self.method == "draft_model" else 0

    @property
    def proposal_share(self) -> float:
        """The share of steps in which the drafter proposes at all (n-gram only finds a match
        sometimes, `NGRAM_PROPOSAL_SHARE`)."""
        return NGRAM_PROPOSAL_SHARE if self.method == "ngram" else 1.0

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens a verification yields on average when every draft is scheduled: 1 + the sum of
        the per-position rates (vLLM's mean acceptance length)."""
        return 1.0 + sum(self.acceptance_rates)

    def describe(self) -> str:
        """One line for a run's header."""
        rates = ", ".join(f"{r:.2f}" for r in self.acceptance_rates)
        draft = f" ({self.model})" if self.model else ""
        share = self.proposal_share
        proposes = f", drafts proposed on {share:.0%} of steps" if share < 1.0 else ""
        return (f"{self.method}{draft}, K={self.k}; acceptance per position {rates} "
                f"(mean acceptance length {self.mean_acceptance_length:.2f}{proposes}; {self.acceptance_source})")


def _refuse(value, allowed: str, why: str = "") -> ConfigError:
    return ConfigError("speculative_config", value, allowed, why)


def parse(text) -> SpeculativeConfig | None:
    """A `--speculative-config` (JSON text, or a dict as a scenario file holds it) checked as vLLM
    checks it; None for an empty one. ConfigError, naming the key, for anything refused."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, dict):
        data = text
        source = json.dumps(text, sort_keys=True)
    elif isinstance(text, str):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise _refuse(text, SPEC_JSON) from None
        source = text.strip()
    else:
        raise _refuse(text, SPEC_JSON)
    if not isinstance(data, dict):
        raise _refuse(text, SPEC_JSON)
    data = {str(key).replace("-", "_"): value for key, value in data.items()}
    for key, why in REFUSED_KEYS.items():
        if key in data and data[key] not in (None, False, [], 0):
            raise _refuse(f"{key}: {data[key]!r}", "a config without it", why)
    unknown = sorted(set(data) - set(KEYS) - set(REFUSED_KEYS))
    if unknown:
        raise _refuse(unknown[0], "a key of vLLM's speculative config: " + ", ".join(KEYS[:7]) + ", ...")
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise _refuse(f"model: {model!r}", "a model id (the draft head or the draft model)")
    method = data.get("method")
    if method is None:
        method = _method_from_model(model)
    if not isinstance(method, str):
        raise _refuse(f"method: {method!r}", "one of " + ", ".join(METHODS))
    if method.endswith("_mtp"):
        method = "mtp"  # vLLM's per-model MTP names
    if method == "[ngram]":
        method = "ngram"
    if method in NOT_MODELLED:
        raise _refuse(f"method: {method}", "one of " + ", ".join(METHODS), f"{method} is not modelled")
    if method not in METHODS:
        raise _refuse(f"method: {method}", "one of " + ", ".join(METHODS))
    k = data.get("num_speculative_tokens")
    if k is None:
        raise _refuse("num_speculative_tokens: missing", "a whole number of draft tokens >= 1",
                      "vLLM requires it unless the draft's config names n_predict, which is not read here")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SPECULATIVE_TOKENS:
        raise _refuse(f"num_speculative_tokens: {k!r}", f"a whole number from 1 to {MAX_SPECULATIVE_TOKENS}")
    if method in ("eagle", "eagle3", "draft_model") and model is None:
        raise _refuse(f"model for {method}: missing", "the id of the draft " + ("model" if method == "draft_model"
                                                                               else "head") + " to load")
    draft_tp = data.get("draft_tensor_parallel_size")
    if draft_tp is not None and (isinstance(draft_tp, bool) or draft_tp not in (1, 2, 4, 8)):
        raise _refuse(f"draft_tensor_parallel_size: {draft_tp!r}", "1 or the target's tensor parallel size")
    for key in ("prompt_lookup_max", "prompt_lookup_min"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise _refuse(f"{key}: {value!r}", "a whole number >= 1")
    low, high = data.get("prompt_lookup_min"), data.get("prompt_lookup_max")
    if low is not None and high is not None and low > high:
        raise _refuse(f"prompt_lookup_min: {low}", f"at most prompt_lookup_max ({high})")
    rates, where, synthetic = _acceptance(data, method, k)
    return SpeculativeConfig(method=method, num_speculative_tokens=k, model=model,
                             draft_tensor_parallel_size=draft_tp, acceptance_rates=rates,
                             acceptance_source=where, synthetic=synthetic, text=source)


def _method_from_model(model) -> str:
    """vLLM's guess of the method from the draft's name when none is given."""
    if not isinstance(model, str):
        raise _refuse("method: missing", "one of " + ", ".join(METHODS), "name the method (or a draft model)")
    name = model.lower()
    if name in ("ngram", "[ngram]"):
        return "ngram"
    if "eagle3" in name or "eagle-3" in name:
        return "eagle3"
    if "eagle" in name:
        return "eagle"
    return "draft_model"


def _acceptance(data: dict, method: str, k: int) -> tuple[tuple[float, ...], str, bool]:
    """The per-position rates a run draws from (K of them) and where they come from."""
    sample = data.get("rejection_sample_method", "standard")
    given_rates = data.get("synthetic_acceptance_rates")
    given_length = data.get("synthetic_acceptance_length")
    if sample not in ("standard", "synthetic", "block"):
        raise _refuse(f"rejection_sample_method: {sample!r}", "standard, synthetic or block")
    if sample != "synthetic":
        if given_rates is not None or given_length is not None:
            raise _refuse("synthetic_acceptance_rates", "only with \"rejection_sample_method\": \"synthetic\"",
                          "as vLLM requires")
        if method == "draft_model":
            raise _refuse("draft_model without acceptance rates", "synthetic acceptance rates",
                          DRAFT_MODEL_ACCEPTANCE_NEEDED)
        base, where = DEFAULT_ACCEPTANCE[method]
        rates = _extend(base, k)
        if k > len(base):
            where += f"; positions past {len(base)} continue at its last conditional rate (an assumption)"
        return rates, where, False
    if (given_rates is None) == (given_length is None):
        raise _refuse("synthetic acceptance", "exactly one of synthetic_acceptance_rates and "
                                              "synthetic_acceptance_length", "as vLLM requires")
    if given_rates is not None:
        if (not isinstance(given_rates, list) or len(given_rates) != k
                or not all(isinstance(r, (int, float)) and not isinstance(r, bool) and 0 <= r <= 1
                           for r in given_rates)):
            raise _refuse(f"synthetic_acceptance_rates: {given_rates!r}",
                          f"a list of {k} rates in [0, 1], one per draft position")
        if any(given_rates[i] > given_rates[i - 1] for i in range(1, k)):
            raise _refuse(f"synthetic_acceptance_rates: {given_rates!r}", "rates that never rise",
                          "rate i is the share of drafts whose first i+1 tokens are all accepted")
        return tuple(float(r) for r in given_rates), "the config's synthetic_acceptance_rates", True
    if (isinstance(given_length, bool) or not isinstance(given_length, (int, float))
            or not 1.0 <= given_length <= k + 1):
        raise _refuse(f"synthetic_acceptance_length: {given_length!r}", f"a number in [1, {k + 1}]")
    # vLLM's own resolution of a length into rates: all of the first drafts, a share of the next.
    drafts = float(given_length) - 1.0
    full = int(drafts)
    rates = ([1.0] * full + [drafts - full] + [0.0] * k)[:k]
    return tuple(rates), f"the config's synthetic_acceptance_length {given_length:g}", True


def _extend(base: tuple[float, ...], k: int) -> tuple[float, ...]:
    rates = list(base[:k])
    if k > len(base):
        ratio = base[-1] / base[-2] if len(base) > 1 and base[-2] > 0 else 0.0
        while len(rates) < k:
            rates.append(rates[-1] * ratio)
    return tuple(rates)


def conditional_rates(rates: tuple[float, ...]):
    """The chance that draft i is accepted given that the ones before it were: rate[i] /
    rate[i-1] (the first is its own rate; after a rate of 0 nothing more is accepted), as a numpy
    array."""
    import numpy as np  # (a config is read by the app's first frame, which loads no numpy)

    out = []
    before = 1.0
    for rate in rates:
        out.append(rate / before if before > 0 else 0.0)
        before = rate
    return np.array(out, dtype=np.float64)


class Acceptance:
    """How many drafts each verification accepts, drawn per draft position from a generator of
    its own (seeded by the run's seed: the same draws whatever the traffic's draws were), and
    whether a drafter proposes at all after a step (n-gram finds no match most of the time)."""

    def __init__(self, config: SpeculativeConfig, seed: int) -> None:
        import numpy as np

        self.config = config
        self._conditional = conditional_rates(config.acceptance_rates)
        self._rng = np.random.default_rng([int(seed), 0x5EC])  # (a stream apart from the traffic's)
        self._propose = config.proposal_share

    def accepted(self, requests: list, drafts: list[int], placeholders: bool = False) -> list[int]:
        """Drafts accepted for each verifying request (`drafts[i]` scheduled for requests[i]):
        the leading run of positions that pass, at most the drafts scheduled. `placeholders`
        (async scheduling): the scheduler scheduled K placeholder drafts before the drafter ran,
        and a drafter that found nothing to propose leaves them invalid (none accepted)."""
        if not drafts:
            return []
        import numpy as np

        k = max(drafts)
        passed = self._rng.random((len(drafts), k)) < self._conditional[:k]
        run = np.cumprod(passed, axis=1).sum(axis=1)
        if placeholders and self._propose < 1.0:
            run = np.where(self._rng.random(len(drafts)) < self._propose, run, 0)
        return [min(int(a), d) for a, d in zip(run, drafts)]

    def proposes(self, request) -> bool:
        """Whether the drafter proposes for this request after this step."""
        return self._propose >= 1.0 or self._rng.random() < self._propose


class PatternAcceptance:
    """The reference traces' fake runner: a request's v-th verification accepts
    `min(accept[v mod len(accept)], drafts)` (its 'accept' list), and the drafter always
    proposes."""

    def __init__(self, patterns: dict[str, list[int]]) -> None:
        self._patterns = patterns
        self._seen: dict[str, int] = {}

    def accepted(self, requests: list, drafts: list[int], placeholders: bool = False) -> list[int]:
        out = []
        for req, d in zip(requests, drafts):
            pattern = self._patterns.get(req.request_id) or [0]
            v = self._seen.get(req.request_id, 0)
            self._seen[req.request_id] = v + 1
            out.append(min(pattern[v % len(pattern)], d))
        return out

    @staticmethod
    def proposes(request) -> bool:
        return True


@dataclass(frozen=True)
class DraftShape:
    """What the drafter's GPU passes read and compute, as `sim.cost` prices them: the weights run
    over every token of a pass (`body_params`, plus `first_params` in the first pass only), the
    output head over the rows that sample (`head_params`), its layers (all-reduces, kernel
    launches), its KV bytes per token, and the tensor-parallel size it runs at."""

    method: str
    body_params: float
    first_params: float
    head_params: float
    layers: int
    q_heads: int
    head_dim: int
    hidden: int
    kv_bytes_per_token: float  # across every GPU
    bytes_per_param: float
    tensor_parallel_size: int
    passes: int  # K: the first over the step's tokens, the rest over one token per request
    head_shared: bool = False  # its output head is the target's (read every pass, held once)
    qk_norm_layers: int = 0
    """Its layers that normalise queries and keys per head (`ModelProfile.qk_norm`), whose kernels
    each pass pays as the target's layers do (`Deployment.qk_norm_time`)."""

    @property
    def weight_bytes(self) -> float:
        """The weights it adds to the GPU's memory (a shared output head is the target's)."""
        head = 0.0 if self.head_shared else self.head_params
        return (self.body_params + self.first_params + head) * self.bytes_per_param


def draft_shape(config: SpeculativeConfig, target, profiles, tensor_parallel_size: int,
                kv_dtype_bytes: int) -> DraftShape | None:
    """The drafter's shape for a target model (a `ModelProfile`); None for n-gram (a CPU lookup,
    no GPU pass). EAGLE heads are one decoder layer of the target's width (EAGLE-3's attention
    reads the token's embedding beside the fused hidden state, 2 x hidden wide, and its head has
    a 32,000-token vocabulary); an MTP module is one of the target's own layers plus its
    projection, with the target's output head; a draft model is its own profile."""
    if config.method == "ngram":
        return None
    tp = config.draft_tensor_parallel_size or tensor_parallel_size
    h, d = target.hidden, target.head_dim
    q, kv = target.q_heads, target.kv_heads
    inter = target.intermediate_size or int(round(8 * h / 3))
    vocab = target.vocab_size
    if config.method in ("eagle", "eagle3"):
        wide = 2 * h if config.method == "eagle3" else h
        attention = wide * (q + 2 * kv) * d + q * d * h
        mlp = 3 * h * inter
        first = (3 * h * h) if config.method == "eagle3" else (2 * h * h)  # fc: fuses the target's hidden states
        head_vocab = min(EAGLE3_DRAFT_VOCAB, vocab) if config.method == "eagle3" else vocab
        # (EAGLE-1 heads use the target's output head; EAGLE-3's predicts over its own vocabulary.)
        # A head is a Llama layer, without per-head query and key norms, whatever the target: vLLM
        # builds EAGLE heads as EagleLlamaForCausalLM and EAGLE-3 heads as Eagle3LlamaForCausalLM
        # (vllm/model_executor/models/llama_eagle.py, llama_eagle3.py), and the published heads for
        # Qwen3 targets name that architecture (LlamaForCausalLMEagle3: vLLM PR 22333, AngelSlim's
        # and Tengyunw's heads). vLLM PR 43132 (2026) added Qwen3-layer EAGLE-3 heads
        # (qwen3_eagle3.py, Eagle3Qwen3ForCausalLM, with the norms), chosen for speculators
        # checkpoints by their model type; the head's own config is not read here, so those are
        # priced as a Llama layer too.
        return DraftShape(config.method, attention + mlp, first, head_vocab * h, 1, q, d, h,
                          2 * kv * d * kv_dtype_bytes, target.bytes_per_param, tp, config.k,
                          head_shared=config.method == "eagle")
    if config.method == "mtp":
        if target.mtp_layers <= 0:
            raise _refuse("method: mtp", "a model with MTP layers",
                          f"{target.name} has none (num_nextn_predict_layers in its config.json)")
        # One of the target's layers: for a mixture of experts, what a token reads and computes in one
        # (its top-k experts, not all of them); MLA's layer caches its latent, not K and V.
        unread = (target.expert_count - target.expert_top_k) * target.expert_params
        layer = (target.params - unread - target.embedding_params) / target.layers if target.layers else 0.0
        kv_bytes = (target.kv_latent_dim or 2 * kv * d) * kv_dtype_bytes
        # (The module's layer is the target's kind: its per-head q/k norms too, GLM-4.5's with use_qk_norm.)
        return DraftShape("mtp", layer + 2 * h * h, 0.0, vocab * h, 1, q, d, h,
                          kv_bytes, target.bytes_per_param, tp, config.k, head_shared=True,
                          qk_norm_layers=1 if target.qk_norm else 0)
    draft = _draft_model(config, profiles, target)
    head = draft.vocab_size * draft.hidden
    return DraftShape("draft_model", max(0.0, draft.params - head), 0.0, head, draft.layers, draft.q_heads,
                      draft.head_dim, draft.hidden,
                      2 * draft.layers * draft.kv_heads * draft.head_dim * kv_dtype_bytes,
                      draft.bytes_per_param, tp, config.k, qk_norm_layers=draft.layers if draft.qk_norm else 0)


def _draft_model(config: SpeculativeConfig, profiles, target):
    """The draft model's profile (by id or Hugging Face id), with the vocabulary check vLLM does."""
    wanted = config.model or ""
    found = None
    for model in profiles.models.values():
        names = {model.id, model.hf_id, *model.aliases}
        if wanted in names or wanted.lower() in {n.lower() for n in names if n}:
            found = model
            break
    if found is None:
        raise _refuse(f"model: {wanted}", "a model profile (an id such as llama-3.2-1b, or its Hugging Face id)",
                      "the draft model is priced from its profile: add it with --profiles or --hf-config-path")
    if found.kind != "decoder":
        raise _refuse(f"model: {wanted}", "a decoder model")
    if found.vocab_size and target.vocab_size and found.vocab_size != target.vocab_size:
        raise _refuse(f"model: {wanted}", f"a draft with the target's vocabulary ({target.vocab_size} tokens)",
                      f"its vocabulary has {found.vocab_size}; vLLM refuses such a pair")
    return found



# -- acceptance measured: vllm bench serve's spec_decode keys ------------------------------------------

@dataclass(frozen=True)
class MeasuredDrafts:
    """One run's speculative decoding counts, as `vllm bench serve` writes them (its
    `spec_decode_num_drafts`, `spec_decode_accepted_tokens` and, since vLLM 0.11,
    `spec_decode_per_position_acceptance_rates`: the share of drafts whose position i was accepted)."""

    drafts: int
    accepted: int
    per_position: tuple[float, ...] = ()


@dataclass(frozen=True)
class AcceptanceFit:
    """Acceptance per draft position fitted to measured runs, with one standard error each."""

    rates: tuple[float, ...]
    sigma: tuple[float, ...]
    drafts: int
    runs: int
    per_position: bool
    """True when the runs gave rates per position; False: fitted from accepted tokens per draft
    alone, with a constant acceptance at each position (`fit_acceptance`)."""


def fit_acceptance(runs: list[MeasuredDrafts], k: int) -> AcceptanceFit:
    """The acceptance rates per position (K of them) that best explain `runs`.

    With per-position rates: each run's accepted counts at position i are its rate times its
    drafts; pooled over the runs, rate i = accepted at i / drafts (the maximum-likelihood estimate
    of a proportion), its standard error the binomial sqrt(p (1 - p) / drafts). The pooled rates
    never rise, as each run's do. Runs without them (vLLM before 0.11) give only accepted tokens
    per draft, m = acceptance length - 1: the rates are then a^(i+1), a constant chance a that a
    draft token is accepted once those before it were (the i.i.d. model of Leviathan et al.,
    arXiv 2211.17192, section 3.5), with a solved from sum a^(i+1) = m and its error from the
    binomial-like spread of accepted tokens under that model. ValueError when no run drafted or
    a run's per-position list is not K long."""
    used = [r for r in runs if r.drafts > 0]
    if not used:
        raise ValueError("no run made a draft")
    positional = [r for r in used if r.per_position]
    for r in positional:
        if len(r.per_position) != k:
            raise ValueError(f"a run's per-position acceptance has {len(r.per_position)} positions, "
                             f"its speculative config {k} (num_speculative_tokens)")
    if positional:
        drafts = sum(r.drafts for r in positional)
        rates = tuple(min(1.0, max(0.0, sum(r.per_position[i] * r.drafts for r in positional) / drafts))
                      for i in range(k))
        sigma = tuple((p * (1 - p) / drafts) ** 0.5 for p in rates)
        return AcceptanceFit(rates, sigma, drafts, len(positional), True)
    drafts = sum(r.drafts for r in used)
    mean = min(float(k), max(0.0, sum(r.accepted for r in used) / drafts))
    low, high = 0.0, 1.0
    for _ in range(60):  # sum a^(i+1) rises with a: bisect
        mid = (low + high) / 2
        low, high = (mid, high) if sum(mid ** (i + 1) for i in range(k)) < mean else (low, mid)
    a = (low + high) / 2
    variance = sum((2 * i + 1) * a ** (i + 1) for i in range(k)) - mean ** 2  # of accepted per draft
    slope = sum((i + 1) * a ** i for i in range(k))  # d mean / d a
    sigma_a = (max(variance, 0.0) / drafts) ** 0.5 / slope if slope > 0 else float("inf")
    rates = tuple(a ** (i + 1) for i in range(k))
    sigma = tuple((i + 1) * a ** i * sigma_a for i in range(k))
    return AcceptanceFit(rates, sigma, drafts, len(used), False)


def with_rates(config: SpeculativeConfig, rates: tuple[float, ...]) -> str:
    """`config`'s JSON with its acceptance pinned to `rates` by vLLM's synthetic rejection sampling
    (rounded to 4 places, never rising), the form the simulator reads a measured acceptance in."""
    data = json.loads(config.text) if config.text.startswith("{") else {}
    data = {str(key).replace("-", "_"): value for key, value in data.items()}
    data.pop("synthetic_acceptance_length", None)
    pinned, before = [], 1.0
    for rate in rates:
        before = min(before, round(rate, 4))
        pinned.append(before)
    data.update(rejection_sample_method="synthetic", synthetic_acceptance_rates=pinned)
    return json.dumps(data)
