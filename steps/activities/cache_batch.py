"""Step 15's drill: the batch the KV cache holds."""

from __future__ import annotations

from sim.errors import SimError
from sim.profiles import BUILTIN_PROFILES, Deployment, ProfileSet

from ..figures import fmt, gigabytes
from .base import DRILL_TOLERANCE, GIB, Drill, Kind, Question, Slip, seeded_rng


class CacheBatchDrill(Drill):
    """Step 15: cache tokens ÷ tokens per sequence, on other GPUs, memory settings and lengths."""

    name = "cache_batch"
    title = "The batch the cache allows"
    GPUS = ("h100-sxm", "h200", "a100-80gb", "l40s", "b200")
    MODELS = ("llama-3.1-8b", "llama-3.2-3b", "qwen2.5-14b")
    UTILISATIONS = (0.80, 0.85, 0.88, 0.90, 0.92, 0.95)
    PROMPTS = (1024, 2048, 4096, 8192, 16384)
    OUTPUTS = (256, 512, 1024, 2048)

    def __init__(self, tolerance: float = 0.03, profiles: ProfileSet | None = None,
                 worked: tuple | None = None) -> None:
        super().__init__(tolerance)
        self.profiles = profiles or BUILTIN_PROFILES
        self.worked = worked
        """(gpu, model, utilisation, prompt, output) the lesson works through: never asked."""

    def _draw(self, rng) -> tuple[Deployment, int, int]:
        while True:
            gpu = str(rng.choice(self.GPUS))
            model = self.profiles.model(str(rng.choice(self.MODELS)))
            util = float(rng.choice(self.UTILISATIONS))
            prompt = int(rng.choice(self.PROMPTS))
            output = int(rng.choice(self.OUTPUTS))
            if prompt + output > model.max_model_len or (gpu, model.id, util, prompt, output) == self.worked:
                continue
            try:
                dep = self.profiles.deployment(gpu, model.id, gpu_memory_utilization=util)
            except SimError:
                continue  # the model does not fit this GPU at this setting
            if dep.kv_cache_tokens / (prompt + output) >= 4:
                return dep, prompt, output

    def new_question(self, seed: int) -> Question:
        return self.question(*self._draw(seeded_rng(seed)))

    def question(self, dep: Deployment, prompt: int, output: int) -> Question:
        """The question for this deployment and these lengths."""
        gpu, model = dep.gpu, dep.model
        per_seq = prompt + output
        answer = dep.kv_cache_tokens / per_seq
        weights = dep.weight_bytes
        kv_per_token = dep.kv_bytes_per_token
        util = dep.gpu_memory_utilization
        kv_mem = util * gpu.memory_bytes - weights - dep.reserve_bytes
        prompt_md = (
            f"**{model.name}** ({fmt(model.params / 1e9)} B parameters, bf16; {model.layers} layers, "
            f"{model.kv_heads} KV heads, head dim {model.head_dim}) on one **{gpu.name}** (CUDA reports "
            f"{fmt(gpu.memory_bytes / 1e9)} GB); `--gpu-memory-utilization {util:g}`, reserve "
            f"{fmt(dep.reserve_bytes / 1e9)} GB. Each request: {prompt:,} tokens in, {output:,} out.\n\n"
            "How many such **sequences** fit in the KV cache at full length?"
        )
        hints = (
            "KV memory = utilisation × GPU memory − weights − reserve; KV bytes per token = "
            "2 × layers × KV heads × head dim × 2 bytes.",
            f"Here {util:g} × {fmt(gpu.memory_bytes / 1e9)} GB − {gigabytes(weights)} GB − "
            f"{fmt(dep.reserve_bytes / 1e9)} GB ≈ {fmt(kv_mem / 1e9)} GB, and {kv_per_token:,} bytes "
            f"per token; divide, then divide by {per_seq:,}.",
        )
        derivation = "\n".join([
            f"- KV memory = {util:g} × {fmt(gpu.memory_bytes / 1e9)} GB − {gigabytes(weights)} GB − "
            f"{fmt(dep.reserve_bytes / 1e9)} GB ≈ **{fmt(kv_mem / 1e9)} GB**",
            f"- KV per token = 2 × {model.layers} × {model.kv_heads} × {model.head_dim} × 2 B = "
            f"**{kv_per_token:,} B**",
            f"- cache = {fmt(kv_mem / 1e9)} GB ÷ {kv_per_token:,} B ≈ **{fmt(dep.kv_cache_tokens)} tokens**",
            f"- batch = {fmt(dep.kv_cache_tokens)} ÷ {per_seq:,} ≈ **{fmt(answer)} sequences**",
        ])

        def batch(memory: float, reserve: float = dep.reserve_bytes, kv: float = kv_per_token,
                  tokens: int = per_seq, w: float = weights) -> float:
            return max(0.0, memory - w - reserve) / kv / tokens

        slips = (
            Slip(batch(gpu.memory_bytes), "You used all the GPU's memory: vLLM takes only "
                                          f"--gpu-memory-utilization ({util:g}) of it."),
            Slip(batch(util * gpu.memory_bytes, reserve=0.0),
                 f"Remember the reserve: {fmt(dep.reserve_bytes / 1e9)} GB stays outside the cache."),
            Slip(batch(util * gpu.memory_bytes, w=0.0),
                 f"The weights ({gigabytes(weights)} GB) take their share of memory first."),
            Slip(batch(util * gpu.memory_bytes, tokens=prompt),
                 "You divided by the prompt only; a sequence ends holding prompt + output tokens."),
            Slip(answer * 2.0, "Twice too many: KV per token counts both K and V, each 2 bytes in bf16."),
            Slip(answer / 2.0, "Half the answer: KV entries are 2 bytes each in bf16, not 4."),
            Slip(batch(util * gpu.memory_bytes / GIB * 1e9),
                 "GB and GiB got mixed: CUDA's total is in bytes; "
                 f"{fmt(gpu.memory_bytes / GIB)} GiB is {fmt(gpu.memory_bytes / 1e9)} GB."),
            Slip(answer * model.kv_heads / model.q_heads,
                 f"Use the KV heads ({model.kv_heads}), not the query heads ({model.q_heads}): "
                 "grouped-query attention keeps fewer KV heads."),
        )
        return Question(prompt_md, answer, "sequences", self.tolerance, hints, derivation, slips,
                        whole_number=True,
                        run_dials={"gpu": gpu.id, "model": model.id, "gpu_memory_utilization": util,
                                   "workload.input.mean": prompt, "workload.output.mean": output},
                        facts={"gpu": gpu.id, "model": model.id, "util": util, "prompt": prompt,
                               "output": output, "cache_tokens": dep.kv_cache_tokens})


def _build(step) -> CacheBatchDrill:
    sc = step.scenario
    # The cache batch the step's own text works out: its GPU, model, memory setting and lengths.
    worked = (sc.gpu, sc.model, sc.gpu_memory_utilization, sc.workload.input.mean, sc.workload.output.mean)
    return CacheBatchDrill(step.activity.params.get("tolerance", DRILL_TOLERANCE), worked=worked)


KIND = Kind("drill", "cache_batch", frozenset({"tolerance", "rates", "outputs"}), _build)
