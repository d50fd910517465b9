"""Model profiles: decoder transformers (derived by formula) and generic profiles (formulas in L).

Counting conventions: parameters exactly as a PyTorch module would hold them; FLOPs = 2 per
multiply-add; an attention step over `pos` keys costs 4 * heads * head_dim * pos FLOPs per
token per layer (QK^T and AV).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import yaml

from planner import DATA_DIR
from planner.base import expressions
from planner.base.schema import CachedHash, DataFileError, Record, UnknownNameError, load_yaml, normalize_name, suggest, unique_ids

MODEL_FILES = (DATA_DIR / "models.yaml", DATA_DIR / "models_generic.yaml")
DECODER_FIELDS = ("id", "name", "kind", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "ffn_kind",
                  "vocab", "context", "tied_embeddings", "norm", "learned_pos_emb", "bias", "source")
GENERIC_FIELDS = ("id", "name", "kind", "input_size_name", "default_input_size", "constants", "params",
                  "fwd_flops_per_sample", "activation_elems_per_sample", "attention_score_elems_per_sample",
                  "peak_inference_elems_per_sample", "peak_inference_score_elems_per_sample",
                  "activation_traffic_elems_per_sample", "kernels_per_forward", "checkpoint_segments", "derivation",
                  "source")


@dataclass(frozen=True, eq=True)
class DecoderProfile(CachedHash):
    """A decoder-only transformer (GPT/LLaMA family)."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it

    id: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    ffn_kind: str  # 'swiglu' (3 matrices) or 'gelu' (2 matrices)
    vocab: int
    context: int
    tied_embeddings: bool
    norm: str  # 'rmsnorm' (weight) or 'layernorm' (weight + bias)
    learned_pos_emb: bool
    bias: bool  # linear layers carry biases (GPT-2)
    source: str
    kind: str = field(default="decoder", init=False)

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @cached_property
    def layer_matmul_params(self) -> int:
        """Weights of the matrices in one layer: Q, K, V, O and the MLP."""
        attn = self.hidden * self.q_dim + 2 * self.hidden * self.kv_dim + self.q_dim * self.hidden
        mlp = (3 if self.ffn_kind == "swiglu" else 2) * self.hidden * self.ffn
        return attn + mlp

    @cached_property
    def layer_other_params(self) -> int:
        """Norm weights (and biases) plus linear biases of one layer."""
        per_norm = self.hidden * (2 if self.norm == "layernorm" else 1)
        biases = (self.q_dim + 2 * self.kv_dim + self.hidden
                  + (self.ffn * (2 if self.ffn_kind == "swiglu" else 1)) + self.hidden) if self.bias else 0
        return 2 * per_norm + biases

    @property
    def lm_head_params(self) -> int:
        return self.vocab * self.hidden

    @cached_property
    def matmul_params(self) -> int:
        """Weights read by the matrix multiplies of one token's forward pass (layers + LM head)."""
        return self.layers * self.layer_matmul_params + self.lm_head_params

    @cached_property
    def params(self) -> int:
        embed = self.vocab * self.hidden + (self.context * self.hidden if self.learned_pos_emb else 0)
        head = 0 if self.tied_embeddings else self.lm_head_params
        final_norm = self.hidden * (2 if self.norm == "layernorm" else 1)
        return self.layers * (self.layer_matmul_params + self.layer_other_params) + embed + head + final_norm

    @cached_property
    def kv_elems(self) -> int:
        """K and V elements cached per token, all layers."""
        return 2 * self.layers * self.kv_dim

    def attention_flops_per_token(self, pos: float) -> float:
        """FLOPs of QK^T and AV for one query token attending over `pos` keys, all layers."""
        return 4.0 * self.layers * self.q_dim * pos

    def linear_flops_per_token(self) -> float:
        return 2.0 * self.matmul_params

    @cached_property
    def act_traffic_elems(self) -> float:
        """Elements read+written per token by the layers' non-matmul kernels and matmul I/O.

        Per layer: two norms (read+write h each), two residual adds (read 2h, write h),
        the activation function (swiglu: read 2f, write f; gelu: read f, write f) and the
        matmuls' inputs/outputs (QKV in h, out q+2kv; O in q, out h; MLP in h, out f or 2f; down in f, out h).
        """
        h, f, q, kv = self.hidden, self.ffn, self.q_dim, self.kv_dim
        act = 3 * f if self.ffn_kind == "swiglu" else 2 * f
        mlp_io = h + (2 * f if self.ffn_kind == "swiglu" else f) + f + h
        per_layer = 4 * h + 6 * h + act + (h + q + 2 * kv) + (q + h) + mlp_io
        return self.layers * per_layer

    @cached_property
    def saved_act_elems(self) -> float:
        """Elements saved for backward per token, all layers, with memory-efficient attention.

        Per layer: norm inputs and outputs (4h), Q, K, V (q + 2kv), attention output (q),
        MLP hidden activations (swiglu: gate, up, product = 3f; gelu: pre- and post-activation = 2f).
        Comparable to Korthikanti et al. 2022 (34·s·b·h bytes for a 4h GELU MLP in 16-bit, dropout included).
        """
        mlp = 3 * self.ffn if self.ffn_kind == "swiglu" else 2 * self.ffn
        return self.layers * (4 * self.hidden + 2 * self.q_dim + 2 * self.kv_dim + mlp)

    def kernels_per_layer(self) -> int:
        """Kernel launches per layer in eager PyTorch (norm, QKV, rotary/none, attention, O, add,
        norm, MLP matmuls, activation, add): counted for a LLaMA/GPT block."""
        return 12 if self.ffn_kind == "swiglu" else 11


@dataclass(frozen=True, eq=True)
class GenericProfile(CachedHash):
    """A model described by formulas in the input size L (axial attention, IPA, ...)."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it

    id: str
    name: str
    input_size_name: str
    default_input_size: int
    constants: tuple[tuple[str, float], ...]
    params_expr: str
    fwd_flops_expr: str
    activation_elems_expr: str
    attention_score_elems_expr: str
    peak_inference_elems_expr: str
    peak_inference_score_elems_expr: str
    activation_traffic_elems_expr: str
    kernels_per_forward: int
    derivation: str
    source: str
    checkpoint_segments_expr: str = "1"  # blocks activation checkpointing splits the model into
    kind: str = field(default="generic", init=False)

    def _eval(self, expr: str, size: float | None = None) -> float:
        variables = dict(self.constants)
        if size is not None:
            variables["L"] = float(size)
        return expressions.evaluate(expr, variables)

    @property
    def params(self) -> int:
        return int(round(self._eval(self.params_expr)))

    def fwd_flops(self, size: float) -> float:
        return self._eval(self.fwd_flops_expr, size)

    def activation_elems(self, size: float) -> float:
        return self._eval(self.activation_elems_expr, size)

    def attention_score_elems(self, size: float) -> float:
        return self._eval(self.attention_score_elems_expr, size)

    def peak_inference_elems(self, size: float) -> float:
        return self._eval(self.peak_inference_elems_expr, size)

    def peak_inference_score_elems(self, size: float) -> float:
        return self._eval(self.peak_inference_score_elems_expr, size)

    def activation_traffic_elems(self, size: float) -> float:
        return self._eval(self.activation_traffic_elems_expr, size)

    @property
    def checkpoint_segments(self) -> float:
        return max(1.0, self._eval(self.checkpoint_segments_expr))


ModelProfile = DecoderProfile | GenericProfile


def parse_decoder(rec: Record) -> DecoderProfile:
    rec.check_keys(DECODER_FIELDS)
    hidden = rec.number("hidden", lo=1, hi=10**6, integer=True)
    heads = rec.number("heads", lo=1, hi=4096, integer=True)
    kv_heads = rec.number("kv_heads", required=False, lo=1, hi=4096, integer=True) or heads
    if heads % kv_heads:
        raise rec.fail("kv_heads", f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    head_dim = rec.number("head_dim", required=False, lo=1, hi=4096, integer=True)
    if head_dim is None:
        if hidden % heads:
            raise rec.fail("heads", f"hidden ({hidden}) is not divisible by heads ({heads}); give head_dim")
        head_dim = hidden // heads
    return DecoderProfile(
        id=rec.text("id"), name=rec.text("name"), layers=rec.number("layers", lo=1, hi=1000, integer=True),
        hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        ffn=rec.number("ffn", lo=1, hi=10**7, integer=True),
        ffn_kind=rec.text("ffn_kind", choices=("swiglu", "gelu")),
        vocab=rec.number("vocab", lo=1, hi=10**7, integer=True),
        context=rec.number("context", lo=1, hi=10**8, integer=True),
        tied_embeddings=rec.flag("tied_embeddings"), norm=rec.text("norm", choices=("rmsnorm", "layernorm")),
        learned_pos_emb=rec.flag("learned_pos_emb", default=False), bias=rec.flag("bias", default=False),
        source=rec.text("source"),
    )


def _formula(rec: Record, fld: str, names: set[str], required: bool = True, default: str = "0") -> str:
    raw = rec.raw(fld, required)
    if raw is None:
        return default
    text = str(raw)
    try:
        unknown = expressions.names(text) - names
    except expressions.ExpressionError as exc:
        raise rec.fail(fld, str(exc)) from None
    if unknown:
        raise rec.fail(fld, f"unknown name(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(names))}")
    return text


def parse_generic(rec: Record) -> GenericProfile:
    rec.check_keys(GENERIC_FIELDS)
    consts_rec = rec.child("constants", required=False)
    constants = {}
    for key, value in (consts_rec.data.items() if consts_rec else ()):
        constants[str(key)] = consts_rec.number(str(key), lo=-1e15, hi=1e15)
    if "L" in constants:
        raise rec.fail("constants", "'L' is the input size and cannot be a constant")
    with_l = set(constants) | {"L"}
    profile = GenericProfile(
        id=rec.text("id"), name=rec.text("name"), input_size_name=rec.text("input_size_name"),
        default_input_size=rec.number("default_input_size", lo=1, hi=10**7, integer=True),
        constants=tuple(sorted(constants.items())), params_expr=_formula(rec, "params", set(constants)),
        fwd_flops_expr=_formula(rec, "fwd_flops_per_sample", with_l),
        activation_elems_expr=_formula(rec, "activation_elems_per_sample", with_l),
        attention_score_elems_expr=_formula(rec, "attention_score_elems_per_sample", with_l, required=False),
        peak_inference_elems_expr=_formula(rec, "peak_inference_elems_per_sample", with_l),
        peak_inference_score_elems_expr=_formula(rec, "peak_inference_score_elems_per_sample", with_l, required=False),
        activation_traffic_elems_expr=_formula(rec, "activation_traffic_elems_per_sample", with_l),
        kernels_per_forward=rec.number("kernels_per_forward", lo=1, hi=10**6, integer=True),
        derivation=rec.text("derivation"), source=rec.text("source"),
        checkpoint_segments_expr=_formula(rec, "checkpoint_segments", set(constants), required=False, default="1"),
    )
    for fld, fn in (("params", lambda: profile.params), ("fwd_flops_per_sample", lambda: profile.fwd_flops(profile.default_input_size)),
                    ("activation_elems_per_sample", lambda: profile.activation_elems(profile.default_input_size)),
                    ("peak_inference_elems_per_sample", lambda: profile.peak_inference_elems(profile.default_input_size))):
        try:
            if fn() < 0:
                raise rec.fail(fld, "evaluates to a negative number at the default input size")
        except expressions.ExpressionError as exc:
            raise rec.fail(fld, str(exc)) from None
    return profile


def parse_model(rec: Record) -> ModelProfile:
    kind = rec.text("kind", choices=("decoder", "generic"))
    return parse_decoder(rec) if kind == "decoder" else parse_generic(rec)


@dataclass(frozen=True)
class ModelCatalog:
    models: tuple[ModelProfile, ...]

    def get(self, name: str) -> ModelProfile:
        key = normalize_name(name)
        for m in self.models:
            if key in (normalize_name(m.id), normalize_name(m.name)):
                return m
        raise UnknownNameError("model", name, suggest(name, [m.id for m in self.models]))


@lru_cache(maxsize=8)
def load_models(paths: tuple[str | Path, ...] = MODEL_FILES) -> ModelCatalog:
    """Load and validate the model presets from every existing file in `paths`."""
    models: list[ModelProfile] = []
    for path in paths:
        if Path(path).exists():
            models += [parse_model(Record.of(path, i, r)) for i, r in enumerate(load_yaml(path, "models", dated=True))]
    unique_ids(" + ".join(str(p) for p in paths), (m.id for m in models))
    return ModelCatalog(tuple(models))


def from_hf_config(config: Mapping[str, Any], model_id: str, source: str) -> DecoderProfile:
    """Build a decoder profile from a Hugging Face config.json (LLaMA/Mistral/Qwen or GPT-2 keys)."""
    rec = Record(source, f"'{model_id}'", dict(config))
    get = lambda *keys: next((config[k] for k in keys if config.get(k) is not None), None)
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


def load_model_file(path: str | Path) -> ModelProfile:
    """Load one model from a YAML profile (one record, or a `models:` list of one) or an HF config.json."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(path, "-", "-", f"cannot read the file ({exc.strerror})") from exc
    return parse_model_text(text, path.name, str(path))


def parse_model_text(text: str, filename: str, source: str) -> ModelProfile:
    """Parse an uploaded or local model description; raises DataFileError naming what is wrong."""
    if filename.endswith(".json"):
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFileError(source, "-", "-", f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(config, dict):
            raise DataFileError(source, "-", "-", "expected a JSON object (a Hugging Face config.json)")
        return from_hf_config(config, Path(filename).stem if filename != "config.json" else
                              str(config.get("_name_or_path") or config.get("model_type") or "custom"), source)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DataFileError(source, "-", "-", f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if isinstance(doc, dict) and isinstance(doc.get("models"), list) and len(doc["models"]) == 1:
        doc = doc["models"][0]
    if not isinstance(doc, dict):
        raise DataFileError(source, "-", "-", "expected one model profile as a YAML mapping")
    return parse_model(Record.of(source, 0, doc))
