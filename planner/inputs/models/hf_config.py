"""Decoder profiles from a Hugging Face config.json (LLaMA / Mistral / Qwen or GPT-2 key names)."""

from __future__ import annotations

from typing import Any, Mapping

from planner.base.schema import Record
from planner.inputs.models.decoder import DecoderProfile, parse_decoder


def from_hf_config(config: Mapping[str, Any], model_id: str, source: str) -> DecoderProfile:
    """Build a decoder profile from a Hugging Face config.json (LLaMA/Mistral/Qwen or GPT-2 keys)."""
    rec = Record(source, f"'{model_id}'", dict(config))
    get = lambda *keys: next((config[k] for k in keys if config.get(k) is not None), None)  # noqa: E731
    is_gpt2 = "n_embd" in config or config.get("model_type") == "gpt2"
    hidden = get("hidden_size", "n_embd", "d_model")
    heads = get("num_attention_heads", "n_head")
    act = str(get("hidden_act", "activation_function") or "silu").lower()
    data = {
        "id": model_id, "name": model_id, "kind": "decoder", "layers": get("num_hidden_layers", "n_layer"),
        "hidden": hidden, "heads": heads, "kv_heads": get("num_key_value_heads") or heads,
        "ffn": get("intermediate_size", "n_inner") or (4 * hidden if isinstance(hidden, int) else None),
        "ffn_kind": "gelu" if is_gpt2 or "gelu" in act else "swiglu",
        "vocab": get("vocab_size"), "context": get("max_position_embeddings", "n_positions", "n_ctx"),
        "tied_embeddings": bool(config.get("tie_word_embeddings", is_gpt2)),
        "norm": "layernorm" if is_gpt2 else "rmsnorm", "learned_pos_emb": is_gpt2, "bias": is_gpt2,
        "source": source,
    }
    if config.get("head_dim"):
        data["head_dim"] = config["head_dim"]
    missing = [k for k in ("layers", "hidden", "heads", "vocab", "context") if data[k] is None]
    if missing:
        raise rec.fail(missing[0], "missing from config.json (looked for the LLaMA and GPT-2 key names)")
    return parse_decoder(Record(source, f"'{model_id}'", data))
