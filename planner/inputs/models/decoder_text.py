"""The words that explain a decoder's costs: the formula strings attached to its op groups and memory items, and its
one-line description. Each builder takes the numbers planner.inputs.models.decoder computed and says how they were
counted; the arithmetic itself lives there."""

from __future__ import annotations

from functools import lru_cache

from planner.inputs.models.autocast_chains import fused_loss_bytes
from planner.inputs.precisions import DECODE_LATENCY_ORIGIN, EXPERTS_SCOPE, MLP_SCOPE
from planner.inputs.work import SMALL_KERNEL_US, Setup


def describe(layers: int, hidden: int, context: int, experts: int, experts_per_token: int, shared_ffn: int,
             active_share: float) -> str:
    """A decoder in one line: its size and, for a mixture of experts, its routing and active share of parameters."""
    moe = ""
    if experts > 1:
        shared = f" + shared {shared_ffn:,}" if shared_ffn else ""
        moe = (f" · {experts} experts, top {experts_per_token}{shared} · "
               f"{active_share:.0%} of the parameters active per token")
    return f"decoder · {layers} layers · hidden {hidden} · context {context:,}{moe}"


def kernel_rate_text(s: Setup, backward: bool = False) -> str:
    """How fast the attention kernel runs its FLOPs (its backward pass's with `backward`) where its own rate is known
    ('' otherwise: the matmul ceiling)."""
    k = s.attention
    fractions = k.backward_reference_fraction if backward else k.reference_fraction
    if not (k.backward_peak_fractions if backward else k.peak_fractions):
        return ""
    per = ", ".join(f"SM {major}.x {f:.2f}" for major, f in fractions)
    return (f"; rate on GPUs where FlashAttention-2's {'backward ' if backward else ''}is published = datasheet peak x "
            f"its fraction ({per}) x {k.speed_vs_fa2:g} ({k.id} vs FlashAttention-2)")


@lru_cache(maxsize=256)
def latency_text(layers: int, latency_us: float) -> str:
    """The decode attention formula's latency clause ('' without one): built once per model and latency, as the
    catalog sweep builds decode steps often."""
    return (f"; + {layers} layers x {latency_us:g} us fixed latency per step (a decode-attention call's own, "
            f"{DECODE_LATENCY_ORIGIN})" if latency_us else "")


def score_text(s: Setup, passes: tuple[float, float], forward_only: bool) -> str:
    """How the S x S scores of materialized attention are moved (`passes`: forward, backward), in words."""
    fwd, bwd = passes
    how = ("scale, mask and softmax fused" if s.fused_elementwise
           else "eager: scale and mask are kernels of their own")
    copy = "" if s.fused_elementwise else " + the output's head-layout copy"
    return (f"{fwd:g} x score matrices ({how}){copy}" if forward_only
            else f"score matrices x ({fwd:g} forward + {bwd:g} backward passes; {how}){copy}")


def experts_note(experts: int, experts_per_token: int, experts_read: float, tokens: int) -> str:
    """How much of a mixture of experts a pass over `tokens` tokens computes and reads ('' when dense)."""
    if experts == 1:
        return ""
    E, k = experts, experts_per_token
    return (f"; mixture of experts: each token's FLOPs use its top {k} of {E} experts, the pass reads "
            f"{experts_read:.3g} experts' weights per layer (E(1-(1-k/E)^N), N = {tokens:,} tokens)")


@lru_cache(maxsize=1024)  # the text depends on the setup and the model's counts, not the batch
def forward_formulas(s: Setup, name: str, note: str, score_words: str, swiglu: bool,
                     traffic: float) -> tuple[str, str, str]:
    """The formula texts of a forward pass's linear, attention and elementwise groups (score_words: score_text's
    forward words, '' when no scores are materialized; traffic: elements per token of the pass)."""
    p = s.precision
    head = (f" + LM head x {p.outside_weight_bytes:g} B" if p.outside_weight_bytes != p.weight_bytes else "")
    how = ("elementwise chains fused" if s.fused_elementwise
           else "eager: every op its own kernel" + (", SwiGLU's silu and product apart" if swiglu else ""))
    partial = {EXPERTS_SCOPE: "expert matrix", MLP_SCOPE: "MLP matrix"}.get(p.quantized_weights)
    stored = (f"{partial} params read x {p.weight_bytes:g} B/weight + other layer matrices x "
              f"{p.outside_weight_bytes:g} B" if partial else f"layer matmul params x {p.weight_bytes:g} B/weight")
    return (f"FLOPs = 2 x {name} tokens x matmul params; bytes = {stored}{head}{note}",
            "FLOPs = 4 x layers x heads x head_dim x keys attended"
            + (" (every score: no causal skipping)" if s.attention.scores_materialized else "")
            + "; bytes = Q,K,V,O + KV-cache write"
            + (f" + {score_words}" if score_words else "") + kernel_rate_text(s),
            f"bytes = tokens x {traffic:,.0f} elements x {p.act_bytes:g} B ({how}) + logits")


def small_kernel_text(kernels: float) -> str:
    """Words for the elementwise group's floor: its small kernels at their minimum duration (OpGroup.small_kernels)."""
    return (f"; at least {kernels:,.4g} small kernels x the runtime's kernels per fused kernel x "
            f"{SMALL_KERNEL_US:g} us a step (a kernel's minimum duration: when their bytes take less, it binds)")


def eager_chain_text(chain_bytes: float, upcast_bytes: float) -> tuple[str, str]:
    """What eager LLaMA-family code adds to the elementwise and attention formulas (planner.inputs.models.eager_chains;
    ('', '') when it adds nothing)."""
    elem = (f" + tokens x {chain_bytes:,.0f} B (Hugging Face LLaMA code op by op: RMSNorm in float32, rotary on Q "
            "and K)" if chain_bytes else "")
    attn = f" + {upcast_bytes:g} B per score (softmax in float32, cast back)" if upcast_bytes else ""
    return elem, attn


def linear_extras(gemv: bool, buffered: bool, act_bytes: float) -> str:
    """What a forward pass's linear group adds to its formula: a quantized GEMV, a 16-bit copy of the weights."""
    return (("; the multiply-adds run in the quantized GEMV group" if gemv else "")
            + (f"; the GEMMs read the 16-bit copy ({act_bytes:g} B/weight)" if buffered else ""))


def rotary_sync_text(model_type: str, layers: int, share: float) -> str:
    """The linear group's words for transformers' per-layer sync in a FlashAttention-2 class (rotary_sync_costs)."""
    return (f"; transformers' {model_type} FlashAttention-2 class reads position_ids[:, -1].max().item() in each "
            f"layer: {layers} device-to-host round trips a forward, the host waiting for the q/k/v projections "
            f"({share:.1%} of these weights), whose GPU time hides none of its dispatch")


def prompt_path_text(path, copied: float) -> str:
    """The linear group's words for the runtime's prompt GEMM path (PromptPath) it runs on."""
    rate = (f"at {path.fraction:g} of the {path.compute_path} matmul ceiling (the path's own measured rate)"
            if path.fraction else f"in {path.compute_path} at the runtime's GEMM rate")
    copy = f"; the GEMM reads the {path.buffer_bytes:g} B/weight copy of {copied:,.0f} weights" if copied else ""
    acc = "; fp16 accumulation (GeForce: twice the fp32-accumulate rate)" if path.accumulate16 else ""
    return f"; prompt GEMM {path.id}: {rate}{copy}{acc}"


def prompt_attention_text(kernel) -> str:
    """The attention group's words for the runtime's own FlashAttention kernel a prompt pass runs (AttentionKernel)."""
    return (f"; the runtime's own FlashAttention kernel '{kernel.id}' at {kernel.fraction:g} of the GPU's full-rate "
            "FP16 tensor peak (its measured rate, in place of the attention backend's)")


def prompt_scale_text(path, lin_flops: float) -> str:
    """The words for a prompt GEMM path's CUDA-core work after its MMAs (PromptPath.scale_flops)."""
    return (f"flops = {path.scale_flops:g} FP32 FLOP-equivalents x {lin_flops:,.0f} matmul FLOPs ({path.id}: each "
            f"int32 MMA result converted to float and scaled by its 32-value blocks' scales and minimums on the CUDA "
            f"cores, in series with the MMAs, at the fp32 ceiling)")


def converted_inputs_text(elements: float, path) -> str:
    """The elementwise group's words for the GEMM inputs a prompt GEMM path converts first (q8_1 for MMQ, fp16)."""
    return (f" + {elements:,.0f} GEMM input elements x {path.act_convert_bytes:g} B converted before {path.id} "
            f"(read fp32, write its input format)")


def chunked_dequant_text(chunks: int, c: int) -> str:
    return f"; per chunk ({chunks} chunks of {c} tokens)"


def chunked_weights_text(chunks: int, c: int, rows: int) -> str:
    return f"; weights read once per chunk ({chunks} chunks of {c} tokens, M = {rows:,} rows each)"


def chunked_kv_text(chunks: int, c: int) -> str:
    return f"; {chunks} chunks of {c} tokens: each reads the K, V before it"


def decode_attention_text(kv_concat: bool, layers: int, latency_us: float, repeat_passes: float = 0.0) -> str:
    return ("FLOPs = 4 x layers x heads x head_dim x p per sequence; "
            "bytes = KV cache read (p tokens) + write"
            + ("; the append copies the whole cache (torch.cat: read + write of p tokens)" if kv_concat else "")
            + (f"; the KV heads repeated to the query heads first (repeat_kv: a copy {repeat_passes / 2:g}x the cache,"
               f" written and read: {repeat_passes:g} x p tokens)" if repeat_passes else "")
            + latency_text(layers, latency_us))


def decode_kv_read_text(fraction: float, bw_factor: float) -> str:
    """How a score-writing kernel's decode reads the cache: its batched GEMMs' rate and the group's blended rate."""
    return (f"; QK^T and AV run as batched GEMMs of one query row, reading the cache at {fraction:g} of the stream "
            f"rate (measured: data/runtimes.yaml), so these bytes move at {bw_factor:.2f} of it")


def heads_grid_text(blocks: float) -> str:
    """How a decode kernel without a split along the keys reads the cache: on its blocks' share of the SMs."""
    return (f"; the attention kernel launches one block per sequence and query head ({blocks:g}) and none along the "
            f"keys, so on a GPU of more SMs it reads the cache at {blocks:g} / SMs of its rate "
            f"(data/runtimes.yaml decode_heads_grid_on)")


def train_elementwise_text(eager: bool, checkpointing: bool, fb: float, act_bytes: float, fused_elems: float,
                           eager_fwd_elems: float, eager_bwd_elems: float, dropout_sites: int | None) -> str:
    """A training micro-step's elementwise formula (dropout_sites: hidden dropout sites per layer, None without)."""
    b = act_bytes
    if eager:
        text = (f"bytes = tokens x ({eager_fwd_elems:,.0f} forward"
                + (" x 2 (recomputed)" if checkpointing else "")
                + f" + {eager_bwd_elems:,.0f} backward) elements x {b:g} B (eager: every op "
                "its own kernel, its backward op by op)")
    else:
        text = (f"bytes = {fb:g} x tokens x {fused_elems:,.0f} elements x {b:g} B (forward traffic, "
                "elementwise chains fused; backward 2x" + (", recompute 1x" if checkpointing else "") + ")")
    if dropout_sites is not None:
        text += (f" + dropout: {dropout_sites} sites x hidden per layer, each reading x and writing y "
                 f"and a 1-byte mask, its backward reading the gradient and the mask")
    return text


def train_chain_text(chains: tuple[float, float], checkpointing: bool) -> str:
    """What eager LLaMA-family code adds to a training micro-step's elementwise formula: its forward chains (per
    token, recomputed too under checkpointing) and their backward ('' when it adds nothing)."""
    fwd, bwd = chains
    if not (fwd or bwd):
        return ""
    return (f" + tokens x ({fwd:,.0f}{' x 2' if checkpointing else ''} + {bwd:,.0f} backward) B (Hugging Face LLaMA "
            "code op by op: RMSNorm in float32 and rotary on Q and K, and autograd's backward of each op)")


def autocast_text(stream: tuple[float, float], loss_per_logit: float, checkpointing: bool, logits: bool) -> str:
    """What torch.autocast over float32 weights adds to a training micro-step's elementwise formula: the float32
    residual stream, LayerNorms and casts per token (forward, recomputed too, and backward), and the float32 loss's
    bytes per logit ('' when neither applies)."""
    fwd, bwd = stream
    text = (f" + tokens x ({fwd:,.0f}{' x 2' if checkpointing else ''} + {bwd:,.0f} backward) B (op by op: under "
            "autocast over fp32 weights the fp32 residual stream, LayerNorms and their casts for the linear modules; "
            "a Python GELU's eight ops)"
            if fwd or bwd else "")
    if logits:
        text += (f" + logits x {loss_per_logit:g} B (the loss over fp32 logits, forward and backward"
                 + (": the upcast, log_softmax and nll_loss op by op)" if loss_per_logit > fused_loss_bytes()
                    else ": written, read by softmax, its gradient written)"))
    return text


def train_linear_text(fb: float, checkpointing: bool, rows: int, note: str) -> str:
    return (f"FLOPs = {2 * fb:g} x tokens x matmul params (fwd 2, bwd 4{', recompute 2' if checkpointing else ''}); "
            f"bytes = weights read {fb:g}x + fp32 grad accumulate; GEMMs of M = {rows:,} rows and their "
            "backward transposes" + note)


def train_attention_text(s: Setup, manual: bool, passes: float, bwd: float | None, score_words: str,
                         dropout: bool) -> str:
    """A training step's attention forward (bwd None: `passes` forwards, 2 with a recomputation) or backward (`bwd`
    times the forward's FLOPs; Q, K, V, O read and their gradients written: 2x the forward's bytes)."""
    what = (f"{passes:g} (forward{' + its recomputation' if passes > 1 else ''})" if bwd is None else
            f"{bwd:g} (the backward: {bwd:g}x the forward's FLOPs"
            + (", QK^T recomputed inside the kernel, as selective recomputation would (Korthikanti et al. 2022): "
               "no scores are stored" if not manual else "") + ")")
    qkvo = f"Q,K,V,O x {passes:g}" if bwd is None else "Q,K,V,O and their gradients"
    return (f"FLOPs = 4 x layers x heads x head_dim x {'S^2' if manual else 'S(S+1)/2'} x batch x {what}; "
            f"bytes = {qkvo}" + (f" + {score_words}" + (" + dropout on the probabilities" if dropout else "")
                                 if manual else "") + kernel_rate_text(s, backward=bwd is not None))


# Memory items: each a template MemoryItem fills with its numbers.
WHOLE_LM_HEAD = "{:,} LM head params x {:g} B x (1 - 1/{}): the runtime does not split it over the GPUs"
INFERENCE_ACTIVATIONS = "peak live tensors of one layer + fp32 logits for every token"
KV_CACHE = "batch {} x {} tokens x 2 (K, V) x {} layers x {} x {:g} B ({}) / {} GPU(s)"
STATE_MEMORY = ("batch {} x {} state-space layers x {:,} elements (inner x state + the convolution's last inputs) "
                "x {:g} B / {} GPU(s): fixed per sequence, whatever its length")
KV_CACHE_KINDS = "batch {} x {} x {:,} elements per token and layer ({}) x {:g} B ({}) / {} GPU(s)"


def held_words(total: int, full_layers: int, window: int, window_layers: int) -> str:
    """The token-layers a sequence's cache holds, in words (sliding-window layers keep the last window)."""
    if not window_layers:
        return f"{total:,} tokens x {full_layers} layers"
    return (f"({total:,} tokens x {full_layers} full layers + min({total:,}, window {window:,}) tokens x "
            f"{window_layers} sliding-window layers)")


def kv_layer_words(kv_lora_rank: int, rope_dim: int, kv_heads: int, head_dim: int) -> str:
    """What one token caches in one layer, in words."""
    if kv_lora_rank:
        return (f"latent {kv_lora_rank} + RoPE key {rope_dim}, shared by every head: multi-head latent attention, "
                f"held whole on each tensor-parallel GPU")
    return f"K and V: 2 x {kv_heads} KV heads x {head_dim}"


ENCODER_WORDS = "encoder (bidirectional: no KV cache, no generation)"


def layer_kinds_text(dense_layers: int, kv_lora_rank: int, rope_dim: int, window: int, window_layers: int,
                     state_layers: int = 0) -> str:
    """What a decoder's layers add to its one-line description ('' for a uniform stack)."""
    parts = [f"{state_layers} state-space / linear-attention layers (a fixed state)"] if state_layers else []
    if dense_layers:
        parts.append(f"{dense_layers} dense layers first")
    if kv_lora_rank:
        parts.append(f"latent attention (KV latent {kv_lora_rank} + RoPE {rope_dim})")
    if window_layers:
        parts.append(f"{window_layers} sliding-window layers ({window:,} tokens)")
    return "".join(f" · {p}" for p in parts)


def decode_layer_kinds_text(kv_lora_rank: int, window: int, window_layers: int) -> str:
    """What a decode step's attention formula adds for latent attention and sliding windows ('' for neither)."""
    out = ""
    if kv_lora_rank:
        out += ("; latent attention absorbed: per head and key 2 x (2 x kv_lora_rank + rope) FLOPs, the latent cache "
                "read once for all heads")
    if window_layers:
        out += f"; the {window_layers} sliding-window layers: their own group, min(p, {window:,}) keys"
    return out


def window_decode_text(window_layers: int, window: int) -> str:
    """A decode step's sliding-window layers' attention formula."""
    return (f"{window_layers} sliding-window layers, each step: FLOPs = attention FLOPs per key x min(p, {window:,}) "
            f"keys; bytes = their cached K and V (or latent) of min(p, {window:,}) positions: keys past the window "
            "are neither read nor scored")


def generate_activations_text(chunk: int, prompt: int) -> str:
    return ("peak live tensors of one layer (prefill" + (f" of a {chunk}-token chunk" if chunk < prompt else "")
            + " or decode) + logits")


def train_activations_text(checkpointing: bool, saved_bytes: float, scores: bool) -> str:
    """Training activations in words; saved_bytes: what all layers save for backward per token (decoder
    saved_act_bytes)."""
    if checkpointing:
        text = "layer inputs (tokens x hidden x layers) + one layer recomputed"
    else:
        text = (f"tokens x {saved_bytes:,.0f} B saved per token (all layers)"
                + (" + score matrices (manual attention)" if scores else ""))
    return text + " + fp32 logits and their gradient"


def scan_text(layers: int, inner: int, state: int, channels: int, conv: int, state_passes: float) -> str:
    """The state-space layers' scan group in words."""
    io = {0.0: "", 1.0: "; bytes = each sequence's state written once",
          2.0: "; bytes = each sequence's state read and written (a decode step)"}.get(state_passes, "")
    return (f"FLOPs = tokens x {layers} layers x (8 x inner {inner:,} x state {state} (selective scan) + 2 x "
            f"{channels:,} channels x conv {conv}){io}")
