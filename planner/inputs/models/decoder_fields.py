"""A decoder's fields: the architecture fields a user may edit (ARCH_FIELDS, with their bounds: one place for the
loader, the form and the link) and the check of a decoder record against them (read_decoder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.base.schema import MAX_NOTE_CHARS, Record


@dataclass(frozen=True)
class ArchField:
    """One architecture field a user may edit: its name in models.yaml, kind and bounds (one place for all)."""

    name: str
    kind: str  # 'int', 'text', 'bool' or a '|'-separated choice
    lo: int = 1
    hi: int = 10**7

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.kind.split("|")) if "|" in self.kind else ()


ARCH_FIELDS = (
    ArchField("name", "text"),
    ArchField("layers", "int", 1, 1000),
    ArchField("hidden", "int", 1, 10**6),
    ArchField("heads", "int", 1, 4096),
    ArchField("kv_heads", "int", 1, 4096),
    ArchField("head_dim", "int", 1, 4096),
    ArchField("ffn", "int", 1, 10**7),
    ArchField("ffn_kind", "swiglu|gelu"),
    ArchField("experts", "int", 1, 4096),  # MLPs per layer; 1 = a dense MLP
    ArchField("experts_per_token", "int", 1, 4096),  # experts the router sends each token to (top-k)
    ArchField("shared_ffn", "int", 0, 10**7),  # intermediate size of the shared experts every token sees; 0 = none
    ArchField("vocab", "int", 1, 10**7),
    ArchField("context", "int", 1, 10**8),
    ArchField("tied_embeddings", "bool"),
    ArchField("norm", "rmsnorm|layernorm"),
    ArchField("learned_pos_emb", "bool"),
    ArchField("bias", "bool"),
)
ARCH = {f.name: f for f in ARCH_FIELDS}
# `dropout` is a training setting of the model's config (hidden_dropout_prob, attention_probs_dropout_prob; 0 in
# LLaMA-family configs), read from models.yaml and config.json but not one of the architecture fields a user edits.
# Layers of more than one kind, read from models.yaml and config.json (the page's form does not edit them; a profile
# with any of them travels as its file's text): dense first layers of a mixture of experts, multi-head latent
# attention, sliding-window layers. 0 = not used.
LAYER_FIELDS = (
    ArchField("dense_layers", "int", 0, 1000),  # layers with one dense MLP of dense_ffn (first_k_dense_replace)
    ArchField("dense_ffn", "int", 0, 10**7),
    ArchField("kv_lora_rank", "int", 0, 65536),  # MLA: the cached latent's width
    ArchField("q_lora_rank", "int", 0, 65536),  # MLA: Q's latent width (0: one Q projection)
    ArchField("rope_dim", "int", 0, 4096),  # MLA: the decoupled RoPE key's width (qk_rope_head_dim)
    ArchField("v_head_dim", "int", 0, 4096),  # MLA: a head's value width (0: head_dim)
    ArchField("window", "int", 0, 10**8),  # sliding window (tokens) of the window_layers layers
    ArchField("window_layers", "int", 0, 1000),
    ArchField("token_types", "int", 0, 1000),  # encoder: segment-embedding rows (BERT's type_vocab_size)
    ArchField("head_outputs", "int", 0, 10**6),  # encoder: a classifier's outputs
    ArchField("state_layers", "int", 0, 1000),  # layers with a state-space (Mamba) mixer instead of attention
    ArchField("ssm_inner", "int", 0, 10**6),
    ArchField("ssm_state", "int", 0, 4096),
    ArchField("ssm_conv", "int", 0, 64),
    ArchField("ssm_dt_rank", "int", 0, 65536),  # Mamba-1
    ArchField("ssm_heads", "int", 0, 65536),  # Mamba-2
    ArchField("ssm_groups", "int", 0, 65536),  # Mamba-2
)
SSM_FIELDS = ("ssm_inner", "ssm_state", "ssm_conv")
MAX_MODEL_TYPE_CHARS = 64  # config.json's model_type ('qwen2', 'mistral'): a short identifier
ENCODER_FLAGS = ("encoder", "pooler")  # an encoder (bidirectional, no generation) and its pooler
FIELDS = (("id", "kind", "source", "dropout", "gelu_tanh_chain", "cross_check", "model_type")
          + tuple(f.name for f in ARCH_FIELDS + LAYER_FIELDS) + ENCODER_FLAGS)


def read_decoder(rec: Record) -> dict[str, Any]:
    """A decoder record's fields, checked against FIELDS and their bounds: the keyword arguments of its profile."""
    rec.check_keys(FIELDS)
    A = ARCH
    hidden = rec.number("hidden", lo=A["hidden"].lo, hi=A["hidden"].hi, integer=True)
    heads = rec.number("heads", lo=A["heads"].lo, hi=A["heads"].hi, integer=True)
    kv_heads = rec.number("kv_heads", required=False, lo=A["kv_heads"].lo, hi=A["kv_heads"].hi, integer=True) or heads
    if heads % kv_heads:
        raise rec.fail("kv_heads", f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    head_dim = rec.number("head_dim", required=False, lo=A["head_dim"].lo, hi=A["head_dim"].hi, integer=True)
    if head_dim is None:
        if hidden % heads:
            raise rec.fail("heads", f"hidden ({hidden}) is not divisible by heads ({heads}); give head_dim")
        head_dim = hidden // heads
        if head_dim > A["head_dim"].hi:  # the bound a given head_dim has, so a loaded model stays an editable one
            raise rec.fail("hidden", f"hidden ({hidden:,}) / heads ({heads:,}) gives heads {head_dim:,} wide, more "
                                     f"than head_dim's bound of {A['head_dim'].hi:,}; check hidden and heads")
    count = lambda name: rec.number(name, lo=A[name].lo, hi=A[name].hi, integer=True)  # noqa: E731
    optional = lambda name: rec.number(name, required=False, lo=A[name].lo, hi=A[name].hi, integer=True)  # noqa: E731
    experts, top_k = int(optional("experts") or 1), int(optional("experts_per_token") or 1)
    shared_ffn = int(optional("shared_ffn") or 0)
    if top_k > experts:
        raise rec.fail("experts_per_token", f"each token can't be routed to more experts ({top_k}) than a layer has "
                                            f"(experts: {experts})")
    if shared_ffn and experts == 1:
        raise rec.fail("shared_ffn", "a shared expert belongs to a mixture-of-experts layer (experts > 1); for a "
                                     "dense model put the whole MLP in ffn")
    kinds = {f.name: int(rec.number(f.name, required=False, lo=f.lo, hi=f.hi, integer=True) or 0)
             for f in LAYER_FIELDS}
    _check_layer_kinds(rec, kinds, count("layers"), experts, head_dim)
    flags = {f: rec.flag(f, default=False) for f in ENCODER_FLAGS}
    if rec.data.get("kind") == "encoder" and not flags["encoder"]:
        raise rec.fail("encoder", "a record of kind encoder says encoder: true (or use kind decoder)")
    for name in ("token_types", "head_outputs", "pooler"):
        if (kinds.get(name) or flags.get(name)) and not flags["encoder"]:
            raise rec.fail(name, "belongs to an encoder (BERT, ViT): set encoder: true, or leave it out")
    return dict(
        **kinds, **flags,
        id=rec.text("id"), name=rec.text("name"), layers=count("layers"),
        hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim, ffn=count("ffn"),
        ffn_kind=rec.text("ffn_kind", choices=A["ffn_kind"].choices), vocab=count("vocab"), context=count("context"),
        tied_embeddings=rec.flag("tied_embeddings"), norm=rec.text("norm", choices=A["norm"].choices),
        learned_pos_emb=rec.flag("learned_pos_emb", default=False), bias=rec.flag("bias", default=False),
        source=rec.text("source"), experts=experts, experts_per_token=top_k, shared_ffn=shared_ffn,
        dropout=rec.flag("dropout", default=False), gelu_tanh_chain=rec.flag("gelu_tanh_chain", default=False),
        cross_check=rec.text("cross_check", required=False, max_len=MAX_NOTE_CHARS) or "",
        model_type=rec.text("model_type", required=False, max_len=MAX_MODEL_TYPE_CHARS) or "",
    )


def _check_layer_kinds(rec: Record, k: dict[str, int], layers: int, experts: int, head_dim: int) -> None:
    """The layer-kind fields agree with each other and the stack (DataFileError naming the field)."""
    if k["dense_layers"] and experts == 1:
        raise rec.fail("dense_layers", "dense layers are the layers of a mixture of experts without experts (experts "
                                       "> 1); a dense model's layers are all dense already")
    if k["dense_layers"] >= layers:
        raise rec.fail("dense_layers", f"{k['dense_layers']} dense layers leave none of the {layers} layers with "
                                       "experts; give fewer, or make the model dense (experts: 1)")
    if bool(k["dense_layers"]) != bool(k["dense_ffn"]):
        raise rec.fail("dense_ffn" if k["dense_layers"] else "dense_layers",
                       "dense_layers and dense_ffn go together: the dense layers' MLP intermediate size")
    if not k["kv_lora_rank"]:
        for name in ("q_lora_rank", "rope_dim", "v_head_dim"):
            if k[name]:
                raise rec.fail(name, "belongs to multi-head latent attention: give kv_lora_rank (the cached latent's "
                                     "width) too, or leave it out")
    elif k["rope_dim"] >= head_dim:
        raise rec.fail("rope_dim", f"the RoPE part ({k['rope_dim']}) must be narrower than head_dim ({head_dim}), "
                                   "which is qk_nope_head_dim + qk_rope_head_dim")
    if bool(k["window"]) != bool(k["window_layers"]):
        raise rec.fail("window" if k["window_layers"] else "window_layers",
                       "window and window_layers go together: the sliding window in tokens and how many layers use it")
    if k["state_layers"] > layers:
        raise rec.fail("state_layers", f"more state-space layers ({k['state_layers']}) than layers ({layers})")
    if k["window_layers"] > layers - k["state_layers"]:
        raise rec.fail("window_layers", f"more sliding-window layers ({k['window_layers']}) than attention layers "
                                        f"({layers - k['state_layers']})")
    _check_state_space(rec, k)


def _check_state_space(rec: Record, k: dict[str, int]) -> None:
    """A state-space mixer's fields: all of inner, state and conv, and either Mamba-1's dt rank or Mamba-2's heads
    and groups."""
    ssm = [n for n in SSM_FIELDS + ("ssm_dt_rank", "ssm_heads", "ssm_groups") if k[n]]
    if not k["state_layers"]:
        if ssm:
            raise rec.fail(ssm[0], "belongs to a state-space mixer: give state_layers (how many layers run it) too, "
                                   "or leave it out")
        return
    for name in SSM_FIELDS:
        if not k[name]:
            raise rec.fail(name, "a state-space layer needs ssm_inner, ssm_state and ssm_conv (its inner width, state "
                                 "size and convolution width)")
    if bool(k["ssm_dt_rank"]) == bool(k["ssm_heads"]):
        raise rec.fail("ssm_dt_rank", "give ssm_dt_rank for a Mamba-1 mixer or ssm_heads (and ssm_groups) for a "
                                      "Mamba-2 one, not both or neither")
    if k["ssm_heads"] and (not k["ssm_groups"] or k["ssm_heads"] % k["ssm_groups"]
                           or k["ssm_inner"] % k["ssm_heads"]):
        raise rec.fail("ssm_groups", f"Mamba-2 needs groups dividing its heads ({k['ssm_heads']}) and heads dividing "
                                     f"its inner width ({k['ssm_inner']})")
