"""Model profiles: one protocol (ModelProfile) that every kind implements, the presets, and model files.

Kinds: 'decoder' (decoder.py: transformers derived from their architecture, their layers of several kinds: latent
attention, sliding windows, dense and mixture-of-experts MLPs, state-space mixers), 'encoder' (the same class run
bidirectionally, without generation: BERT, ViT), 'encoder-decoder' (encoder_decoder.py: two such stacks with
cross-attention: T5, Whisper), 'generic' (generic.py: formulas
in the input size L) and 'traced' (traced.py: growth laws measured from PyTorch code by `planner profile`). A new
kind is one new module with one class implementing ModelProfile, registered in KINDS; the engine asks a profile
what it does and never which class it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from collections.abc import Callable

from planner import DATA_DIR
from planner.base.safe_parse import ParseError, TextError, check_text_values, load_json_text
from planner.base.schema import DataFileError, Record, load_yaml, parse_yaml, read_file_bytes, resolve_name, unique_ids
from planner.inputs.models.decoder import DecoderProfile, parse_decoder
from planner.inputs.models.encoder_decoder import EncoderDecoderProfile, parse_encoder_decoder
from planner.inputs.models.generic import GenericProfile, parse_generic
from planner.inputs.models.hf_config import from_hf_config
from planner.inputs.models.traced import TracedProfile, parse_traced
from planner.inputs.work import Collective, MemoryItem, OpGroup, Setup

MODEL_FILES = (DATA_DIR / "models.yaml", DATA_DIR / "models_generic.yaml")
MAX_NAME_CHARS = 80  # a model's id or name as shown on the page and in links
KINDS: dict[str, Callable[[Record], ModelProfile]] = {"decoder": parse_decoder, "encoder": parse_decoder,
                                                      "encoder-decoder": parse_encoder_decoder,
                                                      "generic": parse_generic, "traced": parse_traced}

__all__ = ["DecoderProfile", "EncoderDecoderProfile", "GenericProfile", "KINDS", "MODEL_FILES", "ModelCatalog",
           "ModelProfile", "TracedProfile", "from_hf_config", "load_model_file", "load_models", "parse_decoder",
           "parse_model", "parse_model_text"]


@runtime_checkable
class ModelProfile(Protocol):
    """What the engine needs of a model. Sizes are tokens per sequence or the profile's L; bytes are per GPU."""

    id: str
    name: str
    kind: str
    source: str
    input_size_name: str  # what the input size counts ('tokens', 'L', ...)
    can_generate: bool  # autoregressive decoding with a KV cache (the 'generate' job)
    counts_tokens: bool  # throughput is stated in tokens/s
    cross_check: str  # where the profile disagrees with what its source reports, and why, in a sentence ('': none)

    @property
    def params(self) -> int: ...  # all of them: what memory holds (every expert of a mixture of experts)
    @property
    def active_params(self) -> int: ...  # those one token's forward pass uses (its top-k experts); = params if dense
    @property
    def default_input_size(self) -> int: ...
    @property
    def trained_context(self) -> int | None: ...  # longest input it was trained for (None: no limit modelled)
    @property
    def attention_head_dim(self) -> int | None: ...  # per-head width attention kernels see (None: not known)
    @property
    def tensor_parallel_heads(self) -> int | None: ...  # units tensor parallel splits; None: no TP modelled
    @property
    def tp_projections_per_gather(self) -> float: ...  # column-parallel matmuls reading one TP-gathered input (mean)
    @property
    def quantizable_params(self) -> int: ...  # weights a quantized precision stores at its own bytes (the rest 16-bit)
    # those of them a precision of scope `scope` (Precision.quantized_weights: 'all', 'layers', 'experts') quantizes
    def quantized_params(self, scope: str) -> int: ...
    @property
    def shard_units(self) -> int: ...  # blocks FSDP gathers one at a time (collectives per pass = 3 x this)
    @property
    def shard_unit_params(self) -> int: ...  # parameters of one such block
    @property
    def kernels_per_forward(self) -> float: ...  # launches of one forward pass, fused-block units (x runtime factor)

    def check_size(self, size: int) -> None: ...  # ValueError naming the field when the model can't run at `size`
    # The work methods return op groups whose matmul groups carry their GEMM shapes (OpGroup.gemms: M = batch x
    # tokens of the step, N and K from the weights; training adds the backward transposes, work.training_gemms, and
    # lists one GPU's shapes under s's layout: M / cp, tensor parallel's split N or K / tp, while its FLOPs and bytes
    # stay the whole model's).
    # A kind that cannot know its shapes (generic formulas, traces) leaves gemms empty: the ceiling applies unshaped.
    def forward_work(self, s: Setup, batch: int, size: int) -> tuple[OpGroup, ...]: ...
    def train_work(self, s: Setup, batch: int, size: int, checkpointing: bool) -> tuple[OpGroup, ...]: ...
    def prefill_work(self, s: Setup, batch: int, prompt: int) -> tuple[OpGroup, ...]: ...
    def decode_work(self, s: Setup, batch: int) -> tuple[OpGroup, ...]: ...
    # the collectives of one step over `tokens` rows in `rounds` passes (prefill chunks) with `logits_rows` logits rows;
    # () when the kind models no tensor-parallel split
    def tensor_parallel_comm(self, s: Setup, tokens: int, logits_rows: int,
                             rounds: int = 1) -> tuple[Collective, ...]: ...
    # context parallel's exchange in one forward over `tokens` rows (ring attention: each layer's K and V gathered
    # from the other ranks); () when the kind models no context-parallel split
    def context_parallel_comm(self, s: Setup, tokens: int) -> tuple[Collective, ...]: ...
    def inference_memory(self, s: Setup, batch: int, size: int) -> tuple[MemoryItem, ...]: ...  # beside weights
    def generate_memory(self, s: Setup, batch: int, prompt: int, gen: int) -> tuple[MemoryItem, ...]: ...
    def train_activation_memory(self, s: Setup, batch: int, size: int, checkpointing: bool) -> MemoryItem: ...
    # bytes of train_activation_memory that the loss keeps (the logits and their gradient), held only where the loss
    # runs (a pipeline's last stage); 0.0 where the kind does not tell them apart
    def train_logits_bytes(self, batch: int, size: int) -> float: ...
    def architecture(self) -> dict[str, Any] | None: ...  # editable fields (decoders), None: not editable
    def describe(self) -> str: ...  # one line for the page
    def listing(self) -> dict[str, int | None]: ...  # layers, hidden, context for `planner models`


def parse_model(rec: Record) -> ModelProfile:
    kind = rec.text("kind", choices=tuple(KINDS))
    return KINDS[kind](rec)


@dataclass(frozen=True)
class ModelCatalog:
    """The model presets, found by id or name (ignoring case, spaces and hyphens)."""

    models: tuple[ModelProfile, ...]

    def get(self, name: str) -> ModelProfile:
        """A preset by id, name or family ('gpt2' -> gpt2-124m when it is the only GPT-2); see resolve_name."""
        for m in self.models:  # an id as stored: no name matching
            if m.id == name:
                return m
        key = resolve_name(name, ((m.id, (m.name,)) for m in self.models), "model")
        return next(m for m in self.models if m.id == key)


@lru_cache(maxsize=8)
def load_models(paths: tuple[str | Path, ...] = MODEL_FILES) -> ModelCatalog:
    """Load and validate the model presets from every file in `paths` (a missing one is a DataFileError naming it)."""
    models: list[ModelProfile] = []
    for path in paths:
        models += [parse_model(Record.of(path, i, r)) for i, r in enumerate(load_yaml(path, "models", dated=True))]
    unique_ids(" + ".join(str(p) for p in paths), (m.id for m in models))
    return ModelCatalog(tuple(models))


def load_model_file(path: str | Path) -> ModelProfile:
    """Load one model from a YAML profile (one record, or a `models:` list of one) or an HF config.json.
    Only a regular file of at most MAX_TEXT_BYTES is read (schema.read_file_bytes: no device, pipe or directory)."""
    path = Path(path)
    data = read_file_bytes(path, "model YAML or config.json")
    return parse_model_text(data.decode("utf-8", errors="replace"), path.name, str(path))


def _hf_id(config: dict, filename: str) -> str:
    if filename != "config.json":
        return Path(filename).stem
    name = config.get("_name_or_path") or config.get("model_type") or "custom"
    return name if isinstance(name, str) and name.strip() else "custom"


def parse_model_text(text: str, filename: str, source: str) -> ModelProfile:
    """Parse an uploaded or local model description; raises DataFileError naming what is wrong."""
    if filename.endswith(".json"):
        try:
            config = load_json_text(text, source)
            check_text_values(config, source)
        except TextError as exc:
            raise DataFileError(source, "-", exc.field, exc.problem) from None
        except json.JSONDecodeError as exc:
            raise DataFileError(source, "-", "-", f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except ParseError as exc:
            raise DataFileError(source, "-", "-", str(exc).removeprefix(f"{source} ")) from None
        if not isinstance(config, dict):
            raise DataFileError(source, "-", "-", "expected a JSON object (a Hugging Face config.json)")
        return from_hf_config(config, _hf_id(config, filename)[:MAX_NAME_CHARS], source)
    doc = parse_yaml(text, source)
    if isinstance(doc, dict) and "kind" not in doc and ("model_type" in doc or "architectures" in doc):
        # a config.json carried as text (a link or an upload of a model the page's form can't edit): JSON is YAML
        return from_hf_config(doc, _hf_id(doc, "config.json")[:MAX_NAME_CHARS], source)
    if isinstance(doc, dict) and isinstance(doc.get("models"), list) and len(doc["models"]) == 1:
        doc = doc["models"][0]
    if not isinstance(doc, dict):
        raise DataFileError(source, "-", "-", "expected one model profile as a YAML mapping")
    return parse_model(Record.of(source, 0, doc))
