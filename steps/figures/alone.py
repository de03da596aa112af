"""Figures of the settings every step states, the hardware and the model, and one request served
alone (steps 1 and 2: "One request at a time").

Each figure is registered by the step that first states it; `lab` is that step's own scenario."""

from __future__ import annotations

from .base import figure, fmt, whole


# -- settings of the step's scenario, stated in the text ----------------------------------------


@figure("prompt", whole)
def _prompt(lab):
    """Prompt tokens of the step's (typical) request."""
    return lab.prompt


@figure("output", whole)
def _output(lab):
    """Output tokens of the step's (typical) request."""
    return lab.output


@figure("output_low", whole)
def _output_low(lab):
    """Shortest answer of a uniform spread of answer lengths."""
    return lab.scenario.workload.output.low


@figure("output_high", whole)
def _output_high(lab):
    """Longest answer of a uniform spread of answer lengths."""
    return lab.scenario.workload.output.high


@figure("per_sequence", whole)
def _per_sequence(lab):
    """Tokens a finished sequence holds: prompt + output."""
    return lab.prompt + lab.output


@figure("rate", 3)
def _rate(lab):
    """The step's traffic, requests/s."""
    return lab.scenario.workload.request_rate


@figure("seats", whole)
def _seats(lab):
    """--max-num-seqs (or a static or dynamic batch's size)."""
    return lab.seats


@figure("budget", whole)
def _budget(lab):
    """--max-num-batched-tokens."""
    return lab.engine.max_num_batched_tokens


@figure("memory_utilization", 2)
def _memory_utilization(lab):
    """--gpu-memory-utilization."""
    return lab.scenario.gpu_memory_utilization


# -- the hardware and the model ---------------------------------------------------------------


@figure("bytes_per_param", 1)
def _bytes_per_param(lab):
    """Bytes of one weight (bf16)."""
    return lab.model.bytes_per_param


def gigabytes(size_bytes: float) -> str:
    """A size of weights in GB as the lessons and their drills write it,
    one rule: four significant figures, "16.06 GB" (step 2's worked answer read "16.1 GB"
    beside its lesson's "16.06 GB", and divided 8,000 GB/s by it into "≈ 498")."""
    return fmt(size_bytes / 1e9, 4)


@figure("weights_gb", lambda gb: gigabytes(gb * 1e9))
def _weights_gb(lab):
    """Bytes of weights, GB."""
    return lab.deployment.weight_bytes / 1e9


@figure("bandwidth_tb", 3)
def _bandwidth_tb(lab):
    """The GPU's memory bandwidth, TB/s."""
    return lab.gpu.hbm_bandwidth / 1e12


@figure("gpu_memory_gb", 3)
def _gpu_memory_gb(lab):
    """GPU memory as CUDA reports it, GB."""
    return lab.gpu.memory_bytes / 1e9


@figure("gpu_memory_gib", 3)
def _gpu_memory_gib(lab):
    """The same memory in GiB (2³⁰ bytes): about what a GPU's name says ("80 GB")."""
    return lab.gpu.memory_bytes / 2**30


@figure("reserve_gb", 2)
def _reserve_gb(lab):
    """Memory vLLM keeps for activations and CUDA graphs, GB."""
    return lab.deployment.reserve_bytes / 1e9


# -- one request alone (steps 1 and 2) --------------------------------------------------------


@figure("prefill_ms", 2)
def _prefill_ms(lab):
    """The prefill pass of one request alone, ms."""
    return lab.cost.iteration(0, 0, [(0, lab.prompt)]).total * 1000


@figure("tpot_ms", 3)
def _tpot_ms(lab):
    """Time per output token of one request alone, ms."""
    return lab.alone.tpot * 1000


@figure("tokens_per_s", 3)
def _tokens_per_s(lab):
    """Tokens/s of one request alone."""
    return 1 / lab.alone.tpot


@figure("decode_steps", whole)
def _decode_steps(lab):
    """Decode passes after the first token: output − 1."""
    return lab.output - 1


@figure("request_s", 3)
def _request_s(lab):
    """One request alone, arrival to last token, s."""
    return lab.alone.e2e


@figure("sequential_rate", 2)
def _sequential_rate(lab):
    """Requests/s a one-at-a-time server completes: 1 ÷ one request's time."""
    return 1 / lab.alone.e2e


@figure("queue_growth", 2)
def _queue_growth(lab):
    """Requests the queue gains a second at the prediction's rate: arrivals − completions."""
    return lab.run_value("workload.request_rate") - 1 / lab.alone.e2e


@figure("run_rate", 3)
def _run_rate(lab):
    """The traffic a prediction runs at once the guess is in, requests/s."""
    return lab.run_value("workload.request_rate")


def _decode_alone(lab):
    """A decode pass of the request alone, half way through its answer."""
    return lab.cost.iteration(1, lab.prompt + lab.output // 2)


@figure("decode_bw_pct", 2)
def _decode_bw_pct(lab):
    """That as a share of the GPU's bandwidth (the gauge), per cent."""
    c = _decode_alone(lab)
    return lab.cost.bandwidth_utilization(c.bytes_read, c.total) * 100


@figure("decode_tc_pct", 1)
def _decode_tc_pct(lab):
    """That as a share of the dense bf16 peak (the gauge), per cent."""
    c = _decode_alone(lab)
    return c.flops / c.total / lab.gpu.bf16_peak_flops * 100


@figure("ceiling", 3)
def _ceiling(lab):
    """Single-stream ceiling: bandwidth ÷ weight bytes, tokens/s."""
    return lab.cost.single_stream_ceiling_tokens_per_s


@figure("real_share_pct", 2)
def _real_share_pct(lab):
    return lab.deployment.eta_bw * 100


@figure("ceiling_real", 3)
def _ceiling_real(lab):
    """The ceiling at that share, tokens/s."""
    return lab.deployment.eta_bw * lab.cost.single_stream_ceiling_tokens_per_s


@figure("gib_slip_pct", 1)
def _gib_slip_pct(lab):
    """How far a size read in GiB instead of GB moves an answer, per cent."""
    return (2**30 / 1e9 - 1) * 100
