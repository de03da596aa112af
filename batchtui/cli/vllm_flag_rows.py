"""The rows of `batchtui.cli.vllm_flags`' table: one line per flag of `vllm serve` and `vllm bench
serve` (as vLLM 0.33's own argument definitions have them, and the older flags published lines
still carry), `flag[,alias...] | arity | kind | values accepted | note`. Data only: the table's
meaning, its parser and its checks live in `vllm_flags`.
"""

from __future__ import annotations

# Reasons many rows share (each written once).
_NET = "server or client plumbing (addresses, security, HTTP, API options): changes no timing"
_LOAD = "how weights are loaded or fetched: done before serving starts"
_TOK = "tokenizer and text handling: token counts are estimated without the tokenizer"
_MM = "multimodal inputs: the simulated traffic is text"
_MOE = ("how a mixture of experts' experts are balanced, placed or communicated beyond --enable-expert-parallel: "
        "routing is taken as uniform over the experts (see the manual's mixture of experts)")
_SAMPLE = "a sampling parameter: changes which tokens come out, not how many (the dataset flags set lengths)"
_LOG = "logging, metrics or tracing: changes no timing"
_DP = "data-parallel plumbing: one replica is simulated (--data-parallel-size above 1 is refused)"
_MAMBA = "Mamba and hybrid state-space models only: the transformers simulated have none"
_LORA = "LoRA tuning: LoRA itself is refused (--enable-lora)"
_OUT = "what the API returns with each answer: changes no timing"
_HF_DATA = ("its dataset is downloaded from the Hugging Face Hub (the simulator reads local files only): "
            "the dataset is refused")
_KERNEL = ("which kernels run (attention, GEMM, their tuning): the profiles' measured efficiencies price "
           "them, whichever is chosen")
_OTHER_ARCH = "kernels of model families the simulated transformers do not have"
_NODES = ("multi-node plumbing: the GPUs are --tensor-parallel-size on one node, their all-reduces priced at the "
          "GPU's interconnect")
_DCP = "decode context parallelism only: --decode-context-parallel-size above 1 is refused"
_GRAPH_SIZES = ("capture sizes other than vLLM 0.33's defaults are not modelled: the simulator pads an iteration to "
                "the default sizes (see --enforce-eager in the manual)")
_GRAPHS = ("which batch sizes get CUDA graphs: the simulator pads an iteration to vLLM 0.33's default capture "
           "sizes (see --enforce-eager in the manual)")

# flag[,alias...] | arity | kind | ok values (comma-separated, refused kind only) | what it does here
SERVE_ROWS = f"""
model_tag (positional) | v | modelled | | the model, as --model
--model | v | modelled | | the model: a built-in profile, its Hugging Face id or an alias (base model, old names), or any dense model with --hf-config-path
--runner | v | recorded | | the model profile's kind decides (a decoder generates, an encoder pools)
--convert | v | recorded | | the model profile's kind decides (a decoder generates, an encoder pools)
--tokenizer | v | recorded | | {_TOK}
--tokenizer-mode | v | recorded | | {_TOK}
--trust-remote-code | b | recorded | | {_LOAD}
--dtype | v | modelled | | auto, half, float16, bfloat16: 2-byte weights and activations (as the profiles assume); float32 and float are refused (no fp32 tensor-core peak in the profiles)
--seed | v | modelled | | the random seed of the simulated traffic
--hf-config-path | v | modelled | | the model's Hugging Face config.json (a file, or a directory holding one): a dense model, a mixture of experts, MLA or sliding windows from its fields
--allowed-local-media-path | v | recorded | | {_MM}
--allowed-media-domains | + | recorded | | {_MM}
--revision | v | recorded | | {_LOAD}
--code-revision | v | recorded | | {_LOAD}
--tokenizer-revision | v | recorded | | {_TOK}
--max-model-len | v | modelled | | the context limit: longer requests fail as in vLLM; longer than the model's is refused unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
--quantization,-q | v | modelled | | weight format: bytes per weight streamed and held, and the tensor-core peak the linear layers use (fp8 W8A8 where the GPU has fp8 tensor cores); formats outside the table are refused
--enforce-eager | b | modelled | | no CUDA graphs: the host launches every kernel, so a forward pass takes at least its launches (about 262 us a layer; larger batches hide them), and no batch is padded to a graph's size
--max-logprobs | v | recorded | | {_OUT}
--logprobs-mode | v | recorded | | {_OUT}
--disable-sliding-window | b | recorded | | the dense models simulated attend to their whole context already
--disable-cascade-attn | b | recorded | | attention is priced without cascade attention
--skip-tokenizer-init | b | recorded | | {_TOK}
--enable-prompt-embeds | b | recorded | | {_OUT}
--served-model-name | + | recorded | | the name the API answers to: changes no timing
--config-format | v | recorded | | {_LOAD}
--hf-token | ? | recorded | | {_LOAD}
--hf-overrides | v | refused | | it changes the model's config: write the changed config.json and give it with --hf-config-path
--pooler-config | v | recorded | | pooling output options: changes no timing
--generation-config | v | recorded | | default sampling parameters: the dataset flags set lengths
--override-generation-config | v | recorded | | default sampling parameters: the dataset flags set lengths
--enable-sleep-mode | b | recorded | | sleeping between runs: changes no timing within one
--model-impl | v | recorded | | which implementation of the same model runs: priced the same
--logits-processors | + | recorded | | {_OUT}
--io-processor-plugin | v | recorded | | {_OUT}
--load-format | v | recorded | | {_LOAD}
--download-dir | v | recorded | | {_LOAD}
--safetensors-load-strategy | v | recorded | | {_LOAD}
--model-loader-extra-config | v | recorded | | {_LOAD}
--ignore-patterns | + | recorded | | {_LOAD}
--use-tqdm-on-load | b | recorded | | {_LOAD}
--pt-load-map-location | v | recorded | | {_LOAD}
--reasoning-parser | v | recorded | | {_OUT}
--distributed-executor-backend | v | recorded | | how worker processes are started: changes no timing
--pipeline-parallel-size,-pp | v | refused | 1 | pipeline stages keep several batches in flight at once; the simulator runs one batch at a time on one stage, so only 1 is accepted: spread the model with --tensor-parallel-size
--tensor-parallel-size,-tp | v | modelled | | GPUs the model is split over: weights, KV heads and FLOPs per GPU, and two all-reduces a layer
--decode-context-parallel-size,-dcp | v | refused | 1 | splitting the KV cache of each sequence over GPUs is not modelled: only 1 is accepted
--data-parallel-size,-dp | v | refused | 1 | several engine replicas behind one server: the simulator runs one (only 1 is accepted); `batchtui plan` sizes the replicas
--data-parallel-rank,-dpn | v | recorded | | {_DP}
--data-parallel-start-rank,-dpr | v | recorded | | {_DP}
--data-parallel-size-local,-dpl | v | recorded | | {_DP}
--data-parallel-address,-dpa | v | recorded | | {_DP}
--data-parallel-rpc-port,-dpp | v | recorded | | {_DP}
--data-parallel-backend,-dpb | v | recorded | | {_DP}
--data-parallel-hybrid-lb,-dph | b | recorded | | {_DP}
--enable-expert-parallel,-ep | b | modelled | | a mixture of experts' routed experts placed whole on the GPUs (EP = TP, one data-parallel rank): each GPU reads its own experts, and the iteration waits for the one that reads the most; the experts' outputs are all-reduced as under tensor parallelism (vLLM's all-to-all kernels need --data-parallel-size above 1)
--all2all-backend | v | recorded | | the all-to-all kernels run only with --data-parallel-size above 1, which is refused
--enable-dbo | b | recorded | | dual-batch overlap hides MoE all-to-all traffic: {_MOE}
--dbo-decode-token-threshold | v | recorded | | {_MOE}
--dbo-prefill-token-threshold | v | recorded | | {_MOE}
--disable-nccl-for-dp-synchronization | b | recorded | | {_DP}
--enable-eplb | b | recorded | | {_MOE}
--eplb-config | v | recorded | | {_MOE}
--expert-placement-strategy | v | recorded | | {_MOE}
--max-parallel-loading-workers | v | recorded | | {_LOAD}
--ray-workers-use-nsight | b | recorded | | {_LOG}
--disable-custom-all-reduce | b | recorded | | the all-reduce is priced as a ring at the interconnect's bandwidth whichever implementation runs
--worker-cls | v | recorded | | worker plumbing: changes no timing
--worker-extension-cls | v | recorded | | worker plumbing: changes no timing
--block-size | v | modelled | | tokens per KV cache block
--gpu-memory-utilization,--device-memory-utilization | v | modelled | | share of GPU memory vLLM may use: sizes the KV cache
--kv-cache-memory-bytes | v | modelled | | the KV cache's size per GPU in bytes (1k, 2G as vLLM reads them), instead of --gpu-memory-utilization; refused when weights, reserve and cache do not fit
--kv-cache-dtype | v | modelled | | KV cache element type: bytes per token and KV read time (auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2)
--num-gpu-blocks-override | v | modelled | | KV cache blocks instead of sizing from memory
--enable-prefix-caching | b | modelled | | prompts reuse cached blocks of earlier prompts
--prefix-caching-hash-algo | v | recorded | | the hash that names a block: the simulator's hits are exact whichever hash
--cpu-offload-gb | v | refused | 0 | weights offloaded to CPU memory stream over PCIe every iteration: not modelled (only 0 is accepted)
--kv-sharing-fast-prefill | b | recorded | | only for models that share KV across layers: the dense models simulated do not
--mamba-cache-dtype | v | recorded | | {_MAMBA}
--mamba-ssm-cache-dtype | v | recorded | | {_MAMBA}
--mamba-block-size | v | recorded | | {_MAMBA}
--limit-mm-per-prompt | v | recorded | | {_MM}
--enable-mm-embeds | b | recorded | | {_MM}
--media-io-kwargs | v | recorded | | {_MM}
--mm-processor-kwargs | v | recorded | | {_MM}
--mm-processor-cache-gb | v | recorded | | {_MM}
--mm-processor-cache-type | v | recorded | | {_MM}
--mm-shm-cache-max-object-size-mb | v | recorded | | {_MM}
--mm-encoder-tp-mode | v | recorded | | {_MM}
--mm-encoder-attn-backend | v | recorded | | {_MM}
--interleave-mm-strings | b | recorded | | {_MM}
--skip-mm-profiling | b | recorded | | {_MM}
--video-pruning-rate | v | recorded | | {_MM}
--enable-lora | b | refused | | LoRA adapters (their memory and the kernels that apply them) are not modelled
--max-loras | v | recorded | | {_LORA}
--max-lora-rank | v | recorded | | {_LORA}
--lora-dtype | v | recorded | | {_LORA}
--max-cpu-loras | v | recorded | | {_LORA}
--fully-sharded-loras | b | recorded | | {_LORA}
--default-mm-loras | v | recorded | | {_LORA}
--show-hidden-metrics-for-version | v | recorded | | {_LOG}
--otlp-traces-endpoint | v | recorded | | {_LOG}
--collect-detailed-traces | + | recorded | | {_LOG}
--max-num-batched-tokens | v | modelled | | the token budget of one iteration
--max-num-seqs | v | modelled | | the most sequences in one iteration
--long-prefill-token-threshold | v | modelled | | the most prompt tokens one request prefills in an iteration
--scheduling-policy | v | modelled | | fcfs or priority
--enable-chunked-prefill | b | modelled | | prompts split over iterations within the token budget
--disable-chunked-mm-input | b | recorded | | {_MM}
--scheduler-cls | v | refused | vllm.v1.core.sched.scheduler.Scheduler | a custom scheduler class: the simulator runs vLLM's own scheduler (its class name is accepted)
--disable-hybrid-kv-cache-manager | b | recorded | | hybrid (sliding window or Mamba) models only: the dense models simulated use one cache
--async-scheduling | b | modelled | | the next batch is scheduled while this one runs
--cudagraph-capture-sizes | + | refused | | {_GRAPH_SIZES}
--max-cudagraph-capture-size | v | refused | | {_GRAPH_SIZES}
--speculative-config,-sc | v | modelled | | speculative decoding as vLLM 0.33 schedules it (eagle, eagle3, mtp, ngram, draft_model): drafts in the token budget, rejected ones rolled back, the drafter's passes priced, acceptance per draft position from published vLLM runs or the config's synthetic_acceptance_rates; other methods and keys are refused
--kv-transfer-config | v | refused | | disaggregated prefill and KV transfer between instances are not modelled
--kv-events-config | v | recorded | | {_LOG}
--compilation-config,-cc | v | recorded | | torch.compile options: the profiles' efficiencies are those of a compiled model ({_GRAPHS})
--additional-config | v | recorded | | platform plugin options: changes no timing
--structured-outputs-config | v | recorded | | structured output: the traffic asks for none
--disable-log-stats | b | recorded | | {_LOG}
--aggregate-engine-logging | b | recorded | | {_LOG}
--enable-log-requests | b | recorded | | {_LOG}
--headless | b | recorded | | {_NET}
--api-server-count,-asc | v | modelled | | API server processes in front of the engine core: each does its share of the requests' work (tokenizing, setting up) and of the tokens' (detokenizing, streaming), one job at a time
--config | v | refused | | a YAML file of more flags: give them on the command line
--host | v | recorded | | {_NET}
--port | v | recorded | | {_NET}
--uds | v | recorded | | {_NET}
--uvicorn-log-level | v | recorded | | {_LOG}
--disable-uvicorn-access-log | b | recorded | | {_LOG}
--allow-credentials | b | recorded | | {_NET}
--allowed-origins | v | recorded | | {_NET}
--allowed-methods | v | recorded | | {_NET}
--allowed-headers | v | recorded | | {_NET}
--api-key | + | recorded | | {_NET}
--lora-modules | + | refused | | LoRA adapters (their memory and the kernels that apply them) are not modelled
--chat-template | v | recorded | | {_TOK}
--chat-template-content-format | v | recorded | | {_TOK}
--trust-request-chat-template | b | recorded | | {_TOK}
--response-role | v | recorded | | {_OUT}
--ssl-keyfile | v | recorded | | {_NET}
--ssl-certfile | v | recorded | | {_NET}
--ssl-ca-certs | v | recorded | | {_NET}
--enable-ssl-refresh | b | recorded | | {_NET}
--ssl-cert-reqs | v | recorded | | {_NET}
--root-path | v | recorded | | {_NET}
--middleware | v | recorded | | {_NET}
--return-tokens-as-token-ids | b | recorded | | {_OUT}
--enable-request-id-headers | b | recorded | | {_NET}
--enable-auto-tool-choice | b | recorded | | tool calling: the traffic makes no tool calls
--exclude-tools-when-tool-choice-none | b | recorded | | tool calling: the traffic makes no tool calls
--tool-call-parser | v | recorded | | tool calling: the traffic makes no tool calls
--tool-parser-plugin | v | recorded | | tool calling: the traffic makes no tool calls
--tool-server | v | recorded | | tool calling: the traffic makes no tool calls
--log-config-file | v | recorded | | {_LOG}
--max-log-len | v | recorded | | {_LOG}
--disable-fastapi-docs | b | recorded | | {_NET}
--enable-prompt-tokens-details | b | recorded | | {_OUT}
--enable-server-load-tracking | b | recorded | | {_LOG}
--enable-force-include-usage | b | recorded | | {_OUT}
--enable-tokenizer-info-endpoint | b | recorded | | {_NET}
--enable-log-outputs | b | recorded | | {_LOG}
--h11-max-incomplete-event-size | v | recorded | | {_NET}
--h11-max-header-count | v | recorded | | {_NET}
--log-error-stack | b | recorded | | {_LOG}
--tokens-only | b | recorded | | {_NET}
--grpc | b | recorded | | {_NET}
--grpc-port | v | recorded | | {_NET}
--data-parallel-supervisor-port | v | recorded | | {_DP}
--dp-supervisor-probe-interval-s | v | recorded | | {_DP}
--dp-supervisor-probe-timeout-s | v | recorded | | {_DP}
--dp-supervisor-probe-failure-threshold | v | recorded | | {_DP}
--disable-access-log-for-endpoints | v | recorded | | {_LOG}
--ssl-ciphers | v | recorded | | {_NET}
--enable-offline-docs | b | recorded | | {_NET}
--enable-flash-late-interaction | b | recorded | | pooling scores (late interaction): the simulated traffic generates text
--default-chat-template-kwargs | v | recorded | | {_TOK}
--reasoning-effort-map | v | recorded | | {_OUT}
--anthropic-disabled-thinking-effort | v | recorded | | {_OUT}
--cohere-format | v | recorded | | {_TOK}
--cohere-is-reasoning-model | b | recorded | | {_OUT}
--tool-strict-level | v | recorded | | tool calling: the traffic makes no tool calls
--trust-request-mm-kwargs | b | recorded | | {_MM}
--enable-log-deltas | b | recorded | | {_LOG}
--enable-per-request-metrics | b | recorded | | {_OUT}
--enable-scale-out | b | recorded | | {_NET}
--sse-keep-alive-interval | v | recorded | | {_NET}
--fingerprint-mode | v | recorded | | {_OUT}
--fingerprint-value | v | recorded | | {_OUT}
--allow-deprecated-quantization | b | recorded | | {_LOAD}
--enable-return-routed-experts | b | recorded | | {_OUT}
--return-sampling-mask | b | recorded | | {_OUT}
--use-fp64-gumbel | b | refused | | fp64 random noise for sampling costs throughput that the simulator does not price (sampling is priced as vLLM's default fp32)
--enable-trace-replay | b | recorded | | forced token sequences for debugging: the traffic uses none
--model-class-overrides | v | recorded | | which implementation of the same model runs: priced the same
--renderer-num-workers | v | recorded | | threads rendering prompts in the API server: its host work is part of the per-sequence cost `batchtui calibrate` fits
--language-model-only | b | recorded | | {_MM}
--enable-cumem-allocator | b | recorded | | the GPU memory allocator: changes no timing
--sleep-mode-backend | v | recorded | | sleeping between runs: changes no timing within one
--sleep-mode-offload-cudagraph | b | recorded | | sleeping between runs: changes no timing within one
--sleep-preserve-parameter-names | + | recorded | | sleeping between runs: changes no timing within one
--enable-nccl-comm-suspend | b | recorded | | sleeping between runs: changes no timing within one
--mm-device-do-normalize | b | recorded | | {_MM}
--mm-encoder-attn-dtype | v | recorded | | {_MM}
--mm-encoder-fp8-scale-path | v | recorded | | {_MM}
--mm-encoder-fp8-scale-save-margin | v | recorded | | {_MM}
--mm-encoder-fp8-scale-save-path | v | recorded | | {_MM}
--mm-encoder-only | b | recorded | | {_MM}
--mm-hasher-algorithm | v | recorded | | {_MM}
--mm-ipc-gpu-memory-gb | v | recorded | | {_MM}
--mm-processor-device | v | recorded | | {_MM}
--mm-tensor-ipc | v | recorded | | {_MM}
--video-pruning-method | v | recorded | | {_MM}
--safetensors-prefetch-num-threads | v | recorded | | {_LOAD}
--safetensors-prefetch-block-size | v | recorded | | {_LOAD}
--attention-backend | v | recorded | | {_KERNEL}
--mamba-backend | v | recorded | | {_MAMBA}
--mamba-ssu-algorithm | v | recorded | | {_MAMBA}
--enable-mamba-cache-stochastic-rounding | b | recorded | | {_MAMBA}
--mamba-cache-philox-rounds | v | recorded | | {_MAMBA}
--mamba-cache-mode | v | recorded | | {_MAMBA}
--enable-mamba-shared-prefix-checkpoint | b | recorded | | {_MAMBA}
--use-replayssm | b | recorded | | {_MAMBA}
--replayssm-buffer-len | v | recorded | | {_MAMBA}
--kda-prefill-backend | v | recorded | | {_OTHER_ARCH}
--kda-decode-backend | v | recorded | | {_OTHER_ARCH}
--gdn-prefill-backend | v | recorded | | {_OTHER_ARCH}
--sparse-indexer-topk-backend | v | recorded | | {_OTHER_ARCH}
--monokernel | b | recorded | | MonoKernel runs only DeepSeek models on MI355X: {_OTHER_ARCH}
--enable-hc-sp | b | recorded | | {_OTHER_ARCH}
--engram-config | v | recorded | | {_OTHER_ARCH}
--reasoning-parser-plugin | v | recorded | | {_OUT}
--reasoning-config | v | recorded | | {_OUT}
--nnodes,-n | v | recorded | | {_NODES}
--node-rank,-r | v | recorded | | {_NODES}
--master-addr | v | recorded | | {_NODES}
--master-port | v | recorded | | {_NODES}
--distributed-timeout-seconds | v | recorded | | {_NODES}
--cpu-distributed-timeout-seconds | v | recorded | | {_NODES}
--device-ids | v | recorded | | which GPUs of the machine run it: changes no timing
--numa-bind | b | recorded | | CPU and memory pinning of the workers: their host work is part of the per-sequence cost `batchtui calibrate` fits
--numa-bind-nodes | + | recorded | | CPU and memory pinning of the workers: their host work is part of the per-sequence cost `batchtui calibrate` fits
--numa-bind-cpus | + | recorded | | CPU and memory pinning of the workers: their host work is part of the per-sequence cost `batchtui calibrate` fits
--prefill-context-parallel-size,-pcp | v | refused | 1 | splitting each prompt's prefill over GPUs is not modelled: only 1 is accepted
--dcp-comm-backend | v | recorded | | {_DCP}
--dcp-q-replicate | b | recorded | | {_DCP}
--dcp-kv-cache-interleave-size | v | recorded | | {_DCP}
--cp-kv-cache-interleave-size | v | recorded | | {_DCP}
--data-parallel-external-lb,-dpe | b | recorded | | {_DP}
--data-parallel-multi-port-external-lb,-dpm | b | recorded | | {_DP}
--dp-sync-interval | v | recorded | | {_DP}
--enable-batch-sharded-sampling | b | recorded | | sampling split over the tensor-parallel GPUs: sampling is not priced apart from the model's layers
--enable-ep-weight-filter | b | recorded | | {_MOE}
--enable-elastic-ep | b | recorded | | {_MOE}
--elastic-ep-max-dp-size | v | recorded | | {_MOE}
--ubatch-size | v | recorded | | micro-batches for dual-batch overlap: {_MOE}
--enable-shm-tensor-arena | b | recorded | | {_MM}
--enable-fault-tolerance | b | recorded | | recovery from failed engines: no failures are simulated
--fault-tolerance-config | v | recorded | | recovery from failed engines: no failures are simulated
--kv-cache-dtype-skip-layers | + | refused | | layers kept in a different KV cache dtype: the KV cache is priced with one dtype for every layer (--kv-cache-dtype)
--prefix-match-unit | v | refused | | prefix-cache hits land on whole KV blocks here (--block-size): a finer match unit is not modelled
--prefix-cache-retention-interval | v | recorded | | sliding-window and Mamba checkpoints: {_MAMBA}
--swa-bounded-replay | b | recorded | | sliding-window KV only: the dense models simulated attend to their whole context
--kv-offloading-size | v | refused | | KV cache offloaded to CPU memory (and read back over PCIe) is not modelled
--kv-offloading-backend | v | recorded | | KV offloading: --kv-offloading-size is refused
--offload-backend | v | recorded | | weight offloading: --cpu-offload-gb and --offload-group-size above 0 are refused
--offload-group-size | v | refused | 0 | layers' weights prefetched from CPU memory over PCIe are not modelled (only 0 is accepted)
--offload-num-in-group | v | recorded | | weight offloading: --cpu-offload-gb and --offload-group-size above 0 are refused
--offload-prefetch-step | v | recorded | | weight offloading: --cpu-offload-gb and --offload-group-size above 0 are refused
--offload-params | + | recorded | | weight offloading: --cpu-offload-gb and --offload-group-size above 0 are refused
--cpu-offload-params | + | recorded | | weight offloading: --cpu-offload-gb and --offload-group-size above 0 are refused
--lora-target-modules | + | recorded | | {_LORA}
--max-lora-cls-labels | v | recorded | | {_LORA}
--specialize-active-lora | b | recorded | | {_LORA}
--enable-tower-connector-lora | b | recorded | | {_LORA}
--enable-moe-shared-loras | b | recorded | | {_LORA}
--enable-mixed-moe-lora-format | b | recorded | | {_LORA}
--kv-cache-metrics | b | recorded | | {_LOG}
--kv-cache-metrics-sample | v | recorded | | {_LOG}
--cudagraph-metrics | b | recorded | | {_LOG}
--enable-layerwise-nvtx-tracing | b | recorded | | {_LOG}
--enable-mfu-metrics | b | recorded | | {_LOG}
--enable-logging-iteration-details | b | recorded | | {_LOG}
--jit-monitor-mode | v | recorded | | {_LOG}
--jit-monitor-verbose | b | recorded | | {_LOG}
--custom-histogram-buckets | v | recorded | | {_LOG}
--per-request-spec-decode-metrics | v | recorded | | {_LOG}
--log-level | v | recorded | | {_LOG}
--logging-config | v | recorded | | {_LOG}
--profiler-config | v | recorded | | {_LOG}
--watchdog-config | v | recorded | | {_LOG}
--max-num-scheduled-tokens | v | modelled | | the tokens one iteration may schedule: vLLM 0.33's scheduler spends it and --max-num-batched-tokens together, so the lower binds; unset with a draft model (method draft_model), vLLM sets it one slot a seat below --max-num-batched-tokens
--max-num-active-seqs | v | modelled | | the most requests admitted to run at once, at most --max-num-seqs (which in vLLM still sizes the runner and its CUDA graphs)
--long-prefill-token-threshold-adaptive | b | modelled | | the long-prefill cap floored at --max-num-batched-tokens divided by the running and waiting requests, as vLLM 0.33's scheduler does
--max-num-queued-reqs | v | refused | | vLLM answers HTTP 503 to requests past this many in flight; the simulator rejects no request (its client waits instead: use --max-concurrency)
--max-num-queued-tokens | v | refused | | vLLM answers HTTP 503 to requests past this prefill backlog; the simulator rejects no request (its client waits instead: use --max-concurrency)
--scheduler-reserve-full-isl | b | modelled | | admit a request only when its whole prompt's KV blocks are free (on by default, as vLLM 0.33)
--watermark | v | modelled | | share of the KV blocks kept free when admitting waiting or preempted requests, as vLLM's KV cache manager does
--prefill-schedule-interval | v | refused | 1 | prefill admitted only every N steps (decode-only steps between) is not modelled: only 1 (the default) is accepted
--stream-interval | v | refused | 1 | tokens sent N at a time change the inter-token latency the client measures, which the simulator does not model: only 1 (the default) is accepted
--spec-method | v | modelled | | the speculative config's method, as vLLM merges it (not beside the same key in --speculative-config)
--spec-model | v | modelled | | the speculative config's draft head or model, as vLLM merges it
--spec-tokens | v | modelled | | the speculative config's num_speculative_tokens, as vLLM merges it
--diffusion-config,-dc | v | refused | | diffusion language models are not modelled
--ec-transfer-config | v | recorded | | encoder cache transfer: {_MM}
--ec-manager-config | v | recorded | | encoder cache: {_MM}
--attention-config,-ac | v | recorded | | {_KERNEL}
--kernel-config | v | recorded | | {_KERNEL}
--ir-op-priority | v | recorded | | {_KERNEL}
--enable-flashinfer-autotune | b | recorded | | {_KERNEL}
--moe-backend | v | recorded | | {_KERNEL}
--linear-backend | v | recorded | | {_KERNEL}
--quantization-config | v | refused | | per-layer quantization specs are not modelled: give one weight format with --quantization
--aux-output-config | v | recorded | | {_OUT}
--weight-transfer-config | v | recorded | | weight updates for RL training: none during a simulated run
--watermark-config | v | recorded | | text watermarking: {_SAMPLE}
--optimization-level,-O | v | refused | 2,3 | -O0 (no torch.compile, no CUDA graphs) and -O1 (piecewise CUDA graphs only) run kernels the profiles' efficiencies do not describe; -O2 (vLLM's default) and -O3 (the same in vLLM 0.33) are accepted
--performance-mode | v | refused | balanced | interactivity and throughput choose other CUDA graph sizes and kernels, whose speeds the profiles do not hold: only balanced (the default) is accepted
--shutdown-timeout | v | recorded | | how long shutting down waits: the run ends when its requests finish
--fail-on-environ-validation | b | recorded | | environment checks at start: changes no timing
"""

BENCH_ROWS = f"""
--seed | v | modelled | | the random seed of the simulated traffic
--num-prompts | v | modelled | | requests in the run
--dataset-name | v | modelled | | random, sharegpt, custom, prefix_repetition and timed_trace (and the simulator's mooncake_trace: timed_trace in milliseconds with 512-token hash blocks); burstgpt, sonnet, random-mm, random-rerank, hf, custom_mm, custom_audio, custom_image, spec_bench and speed_bench are refused, each with the local alternative
--no-stream | b | recorded | | how a Hugging Face dataset is read: the hf dataset is refused
--dataset-path | v | modelled | | the dataset file (ShareGPT JSON, custom JSON Lines, or a trace)
--no-oversample | b | modelled | | accepted with the random and prefix_repetition datasets (where nothing is oversampled); refused with a dataset file (the simulator oversamples a short file as vLLM does by default)
--skip-chat-template | b | recorded | | {_TOK}
--enable-multimodal-chat | b | recorded | | {_MM}
--disable-shuffle | b | modelled | | accepted with the random and prefix_repetition datasets (nothing to shuffle); refused with a dataset file (its prompts are shuffled with the seed)
--custom-output-len | v | modelled | | answer length of a custom dataset
--spec-bench-output-len | v | recorded | | the spec_bench dataset is refused
--spec-bench-category | v | recorded | | the spec_bench dataset is refused
--sharegpt-output-len | v | modelled | | answer length of every ShareGPT request
--blazedit-min-distance | v | recorded | | {_HF_DATA}
--blazedit-max-distance | v | recorded | | {_HF_DATA}
--asr-max-audio-len-sec | v | recorded | | {_HF_DATA}
--asr-min-audio-len-sec | v | recorded | | {_HF_DATA}
--random-input-len | v | modelled | | prompt tokens of the random dataset
--random-output-len | v | modelled | | answer tokens of the random dataset
--random-range-ratio | v | modelled | | lengths uniform around the mean
--random-prefix-len | v | modelled | | a shared prefix before each random prompt
--random-batch-size | v | recorded | | embedding requests batched by the client: requests are sent one by one
--no-reranker | b | recorded | | reranking only: the random-rerank dataset is refused
--random-mm-base-items-per-request | v | recorded | | {_MM}
--random-mm-num-mm-items-range-ratio | v | recorded | | {_MM}
--random-mm-limit-mm-per-prompt | v | recorded | | {_MM}
--random-mm-bucket-config | v | recorded | | {_MM}
--hf-subset | v | recorded | | {_HF_DATA}
--hf-split | v | recorded | | {_HF_DATA}
--hf-name | v | recorded | | {_HF_DATA}
--hf-output-len | v | recorded | | {_HF_DATA}
--prefix-repetition-prefix-len | v | modelled | | prefix_repetition: tokens of each shared prefix
--prefix-repetition-suffix-len | v | modelled | | prefix_repetition: tokens of each prompt's own part
--prefix-repetition-num-prefixes | v | modelled | | distinct shared prefixes
--prefix-repetition-output-len | v | modelled | | prefix_repetition: answer tokens
--label | v | modelled | | the result's label and file name
--backend | v | recorded | | the client's request format: the simulator serves the requests itself
--base-url | v | recorded | | {_NET}
--host | v | recorded | | {_NET}
--port | v | recorded | | {_NET}
--endpoint | v | recorded | | {_NET}
--header | * | recorded | | {_NET}
--max-concurrency | v | modelled | | most requests the client keeps in flight
--model | v | modelled | | the model (as vllm serve's --model)
--input-len | v | modelled | | prompt tokens (as --random-input-len)
--output-len | v | modelled | | answer tokens (as --random-output-len; also a dataset file's fixed answer length)
--tokenizer | v | recorded | | {_TOK}
--tokenizer-mode | v | recorded | | {_TOK}
--use-beam-search | b | refused | | beam search (several sequences a request) is not modelled
--logprobs | v | recorded | | {_OUT}
--request-rate | v | modelled | | requests per second (inf: all at once)
--burstiness | v | modelled | | gamma shape of the gaps between requests
--trust-remote-code | b | recorded | | {_TOK}
--disable-tqdm | b | recorded | | the client's progress bar: changes no timing
--num-warmups | v | recorded | | warm-up requests finish before the measured run starts; the simulated server starts warm, so they change nothing measured
--profile | b | recorded | | the torch profiler on the server: changes no simulated timing
--save-result | b | modelled | | write the result as JSON in vllm bench serve's layout
--save-detailed | b | modelled | | with the per-request arrays
--append-result | b | modelled | | append the result to the file as vLLM does (a newline, then the JSON), the file replaced whole (read, append, write a temporary file, rename)
--metadata | * | modelled | | KEY=VALUE pairs kept in the result
--result-dir | v | modelled | | directory of the result file
--result-filename | v | modelled | | name of the result file
--ignore-eos | b | recorded | | the simulator runs every request to its output length, which is what --ignore-eos asks; without it a real model may stop earlier at its end-of-sequence token, which the simulator cannot know
--percentile-metrics | v | modelled | | metrics whose percentiles are reported
--metric-percentiles | v | modelled | | percentiles reported
--goodput | + | modelled | | service level objectives for request_goodput
--request-id-prefix | v | recorded | | {_NET}
--top-p | v | recorded | | {_SAMPLE}
--top-k | v | recorded | | {_SAMPLE}
--min-p | v | recorded | | {_SAMPLE}
--temperature | v | recorded | | {_SAMPLE}
--frequency-penalty | v | recorded | | {_SAMPLE}
--presence-penalty | v | recorded | | {_SAMPLE}
--repetition-penalty | v | recorded | | {_SAMPLE}
--served-model-name | v | recorded | | the name the API answers to: changes no timing
--lora-modules | + | refused | | LoRA adapters (their memory and the kernels that apply them) are not modelled
--ramp-up-strategy | v | modelled | | the rate rises over the run
--ramp-up-start-rps | v | modelled | | rate at the start of a ramp-up
--ramp-up-end-rps | v | modelled | | rate at the end of a ramp-up
--ready-check-timeout-sec | v | recorded | | waiting for the server to come up: the simulated one is up
--extra-body | v | recorded | | extra request fields: the dataset flags set lengths
--skip-tokenizer-init | b | recorded | | {_TOK}
--chat-template-kwargs | v | recorded | | {_TOK}
--custom-ensure-client-side-data | b | recorded | | {_MM}
--insecure | b | recorded | | {_NET}
--lora-assignment | v | recorded | | {_LORA}
--plot-dataset-stats | b | recorded | | the client's plots are not drawn: changes no timing
--plot-timeline | b | recorded | | the client's plots are not drawn: changes no timing
--timeline-itl-thresholds | v | recorded | | the client's plots are not drawn: changes no timing
--probe-request-rate | v | refused | 0,0.0 | probe requests sent beside the workload are not simulated: only 0 (none, the default) is accepted
--bfcl-categories | v | recorded | | {_HF_DATA}
--speed-bench-dataset-subset | v | recorded | | the speed_bench dataset is refused
--speed-bench-output-len | v | recorded | | the speed_bench dataset is refused
--speed-bench-category | v | recorded | | the speed_bench dataset is refused
--self-timed | b | refused | on | a timed trace's own timestamps set the arrivals (vLLM's default for timed_trace: --request-rate is not used); --no-self-timed (arrivals drawn from --request-rate instead) is not modelled
--timed-trace-chunk-hash-size | v | modelled | | prompt tokens per hash id of a timed trace (default 16, as vLLM; Mooncake's traces: 512); each prompt is built from its hash ids, as vLLM builds it
--timed-trace-sec-multiplier | v | modelled | | seconds per unit of a timed trace's timestamps (default 1, as vLLM; Mooncake's milliseconds: 0.001)
--timed-trace-label-timestamp | v | refused | timestamp | a timed trace's fields are read by their usual names (timestamp, input_length, output_length, hash_ids): rename the fields in the file
--timed-trace-label-input-length | v | refused | input_length | a timed trace's fields are read by their usual names (timestamp, input_length, output_length, hash_ids): rename the fields in the file
--timed-trace-label-output-length | v | refused | output_length | a timed trace's fields are read by their usual names (timestamp, input_length, output_length, hash_ids): rename the fields in the file
--timed-trace-label-hash-ids | v | refused | hash_ids | a timed trace's fields are read by their usual names (timestamp, input_length, output_length, hash_ids): rename the fields in the file
"""

# vllm bench serve's datasets the simulator cannot give, and the local alternative.
DATASET_REFUSALS = {
    "hf": "its prompts are downloaded from the Hugging Face Hub, which the simulator does not do: save them "
          "as a local JSON Lines file ({\"prompt\": ...} a line) and give --dataset-name custom --dataset-path FILE",
    "burstgpt": "BurstGPT's CSV is not read: write its request and response token counts as a trace (JSON Lines "
                "of arrival_time, prompt_len, output_len) and give --dataset-name timed_trace --dataset-path FILE",
    "sonnet": "its prompts are cut from a poem with the model's tokenizer: give --dataset-name random with "
              "--random-input-len, --random-prefix-len and --random-output-len set to the sonnet lengths",
    "random-mm": "multimodal prompts (images, video) are not modelled: give --dataset-name random for the text part",
    "custom_mm": "multimodal prompts (images, video) are not modelled: give --dataset-name custom with the text part",
    "random-rerank": "reranking requests (scored pairs, no generation) are not modelled",
    "custom_audio": "audio prompts are not modelled: give --dataset-name custom with the text part",
    "custom_image": "image prompts are not modelled: give --dataset-name custom with the text part",
    "speed_bench": "its prompts are downloaded from the Hugging Face Hub (the simulator reads local files only): save "
                   "them as a custom JSON Lines file and give --dataset-name custom (how often drafts are accepted on "
                   "them: the speculative config's synthetic_acceptance_rates)",
    "spec_bench": "Spec-Bench's questions are downloaded (the simulator reads local files only): save them as a custom "
                  "JSON Lines file and give --dataset-name custom --dataset-path FILE (how often drafts are accepted "
                  "on them: the speculative config's synthetic_acceptance_rates)",
}

# Flags of earlier vLLM releases that vLLM 0.33 no longer has (the V0 engine's among them) and
# published command lines still carry.
OLDER_SERVE_ROWS = f"""
--task | v | recorded | | deprecated in vLLM; the model profile's kind decides
--rope-scaling | v | recorded | | position encoding: changes no time or memory (--max-model-len sets the context)
--rope-theta | v | recorded | | position encoding: changes no time or memory
--override-pooler-config | v | recorded | | pooling output options: changes no timing
--logits-processor-pattern | v | recorded | | {_OUT}
--override-attention-dtype | v | recorded | | attention is priced in the model's dtype
--guided-decoding-backend | v | recorded | | structured output: the traffic asks for none
--guided-decoding-disable-fallback | b | recorded | | structured output: the traffic asks for none
--guided-decoding-disable-any-whitespace | b | recorded | | structured output: the traffic asks for none
--guided-decoding-disable-additional-properties | b | recorded | | structured output: the traffic asks for none
--num-redundant-experts | v | recorded | | {_MOE}
--eplb-window-size | v | recorded | | {_MOE}
--eplb-step-interval | v | recorded | | {_MOE}
--eplb-log-balancedness | b | recorded | | {_MOE}
--enable-multimodal-encoder-data-parallel | b | recorded | | {_MM}
--swap-space | v | recorded | | vLLM V1 recomputes preempted requests instead of swapping them (as the simulator does)
--calculate-kv-scales | b | recorded | | fp8 KV scale calibration: changes no timing
--disable-mm-preprocessor-cache | b | recorded | | {_MM}
--lora-extra-vocab-size | v | recorded | | {_LORA}
--max-num-partial-prefills | v | modelled | | 1 (the default) as vLLM's V1 scheduler runs: any other value is refused as vLLM V1 refuses it (NotImplementedError: Concurrent Partial Prefill is not supported); vLLM 0.27 removed the flag
--max-long-partial-prefills | v | modelled | | 1 (the default) as vLLM's V1 scheduler runs: any other value is refused as vLLM V1 refuses it; vLLM 0.27 removed the flag
--num-lookahead-slots | v | recorded | | gone in vLLM 0.33: the KV slots a drafter needs come from --speculative-config
--external-parameters | v | recorded | | extra parameters for a custom scheduler class: the simulator runs vLLM's own
--cuda-graph-sizes | + | refused | | {_GRAPH_SIZES}
--disable-log-requests | b | recorded | | {_LOG}
--disable-frontend-multiprocessing | b | recorded | | {_NET}
--max-seq-len-to-capture | v | recorded | | the V0 engine's context-length limit for CUDA graphs: V1 captures graphs by token count ({_GRAPHS})
--num-scheduler-steps | v | refused | 1 | multi-step scheduling belonged to vLLM's V0 engine; V1 schedules every step (only 1 is accepted)
--multi-step-stream-outputs | b | recorded | | multi-step scheduling (V0): V1 schedules every step
--preemption-mode | v | refused | recompute | V1 recomputes preempted requests (as the simulator does); swapping them out is not modelled
--use-v2-block-manager | b | recorded | | the V0 engine's block manager choice: V1 has one
--scheduler-delay-factor | v | recorded | | a V0 engine delay before new prompts: V1's scheduler has none
--disable-async-output-proc | b | recorded | | the V0 engine's output processing: V1 overlaps it with --async-scheduling
--quantization-param-path | v | recorded | | fp8 KV cache scales: changes no timing
--worker-use-ray | b | recorded | | how worker processes are started: changes no timing
--tokenizer-pool-size | v | recorded | | {_TOK}
--tokenizer-pool-type | v | recorded | | {_TOK}
--speculative-model | v | refused | | gone in vLLM 0.33: give the draft in --speculative-config (or --spec-model)
--num-speculative-tokens | v | refused | | gone in vLLM 0.33: give num_speculative_tokens in --speculative-config (or --spec-tokens)
"""

OLDER_BENCH_ROWS = f"""
--sonnet-input-len | v | recorded | | the sonnet dataset is refused
--sonnet-output-len | v | recorded | | the sonnet dataset is refused
--sonnet-prefix-len | v | recorded | | the sonnet dataset is refused
--common-prefix-len | v | modelled | | a prefix every prompt shares (as --random-prefix-len)
"""
