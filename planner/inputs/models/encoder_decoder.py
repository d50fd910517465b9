"""Encoder-decoder transformers (T5, Whisper): an encoder stack run once over the input, and a decoder stack that
generates token by token, each layer attending causally to what it generated and across to the encoder's output.

The two stacks are decoder profiles (planner.inputs.models.decoder): the encoder with `encoder` set (bidirectional, no
KV cache, no LM head), the decoder causal with the model's LM head. Each decoder layer adds a cross-attention block:
Q and O over its own tokens, K and V over the encoder's output (computed once, at prefill, and cached), one norm.

Generation: prefill runs the encoder over the input (`prompt` tokens: T5's source, Whisper's 1,500 audio frames),
projects every decoder layer's cross K and V from it and runs the decoder over its first token. A decode step at
position p (the engine's count, prompt included) reads the self-attention cache of the p - prompt tokens generated so
far and the cross cache of the prompt's: p tokens' K and V per layer, as a decoder-only model's step at p, and
attends over as many keys; so the decoder's decode step, with the cross block's Q and O projections added, is the
step. The cache holds prompt (cross) + generated (self) tokens per layer: the decoder's KV cache at prompt + gen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from planner.base.schema import CachedHash, Record
from planner.base.units import BYTES_PER_GB
from planner.inputs.models.decoder import DecoderProfile, parse_decoder
from planner.inputs.precisions import PARTIAL_SCOPES
from planner.inputs.work import Collective, MemoryItem, OpGroup, Setup, forward_equivalents, training_gemms

# Kernels of one cross-attention block in eager PyTorch: norm, Q, K and V (once, at prefill), attention, O, residual add
CROSS_KERNELS = 6
FIELDS = ("id", "name", "kind", "source", "cross_check", "encoder", "decoder", "shared_embeddings", "front_params")


@dataclass(frozen=True, eq=True)
class EncoderDecoderProfile(CachedHash):
    """An encoder stack and a decoder stack with cross-attention (T5, Whisper)."""

    __hash__ = CachedHash.__hash__

    id: str
    name: str
    source: str
    enc: DecoderProfile  # encoder=True; its vocab rows are the encoder's input embedding
    dec: DecoderProfile  # causal, with the model's LM head
    shared_embeddings: bool = False  # T5: one table for the encoder's and the decoder's tokens (counted once)
    front_params: int = 0  # encoder input weights beyond its embedding rows (Whisper's second convolution)
    cross_check: str = ""
    kind: str = field(default="encoder-decoder", init=False)

    input_size_name = "tokens"
    can_generate = True
    counts_tokens = True

    # ------------------------------------------------------------ counts
    @property
    def cross_matmul_params(self) -> int:
        """One decoder layer's cross-attention matrices: Q, K, V, O over the hidden width."""
        return self.dec.attn_params

    @property
    def cross_other_params(self) -> int:
        """Its norm and (Whisper) the biases of Q, V and O."""
        d = self.dec
        norm = d.hidden * (2 if d.norm == "layernorm" else 1)
        return norm + ((d.q_dim + d.kv_dim + d.hidden) if d.bias else 0)

    @cached_property
    def params(self) -> int:
        shared = self.enc.vocab * self.enc.hidden if self.shared_embeddings else 0
        cross = self.dec.layers * (self.cross_matmul_params + self.cross_other_params)
        return self.enc.params - shared + self.dec.params + cross + self.front_params

    @property
    def active_params(self) -> int:
        return self.params

    @property
    def default_input_size(self) -> int:
        return self.enc.context

    @property
    def trained_context(self) -> int | None:
        return self.enc.context

    @property
    def attention_head_dim(self) -> int | None:
        return self.dec.head_dim

    @property
    def tensor_parallel_heads(self) -> int | None:
        return self.dec.kv_heads

    @property
    def tp_projections_per_gather(self) -> float:
        return self.dec.tp_projections_per_gather

    @property
    def quantizable_params(self) -> int:
        return self.enc.quantizable_params + self.dec.quantizable_params + self.dec.layers * self.cross_matmul_params

    def quantized_params(self, scope: str) -> int:
        """The stacks' own; cross-attention's matrices unless only experts or MLPs are quantized (it is neither)."""
        cross = 0 if scope in PARTIAL_SCOPES else self.dec.layers * self.cross_matmul_params
        return self.enc.quantized_params(scope) + self.dec.quantized_params(scope) + cross

    @property
    def shard_units(self) -> int:
        return self.enc.layers + self.dec.layers

    @property
    def shard_unit_params(self) -> int:
        return max(self.enc.layer_matmul_params, self.dec.layer_matmul_params + self.cross_matmul_params)

    @property
    def kernels_per_forward(self) -> float:
        return self.enc.kernels_per_forward + self.dec.kernels_per_forward + self.dec.layers * CROSS_KERNELS

    def check_size(self, size: int) -> None:
        """Formulas: any size runs (the encoder's context is a note)."""

    # ------------------------------------------------------------ work
    def _cross(self, s: Setup, batch: int, enc_tokens: int, dec_tokens: int, keys: float, what: str,
               passes: float = 1.0) -> OpGroup:
        """The decoder layers' cross-attention over `dec_tokens` new tokens each: Q and O over them, K and V over
        `enc_tokens` encoder tokens (0 in decode: cached), the attention over `keys` keys per new token (0 in decode:
        the decoder's attention group counts them), the cross cache written. x `passes` (training: the whole
        model's FLOPs and bytes, which train_layout.split_groups splits over tp; the GEMM shapes one GPU's)."""
        d, p, L = self.dec, s.precision, self.dec.layers
        tp = 1 if passes > 1 else s.tp  # the work's split; the GEMMs below are split by s.tp either way
        rows_q, rows_kv = batch * dec_tokens, batch * enc_tokens
        proj = 2.0 * L * (rows_q * 2 * d.hidden * d.q_dim + rows_kv * 2 * d.hidden * d.kv_dim) / tp
        attn = d.attn_flops_per_key() * L * batch * dec_tokens * keys / tp
        weight_bytes = p.outside_weight_bytes if p.quantized_weights in PARTIAL_SCOPES else p.weight_bytes
        weights = L * (2 * d.hidden * d.q_dim + (2 * d.hidden * d.kv_dim if enc_tokens else 0)) * weight_bytes / tp
        cache = rows_kv * L * 2 * d.kv_dim * s.kv_dtype.bytes / tp
        acts = (rows_q * 2 * d.q_dim + rows_kv * 2 * d.kv_dim) * L * p.act_bytes / tp
        gemms = ((rows_q, max(1, d.q_dim // s.tp), d.hidden, L), (rows_q, d.hidden, max(1, d.q_dim // s.tp), L),
                 *(((rows_kv, max(1, 2 * d.kv_dim // s.tp), d.hidden, L),) if rows_kv else ()))
        return OpGroup("cross-attention", (proj + attn) * passes, (weights + cache + acts) * passes, p.compute_path,
                       f"FLOPs = 2 x {L} decoder layers x (Q, O over {what} + K, V over {enc_tokens:,} encoder "
                       f"tokens) + 4 x heads x head_dim x {keys:,.0f} keys per token; bytes = Q, O"
                       f"{', K, V' if enc_tokens else ''} weights + the cross cache written + activations",
                       gemms=training_gemms(gemms, False) if passes > 1 else gemms)

    def _encoder_groups(self, groups: tuple[OpGroup, ...]) -> tuple[OpGroup, ...]:
        return tuple(g._replace(name=f"encoder {g.name}") for g in groups)

    def forward_work(self, s: Setup, batch: int, size: int) -> tuple[OpGroup, ...]:
        """One pass over `size` input tokens and `size` target tokens (teacher forcing, logits for every one)."""
        return (*self._encoder_groups(self.enc.forward_work(s, batch, size)), *self.dec.forward_work(s, batch, size),
                self._cross(s, batch, size, size, size, f"{size:,} decoder tokens"))

    def prefill_work(self, s: Setup, batch: int, prompt: int) -> tuple[OpGroup, ...]:
        """The encoder over the prompt, every decoder layer's cross K and V from it, the decoder's first token."""
        return (*self._encoder_groups(self.enc.forward_work(s, batch, prompt)), *self.dec.prefill_work(s, batch, 1),
                self._cross(s, batch, prompt, 1, prompt, "the first token"))

    def decode_work(self, s: Setup, batch: int) -> tuple[OpGroup, ...]:
        """The decoder's step at position p (self keys p - prompt + cross keys prompt = p: its attention group), the
        cross block's Q and O projections added."""
        return (*self.dec.decode_work(s, batch), self._cross(s, batch, 0, 1, 0, "the new token"))

    def train_work(self, s: Setup, batch: int, size: int, checkpointing: bool) -> tuple[OpGroup, ...]:
        fb = forward_equivalents(checkpointing)
        return (*self._encoder_groups(self.enc.train_work(s, batch, size, checkpointing)),
                *self.dec.train_work(s, batch, size, checkpointing),
                self._cross(s, batch, size, size, size, f"{size:,} decoder tokens", passes=fb))

    def context_parallel_comm(self, s: Setup, tokens: int) -> tuple[Collective, ...]:
        """Context parallel is modelled for decoders only."""
        return ()

    def tensor_parallel_comm(self, s: Setup, tokens: int, logits_rows: int,
                             rounds: int = 1) -> tuple[Collective, ...]:
        """The decoder's collectives, the encoder's (two all-reduces a layer) and one more per decoder layer after
        the cross block's O projection."""
        dec = self.dec.tensor_parallel_comm(s, tokens, logits_rows, rounds)
        if not dec:
            return ()
        per_layer = dec[0].count / (2 * self.dec.layers)
        extra = Collective(dec[0].kind, dec[0].message_bytes, per_layer * (2 * self.enc.layers + self.dec.layers))
        return (*dec, extra)

    # ------------------------------------------------------------ memory
    def _peak(self, items: tuple[MemoryItem, ...]) -> float:
        return sum(i.gb for i in items if i.name == "activations")

    def inference_memory(self, s: Setup, batch: int, size: int) -> tuple[MemoryItem, ...]:
        enc = self.enc.inference_memory(s, batch, size)
        dec = self.dec.inference_memory(s, batch, size)
        gb = max(self._peak(enc), self._peak(dec))  # one stack runs at a time
        return (MemoryItem("activations", gb, "the larger of the encoder's and the decoder's peak (one runs at a "
                                              "time)"), *(i for i in dec if i.name != "activations"))

    def generate_memory(self, s: Setup, batch: int, prompt: int, gen: int) -> tuple[MemoryItem, ...]:
        """The decoder's items at prompt + gen tokens (cross cache of the prompt + self cache of what it generates),
        the encoder's activations over the prompt if larger."""
        dec = self.dec.generate_memory(s, batch, prompt, gen)
        enc = self._peak(self.enc.inference_memory(s, batch, prompt))
        return tuple(i._replace(gb=max(i.gb, enc)) if i.name == "activations" else i for i in dec)

    def train_logits_bytes(self, batch: int, size: int) -> float:
        return self.dec.train_logits_bytes(batch, size)

    def train_activation_memory(self, s: Setup, batch: int, size: int, checkpointing: bool) -> MemoryItem:
        enc = self.enc.train_activation_memory(s, batch, size, checkpointing)
        dec = self.dec.train_activation_memory(s, batch, size, checkpointing)
        cross = (batch * size * self.dec.layers * 2 * (self.dec.q_dim + self.dec.kv_dim) * s.precision.act_bytes
                 / BYTES_PER_GB)
        return MemoryItem("activations", enc.gb + dec.gb + cross,
                          "encoder's + decoder's saved activations + the cross blocks' Q, K, V and output")

    # ------------------------------------------------------------ words
    def architecture(self) -> dict[str, Any] | None:
        return None

    def describe(self) -> str:
        return (f"encoder-decoder · encoder {self.enc.layers} layers · decoder {self.dec.layers} layers with "
                f"cross-attention · hidden {self.dec.hidden} · input up to {self.enc.context:,} · output up to "
                f"{self.dec.context:,}")

    def listing(self) -> dict[str, int | None]:
        return {"layers": self.enc.layers + self.dec.layers, "hidden": self.dec.hidden, "context": self.enc.context}


def parse_encoder_decoder(rec: Record) -> EncoderDecoderProfile:
    """A record with `encoder:` and `decoder:` decoder records (the encoder's with encoder: true)."""
    rec.check_keys(FIELDS)
    stacks = {}
    for part in ("encoder", "decoder"):
        sub = rec.raw(part)
        if not isinstance(sub, dict):
            raise rec.fail(part, "expected a mapping: the stack's decoder-profile fields")
        data = {"id": f"{rec.text('id')}-{part}", "name": f"{rec.text('name')} ({part})", "kind": "decoder",
                "source": rec.text("source"), **sub}
        stacks[part] = parse_decoder(Record(rec.path, f"{rec.label} {part}", data))
    if not stacks["encoder"].encoder or stacks["decoder"].encoder:
        raise rec.fail("encoder", "the encoder stack says encoder: true and the decoder stack does not")
    return EncoderDecoderProfile(
        id=rec.text("id"), name=rec.text("name"), source=rec.text("source"), enc=stacks["encoder"],
        dec=stacks["decoder"], shared_embeddings=rec.flag("shared_embeddings", default=False),
        front_params=int(rec.number("front_params", required=False, lo=0, hi=10**12, integer=True) or 0),
        cross_check=rec.text("cross_check", required=False) or "")
