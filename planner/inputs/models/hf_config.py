"""Decoder profiles from a Hugging Face config.json, for the model families the decoder profile describes exactly;
anything else is refused with a message naming the model type or field, why the formulas don't fit it, and what to
use instead (a DataFileError, as for any bad model file).

Read: LLaMA-style decoders (RMSNorm, gated MLP of three matrices, RoPE, no linear biases: llama, mistral, qwen2,
qwen3, gemma, gemma2, gemma3_text), their mixture-of-experts forms (mixtral; qwen2_moe with shared experts and dense
layers by decoder_sparse_step / mlp_only_layers; qwen3_moe), DeepSeek's (deepseek: shared experts and dense first
layers; deepseek_v2, deepseek_v3: multi-head latent attention as well), OpenAI's gpt_oss (biased attention,
router and experts; sliding-window and full layers by layer_types) and GPT-2.
Weights under 0.01 % of a model are not counted: Qwen2's q/k/v biases, Qwen3's and Gemma 3's q/k norms, Qwen2-MoE's
shared-expert gate (hidden x 1), Gemma 2/3's two extra norms per layer, DeepSeek-V3's router score-correction bias,
gpt-oss's attention sinks and router bias.
Encoders: bert, roberta, xlm-roberta, camembert, distilbert (DistilBertConfig's own names), vit; encoder-decoders:
t5, mt5, whisper.
Sliding windows: the layers the config puts on a window (`layer_types` 'sliding_attention'; Gemma 2's every other
layer from the first; Gemma 3's `sliding_window_pattern`; Qwen2's layers from `max_window_layers` up when
`use_sliding_window`; Mistral's every layer) cache and attend at most `sliding_window` tokens.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from planner.base.safe_parse import MAX_SHOWN_CHARS
from planner.base.safe_parse import shown as shown_value
from planner.base.schema import DataFileError, Record
from planner.inputs.models.decoder import DecoderProfile, parse_decoder
from planner.inputs.models.decoder_fields import ARCH
from planner.inputs.models.encoder_decoder import EncoderDecoderProfile

GATED = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text",
         "deepseek", "deepseek_v2", "deepseek_v3", "jamba", "qwen3_next", "gpt_oss")
GPT2 = ("gpt2",)
READ = GATED + GPT2
# transformers' config classes default tie_word_embeddings to true for these
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text")

WHAT_TO_DO = "use a generic profile (docs/SCHEMAS.md) or trace its PyTorch code: `python3 -m planner profile`"
LLAMA_LIKE_HINT = ("if its layers are LLaMA-like after all, write a decoder profile or edit a custom model; "
                   "otherwise " + WHAT_TO_DO)

# Encoders read as BertModel's stack (embeddings + positions + segments + LayerNorm, post-norm layers with biases and
# a GELU MLP, a pooler) or ViTModel's (a patch projection in place of the word embeddings, [CLS] + patches)
SEQ2SEQ = ("t5", "mt5", "whisper")  # encoder-decoders read (encoder_decoder.py)
# T5Config names (mT5: T5 v1.1's gated-GELU MLP and an untied LM head, as its config says)
T5_LIKE = ("t5", "mt5")
BERT_LIKE = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert")
# DistilBertConfig's names for BertConfig's: hidden_size, num_hidden_layers, num_attention_heads, intermediate_size
DISTILBERT_NAMES = {"hidden_size": "dim", "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
                    "intermediate_size": "hidden_dim"}
VIT = ("vit",)
ENCODER_ONLY = ("albert", "electra", "deberta", "deberta-v2",
                "camembert", "mpnet", "modernbert", "ernie", "xlm", "flaubert", "longformer", "big_bird",
                "nomic_bert", "esm")
ENCODER_DECODER = ("umt5", "longt5", "bart", "mbart", "pegasus", "marian", "whisper", "led",
                   "blenderbot", "prophetnet", "fsmt", "switch_transformers", "nllb_moe", "encoder-decoder")
# Families refused with the reason the decoder formulas don't fit them.
NOT_MODELLED = {
    "gemma3": "a vision-language model (a SigLIP vision tower beside the text decoder), and no vision part is "
              "modelled; its text decoder alone is model_type gemma3_text (its text_config as a config.json)",
    "mamba": "its layers are state-space (Mamba) layers, not attention",
    "mamba2": "its layers are state-space (Mamba-2) layers, not attention",
    "rwkv": "its layers are RWKV (linear-attention recurrences), not softmax attention",
    "recurrent_gemma": "it interleaves recurrent (RG-LRU) layers with local attention",
    "gpt_neox": "parallel attention and MLP, LayerNorm with biases and biased linear layers",
    "falcon": "parallel attention and MLP and LayerNorm with biases",
    "phi": "parallel attention and MLP, LayerNorm with biases and biased linear layers",
    "bloom": "ALiBi positions, LayerNorm with biases and biased linear layers",
    "opt": "LayerNorm with biases, biased linear layers and a ReLU MLP",
}
# Fields that change the math in ways the decoder profile does not model: field -> (is it set?, why).
UNMODELLED_FIELDS = (
    ("moe_layer_freq", lambda v: v not in (None, 1),
     "DeepSeek's mixture-of-experts layers alternate with dense ones past the first: not modelled"),
    ("interleave_moe_layer_step", lambda v: v not in (None, 1),
     "mixture-of-experts layers alternate with dense ones: layers of two kinds are not modelled"),
    ("layer_types", lambda v: isinstance(v, list) and bool({str(t) for t in v} - set(LAYER_TYPES + LINEAR_TYPES)),
     "its layers include kinds other than sliding-window and full attention (linear attention or state-space "
     "layers)"),
    ("attn_type_list", lambda v: bool(v), "it interleaves linear-attention and softmax-attention layers"),
)

MAX_ARCHS_SHOWN = 3  # a config lists one or two architectures; a message names a few at most


def _refuse(rec: Record, field: str, what: str, why: str, hint: str = WHAT_TO_DO) -> DataFileError:
    return rec.fail(field, f"{what}: {why}. Refused rather than estimated wrong; to plan it, {hint}")


def _model_type(config: Mapping[str, Any]) -> str | None:
    model_type = config.get("model_type")
    return model_type.lower() if isinstance(model_type, str) else None


def _check_modelled(config: Mapping[str, Any], rec: Record) -> str:
    """The family to read the config as ('gated' or 'gpt2'); DataFileError naming what can't be modelled."""
    mt = _model_type(config)
    archs = config.get("architectures")
    archs = [str(a) for a in archs] if isinstance(archs, list) else []
    named = ", ".join(a[:MAX_SHOWN_CHARS] for a in archs[:MAX_ARCHS_SHOWN])
    named += ", …" if len(archs) > MAX_ARCHS_SHOWN else ""
    shown = f"model_type {shown_value(mt)}" + (f" ({named})" if archs else "") if mt else "this config"
    if mt in SEQ2SEQ:
        return mt
    if config.get("is_encoder_decoder") or mt in ENCODER_DECODER:
        raise _refuse(rec, "is_encoder_decoder" if config.get("is_encoder_decoder") else "model_type", shown,
                      "an encoder-decoder model (its decoder cross-attends to an encoder), not a decoder-only LM")
    if mt in BERT_LIKE or mt in VIT:
        return "vit" if mt in VIT else "bert"
    if mt in ENCODER_ONLY or any(a.endswith("ForMaskedLM") for a in archs):
        raise _refuse(rec, "model_type" if mt in ENCODER_ONLY else "architectures", shown,
                      "an encoder-only model (bidirectional, no token-by-token generation), not a decoder-only LM")
    for name in ("full_attention_interval", "linear_num_key_heads"):
        if config.get(name) not in (None, 1) and mt != "qwen3_next":
            raise _refuse(rec, name, f"{shown} sets {name} = {str(config[name])[:20]}", "it has linear-attention "
                          "(gated delta-net) layers, read only for Qwen3-Next (model_type qwen3_next)")
    period = config.get("attn_layer_period")
    if period not in (None, 1) and mt != "jamba":
        raise _refuse(rec, "attn_layer_period", f"{shown} sets attn_layer_period = {str(period)[:20]}",
                      "it interleaves attention with other (state-space) layers, read only for Jamba (model_type "
                      "jamba: Mamba-1 layers between)")
    for name, is_set, why in UNMODELLED_FIELDS:
        if name in config and is_set(config[name]):
            raise _refuse(rec, name, f"{shown} sets {name} = {str(config[name])[:60]}", why)
    if mt is None:
        if "n_embd" in config:
            return "gpt2"
        raise rec.fail("model_type", "missing from config.json: the planner reads the families "
                                     f"{', '.join(READ)} and needs model_type to know which (e.g. \"model_type\": "
                                     "\"llama\")")
    if mt in NOT_MODELLED:
        raise _refuse(rec, "model_type", shown, NOT_MODELLED[mt])
    if mt not in READ:
        multimodal = ("; it looks multimodal (it has a text_config), and no vision or audio part is modelled"
                      if "text_config" in config else "")
        raise _refuse(rec, "model_type", shown, f"not a family the planner reads from config.json ({', '.join(READ)})"
                      f", so its layers may differ in ways that change the counts (norms, biases, attention, MLP)"
                      f"{multimodal}", LLAMA_LIKE_HINT)
    if archs and not any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        raise _refuse(rec, "architectures", shown, "not a causal language model (…ForCausalLM): a classification "
                      "or embedding head replaces the LM head the decoder profile counts",
                      "plan its base model's config.json (…ForCausalLM) for an upper bound; otherwise " + WHAT_TO_DO)
    return "gpt2" if mt in GPT2 else "gated"


MAX_LAYERS = ARCH["layers"].hi  # layer counts past the bound are refused by the profile's check, not looped over
LAYER_TYPES = ("sliding_attention", "full_attention")  # transformers' layer_types values for attention layers
LINEAR_TYPES = ("linear_attention",)  # Qwen3-Next's gated delta-net layers (read for model_type qwen3_next only)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _window_layers(config: Mapping[str, Any], layers: int) -> int:
    """How many layers attend over the sliding window (0: none, or a window the config switches off)."""
    types = config.get("layer_types")
    if isinstance(types, list) and types:
        return sum(1 for t in types if t == "sliding_attention")
    if "use_sliding_window" in config and not config["use_sliding_window"]:
        return 0  # Qwen2/Qwen3 name a window but run full attention unless use_sliding_window
    mt = _model_type(config)
    if mt == "gemma2":
        return (layers + 1) // 2  # Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2)
    pattern = _int(config.get("sliding_window_pattern"))
    if mt == "gemma3_text" or pattern:
        pattern = pattern or 6  # Gemma3TextConfig's default: every 6th layer global
        return layers - layers // pattern  # layer i global when (i + 1) % pattern == 0
    first = _int(config.get("max_window_layers"))
    if config.get("use_sliding_window") and first is not None:
        return max(0, layers - first)  # Qwen2: layers from max_window_layers up slide
    return layers  # Mistral: every layer


def _windows(config: Mapping[str, Any], layers: Any, context: Any) -> dict[str, int]:
    """window and window_layers for a config with a sliding window shorter than its context ({} otherwise)."""
    window = _int(config.get("sliding_window"))
    if not window or window <= 0 or not isinstance(layers, int) or not isinstance(context, int) or window >= context:
        return {}
    count = min(_window_layers(config, layers), layers)
    return {"window": window, "window_layers": count} if count else {}


def _dense_layers(config: Mapping[str, Any], layers: Any) -> int:
    """Layers of a mixture of experts whose MLP is dense: DeepSeek's first_k_dense_replace first layers; Qwen-MoE's
    mlp_only_layers and those off decoder_sparse_step (Qwen2MoeDecoderLayer: experts when the index is not in
    mlp_only_layers and (index + 1) % decoder_sparse_step == 0)."""
    first = _int(config.get("first_k_dense_replace"))
    if first:
        return first
    step = _int(config.get("decoder_sparse_step")) or 1
    only = config.get("mlp_only_layers")
    only = only if isinstance(only, list) else []
    if not isinstance(layers, int) or (step == 1 and not only):
        return 0
    only = {i for i in only if _int(i) is not None}
    return sum(1 for i in range(min(layers, MAX_LAYERS)) if i in only or (i + 1) % step)


def _period_count(layers: int, period: Any, offset: Any) -> int:
    """Layers i < layers with i % period == offset (Jamba's attn_layer_period / expert_layer_period)."""
    period, offset = _int(period) or 1, _int(offset) or 0
    return sum(1 for i in range(min(layers, MAX_LAYERS)) if i % period == offset)


def _jamba(config: Mapping[str, Any], layers: Any, hidden: Any) -> dict[str, Any]:
    """Jamba's Mamba-1 layers and its mixture-of-experts layers (JambaConfig names): attention where
    i % attn_layer_period == attn_layer_offset, experts where i % expert_layer_period == expert_layer_offset."""
    if _model_type(config) != "jamba" or not isinstance(layers, int) or not isinstance(hidden, int):
        return {}
    attn = _period_count(layers, config.get("attn_layer_period"), config.get("attn_layer_offset"))
    expand = _int(config.get("mamba_expand")) or 2
    rank = config.get("mamba_dt_rank", "auto")
    rank = -(-hidden // 16) if rank == "auto" else rank  # JambaConfig: math.ceil(hidden_size / 16)
    out = {"state_layers": layers - attn, "ssm_inner": expand * hidden, "ssm_state": config.get("mamba_d_state"),
           "ssm_conv": config.get("mamba_d_conv"), "ssm_dt_rank": rank}
    experts = _int(config.get("num_experts")) or 1
    if experts > 1:
        moe = _period_count(layers, config.get("expert_layer_period"), config.get("expert_layer_offset"))
        out |= {"dense_layers": layers - moe, "dense_ffn": config.get("intermediate_size")} if moe < layers else {}
    return out


def _gated_delta_net(config: Mapping[str, Any], layers: Any, rec: Record) -> dict[str, Any]:
    """Qwen3-Next's linear-attention (gated delta-net) layers as Mamba-2-form state-space mixers (Qwen3NextConfig
    names): a state of linear_key_head_dim per value channel (linear_num_value_heads x linear_value_head_dim
    channels), B and C's role taken by the keys and queries of linear_num_key_heads heads, a causal convolution of
    linear_conv_kernel_dim over q, k and v. Layer i is full attention where layer_types says so, else where
    (i + 1) % full_attention_interval == 0. Differences under 0.01 % of the model (in_proj_ba's second output per
    head, no convolution bias, a norm per head width) are not counted."""
    types = config.get("layer_types")
    if _model_type(config) != "qwen3_next" or not isinstance(layers, int):
        if isinstance(types, list) and any(t in LINEAR_TYPES for t in types):
            raise _refuse(rec, "layer_types", "layer_types with linear_attention", "linear-attention layers are "
                          "read for Qwen3-Next only (model_type qwen3_next: gated delta-net)")
        return {}
    if isinstance(types, list) and types:
        linear = sum(1 for t in types if t in LINEAR_TYPES)
    else:
        interval = _int(config.get("full_attention_interval")) or 4
        linear = layers - layers // interval
    heads, dv, dk = (_int(config.get(k)) for k in ("linear_num_value_heads", "linear_value_head_dim",
                                                    "linear_key_head_dim"))
    return {"state_layers": linear, "ssm_inner": heads * dv if heads and dv else None, "ssm_state": dk,
            "ssm_conv": config.get("linear_conv_kernel_dim"), "ssm_heads": heads,
            "ssm_groups": config.get("linear_num_key_heads")}


def _latent(config: Mapping[str, Any]) -> dict[str, Any]:
    """Multi-head latent attention's fields (DeepseekV2/V3Config names), {} without kv_lora_rank."""
    if config.get("kv_lora_rank") is None:
        return {}
    nope, rope = config.get("qk_nope_head_dim"), config.get("qk_rope_head_dim")
    return {"kv_lora_rank": config["kv_lora_rank"], "q_lora_rank": config.get("q_lora_rank") or 0,
            "rope_dim": rope, "v_head_dim": config.get("v_head_dim"),
            "head_dim": nope + rope if isinstance(nope, int) and isinstance(rope, int) else None}


def _experts(config: Mapping[str, Any], get, ffn: Any) -> dict[str, Any]:
    """Mixture-of-experts fields: Mixtral (num_local_experts) or Qwen-MoE (num_experts, moe_intermediate_size, shared
    expert) key names; {} for a dense model."""
    experts = get("num_local_experts", "num_experts", "n_routed_experts")
    if experts is None or experts == 1:
        return {}
    out = {"experts": experts, "experts_per_token": get("num_experts_per_tok"),
           "ffn": get("moe_intermediate_size") or ffn}
    if config.get("shared_expert_intermediate_size"):
        out["shared_ffn"] = config["shared_expert_intermediate_size"]
    shared = _int(config.get("n_shared_experts"))
    if shared and isinstance(out["ffn"], int):  # DeepSeekMoE: n_shared_experts experts' width in one MLP
        out["shared_ffn"] = shared * out["ffn"]
    dense = _dense_layers(config, get("num_hidden_layers"))
    if dense:
        out |= {"dense_layers": dense, "dense_ffn": ffn}
    return out


# Dropout probabilities in transformers configs: GPT-2 (resid_pdrop, attn_pdrop, embd_pdrop: 0.1 in gpt2's
# config.json), BERT (hidden_dropout_prob, attention_probs_dropout_prob), LLaMA-family (attention_dropout: 0.0).
DROPOUT_KEYS = ("resid_pdrop", "attn_pdrop", "embd_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob",
                "attention_dropout", "hidden_dropout", "dropout")


# transformers' ACT2FN name of NewGELUActivation, GPT-2's default activation_function (activations.py, read 2026-11-27)
GELU_TANH_CHAIN = "gelu_new"


def _trains_with_dropout(config: Mapping[str, Any]) -> bool:
    """Whether any dropout of the config is active in training (p > 0; p = 0 launches no kernel in PyTorch)."""
    return any(isinstance(config.get(k), (int, float)) and not isinstance(config.get(k), bool) and config[k] > 0
               for k in DROPOUT_KEYS)


def _encoder(config: Mapping[str, Any], family: str, model_id: str, source: str, rec: Record) -> DecoderProfile:
    """An encoder's profile from BertConfig / RobertaConfig / DistilBertConfig / ViTConfig names: the base model with
    its pooler (BertModel, ViTModel: the published totals count it; DistilBertModel has none, nor segment
    embeddings); ViTForImageClassification has a classifier of len(id2label) outputs instead. Not counted: a
    masked-LM head (BertForMaskedLM's transform, tied decoder and bias), ViT's [CLS] token and patch-projection bias
    (2 x hidden)."""
    distil = _model_type(config) == "distilbert"
    get = lambda key: config.get(DISTILBERT_NAMES[key] if distil else key)  # noqa: E731
    data: dict[str, Any] = {
        "id": model_id, "name": model_id, "kind": "decoder", "encoder": True, "layers": get("num_hidden_layers"),
        "hidden": get("hidden_size"), "heads": get("num_attention_heads"), "ffn": get("intermediate_size"),
        "ffn_kind": "gelu",
        "tied_embeddings": True, "norm": "layernorm", "learned_pos_emb": True, "bias": True, "source": source,
        "dropout": _trains_with_dropout(config)}
    archs = config.get("architectures") if isinstance(config.get("architectures"), list) else []
    if family == "vit":
        image, patch, channels = (_int(config.get(k)) for k in ("image_size", "patch_size", "num_channels"))
        if not image or not patch:
            raise rec.fail("image_size" if not image else "patch_size", "missing from config.json (a ViT's image "
                                                                        "and patch sizes give its tokens)")
        labels = config.get("id2label")
        classifier = any(str(a).endswith("ForImageClassification") for a in archs)
        data |= {"vocab": (channels or 3) * patch * patch, "context": (image // patch) ** 2 + 1,
                 "pooler": not classifier,
                 "head_outputs": len(labels) if classifier and isinstance(labels, dict) else 0}
    else:
        data |= {"vocab": config.get("vocab_size"), "context": config.get("max_position_embeddings"),
                 "token_types": 0 if distil else config.get("type_vocab_size", 2), "pooler": not distil}
    missing = [k for k in ("layers", "hidden", "heads", "ffn", "vocab", "context") if data[k] is None]
    if missing:
        raise rec.fail(missing[0], "missing from config.json (looked for "
                                   f"{'DistilBertConfig' if distil else 'BertConfig / ViTConfig'} key names)")
    return parse_decoder(Record(source, f"'{model_id}'", data))


def _stack(rec: Record, part: str, data: dict[str, Any]) -> DecoderProfile:
    missing = [k for k, v in data.items() if v is None]
    if missing:
        raise rec.fail(missing[0], f"missing from config.json (the {part}'s T5Config / WhisperConfig key names)")
    return parse_decoder(Record(rec.path, f"{rec.label} {part}", data))


def _seq2seq(config: Mapping[str, Any], family: str, model_id: str, source: str,
             rec: Record) -> EncoderDecoderProfile:
    """T5 (T5Config: d_model, d_kv, d_ff, num_layers, num_decoder_layers, num_heads, feed_forward_proj; one shared
    embedding; no biases, weight-only norms; its relative position bias (buckets x heads, two tables) not counted)
    or Whisper (WhisperConfig: d_model, encoder/decoder_layers, _attention_heads, _ffn_dim, num_mel_bins,
    max_source_positions, max_target_positions; LayerNorm, biases, GELU MLPs; the encoder's input is two
    convolutions over the mel bins: the first as its embedding rows (num_mel_bins x 3), the second and the first's
    bias as front_params; its K projections have no bias, counted with one: 2 x layers x d_model, 0.005 %)."""
    get = config.get
    h = get("d_model")
    common = {"kind": "decoder", "source": source, "ffn_kind": "gelu", "tied_embeddings": True}
    if family in T5_LIKE:
        gated = str(get("feed_forward_proj", "relu")).startswith("gated")
        stack = common | {"hidden": h, "heads": get("num_heads"), "head_dim": get("d_kv"), "ffn": get("d_ff"),
                          "ffn_kind": "swiglu" if gated else "gelu", "vocab": get("vocab_size"),
                          "context": get("n_positions") or 512, "norm": "rmsnorm", "bias": False,
                          "learned_pos_emb": False, "dropout": _trains_with_dropout(config)}
        enc = stack | {"id": f"{model_id} encoder", "name": "encoder", "layers": get("num_layers"), "encoder": True}
        dec = stack | {"id": f"{model_id} decoder", "name": "decoder",
                       "layers": get("num_decoder_layers") or get("num_layers"),
                       "tied_embeddings": bool(get("tie_word_embeddings", True))}
        shared, front = True, 0
    else:
        mels = get("num_mel_bins")
        stack = common | {"hidden": h, "norm": "layernorm", "bias": True, "learned_pos_emb": True,
                          "dropout": _trains_with_dropout(config)}
        enc = stack | {"id": f"{model_id} encoder", "name": "encoder", "encoder": True,
                       "layers": get("encoder_layers"), "heads": get("encoder_attention_heads"),
                       "ffn": get("encoder_ffn_dim"), "vocab": 3 * mels if isinstance(mels, int) else None,
                       "context": get("max_source_positions")}
        dec = stack | {"id": f"{model_id} decoder", "name": "decoder", "layers": get("decoder_layers"),
                       "heads": get("decoder_attention_heads"), "ffn": get("decoder_ffn_dim"),
                       "vocab": get("vocab_size"), "context": get("max_target_positions"),
                       "tied_embeddings": bool(get("tie_word_embeddings", True))}
        shared = False
        front = h * h * 3 + h + h if isinstance(h, int) else 0  # conv2 (3-wide, with bias) + conv1's bias
    return EncoderDecoderProfile(id=model_id, name=model_id, source=source, enc=_stack(rec, "encoder", enc),
                                 dec=_stack(rec, "decoder", dec), shared_embeddings=shared, front_params=front)


def _gpt_oss_note(config: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """What a gpt-oss profile leaves out (GptOssAttention, GptOssTopKRouter, GptOssExperts in transformers): the
    attention sinks (one learned logit per head and layer: one more softmax term per query, FLOPs and bytes under
    0.01 % of a step) and the router's bias, and the experts' clamped SwiGLU (elementwise)."""
    layers, heads, experts = (_int(data.get(k)) or 0 for k in ("layers", "heads", "experts"))
    uncounted = layers * (heads + experts)
    return (f"not counted: the attention sinks and router biases ({uncounted:,} weights: one sink logit per head and "
            f"a bias per expert, each layer), whose work is one more softmax term per head and query; the experts' "
            f"SwiGLU is clamped at swiglu_limit {config.get('swiglu_limit', 7.0)} (elementwise, counted as SwiGLU)")


def from_hf_config(config: Mapping[str, Any], model_id: str,
                   source: str) -> DecoderProfile | EncoderDecoderProfile:
    """Build a decoder profile from a Hugging Face config.json (LLaMA/Mistral/Mixtral/Qwen/Gemma or GPT-2 keys; BERT,
    RoBERTa and ViT encoders); DataFileError naming the field when the config describes something the profile can't
    model."""
    rec = Record(source, f"'{model_id}'", dict(config))
    family = _check_modelled(config, rec)
    if family in ("bert", "vit"):
        return _encoder(config, family, model_id, source, rec)
    if family in SEQ2SEQ:
        return _seq2seq(config, family, model_id, source, rec)
    get = lambda *keys: next((config[k] for k in keys if config.get(k) is not None), None)  # noqa: E731
    is_gpt2 = family == "gpt2"
    hidden = get("hidden_size", "n_embd", "d_model")
    heads = get("num_attention_heads", "n_head")
    ffn = get("intermediate_size", "n_inner") or (4 * hidden if isinstance(hidden, int) else None)
    tied_default = is_gpt2 or _model_type(config) in TIED_BY_DEFAULT
    data = {
        "id": model_id, "name": model_id, "kind": "decoder", "layers": get("num_hidden_layers", "n_layer"),
        "hidden": hidden, "heads": heads, "kv_heads": get("num_key_value_heads") or heads, "ffn": ffn,
        "ffn_kind": "gelu" if is_gpt2 else "swiglu",  # 'swiglu': any gated MLP of three matrices (Gemma's GeGLU too)
        "vocab": get("vocab_size"), "context": get("max_position_embeddings", "n_positions", "n_ctx"),
        "tied_embeddings": bool(config.get("tie_word_embeddings", tied_default)),
        "norm": "layernorm" if is_gpt2 else "rmsnorm", "learned_pos_emb": is_gpt2,
        "bias": is_gpt2 or _model_type(config) == "gpt_oss",
        "source": source, **_experts(config, get, ffn), "dropout": _trains_with_dropout(config),
        "gelu_tanh_chain": is_gpt2 and get("activation_function") == GELU_TANH_CHAIN,
    }
    if config.get("head_dim"):
        data["head_dim"] = config["head_dim"]
    if _model_type(config):  # the modeling code transformers runs it with (Decoder.model_type)
        data["model_type"] = _model_type(config)
    latent = _latent(config)
    if latent:  # every head has its own K and V, decompressed from the shared latent
        data |= latent | {"kv_heads": heads}
    missing = [k for k in ("layers", "hidden", "heads", "vocab", "context") if data[k] is None]
    missing += [k for k in ("rope_dim", "v_head_dim", "head_dim") if k in latent and latent[k] is None]
    if "experts" in data and data["experts_per_token"] is None:
        missing.append("experts_per_token")
    if missing:
        keys = {"experts_per_token": "num_experts_per_tok", "rope_dim": "qk_rope_head_dim",
                "v_head_dim": "v_head_dim", "head_dim": "qk_nope_head_dim"}.get(missing[0],
                                                                             "the LLaMA and GPT-2 key names")
        raise rec.fail(missing[0], f"missing from config.json (looked for {keys})")
    data |= (_windows(config, data["layers"], data["context"]) | _jamba(config, data["layers"], hidden)
             | _gated_delta_net(config, data["layers"], rec))
    if _model_type(config) == "qwen3_next" and _int(heads) and _int(hidden) and _int(data.get("head_dim") or 1):
        gate = hidden * heads * (data.get("head_dim") or hidden // heads)
        data["cross_check"] = (f"not counted: the full-attention layers' output gate (q_proj produces a gate beside Q: "
                               f"{gate:,} weights a layer)")
    if _model_type(config) == "gpt_oss":
        data["cross_check"] = _gpt_oss_note(config, data)
    mtp = _int(config.get("num_nextn_predict_layers"))
    if mtp:
        data["cross_check"] = (f"the checkpoint also holds {mtp} multi-token-prediction layer(s) "
                               "(num_nextn_predict_layers), used only for speculative decoding and not counted here")
    return parse_decoder(Record(source, f"'{model_id}'", data))
