"""A training job's model-parallel layout: tensor (with sequence) parallel, pipeline parallel (1F1B, or interleaved
over virtual stages) and context parallel degrees, as a user writes them ('tp=2,pp=4,v=2', 'auto', '' for none).

The data-parallel degree is what is left: GPUs / (tp x pp x cp); how the data-parallel ranks hold the training
states is the job's sharding (ddp, zero1, zero2, fsdp). The names follow Megatron-LM's arguments
(--tensor-model-parallel-size, --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage,
--context-parallel-size; docs: https://docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/, read
2026-11-27) and TorchTitan's (tensor_parallel_degree, pipeline_parallel_degree, context_parallel_degree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.base.safe_parse import shown

AUTO_LAYOUT = "auto"
# Degrees a user may ask for: 1,024 GPUs per job is the job's own bound (jobs.BOUNDS["gpus"])
MAX_DEGREE = 1024
MAX_LAYOUT_CHARS = 64  # 'tp=1024,pp=1024,cp=1024,v=1024' is 31: anything longer is not a layout
LAYOUT_KEYS = {"tp": "tp", "pp": "pp", "cp": "cp", "v": "vpp", "vpp": "vpp"}
_PART = re.compile(r"^(tp|pp|cp|vpp|v)=?(\d{1,5})$")


@dataclass(frozen=True)
class Layout:
    """tp: tensor-parallel degree (every layer's matrices split, with sequence parallel: Megatron-LM);
    pp: pipeline stages (the layers split into pp consecutive stages); vpp: virtual stages per GPU (interleaved 1F1B:
    each GPU holds vpp chunks of layers; 1 = plain 1F1B); cp: context-parallel degree (each sequence split into cp
    parts, ring attention exchanging K and V); auto: the planner picks the degrees (the others are then 1)."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    vpp: int = 1
    auto: bool = False

    @property
    def model_parallel(self) -> int:
        """GPUs one copy of the model runs on: tp x pp x cp."""
        return self.tp * self.pp * self.cp

    @property
    def splits(self) -> bool:
        """Whether the layout splits the model or its sequences at all (otherwise: data parallel / FSDP only)."""
        return self.model_parallel > 1

    def parts(self) -> tuple[str, ...]:
        """The kinds of model parallelism it uses, as runtimes declare them: among 'tp', 'pp', 'cp'."""
        return tuple(name for name, degree in (("tp", self.tp), ("pp", self.pp), ("cp", self.cp)) if degree > 1)

    def text(self) -> str:
        """The layout as parse_layout reads it back ('' for none, 'auto')."""
        if self.auto:
            return AUTO_LAYOUT
        parts = [f"{k}={v}" for k, v in (("tp", self.tp), ("pp", self.pp), ("cp", self.cp), ("v", self.vpp)) if v > 1]
        return ",".join(parts)

    def describe(self) -> str:
        """The layout in words: 'TP 2 (+SP) x PP 4 (interleaved, 2 virtual stages) x CP 2'; 'no model parallelism'."""
        if self.auto:
            return "auto (the planner picks)"
        parts = [f"TP {self.tp} (+SP)"] if self.tp > 1 else []
        if self.pp > 1:
            parts.append(f"PP {self.pp} (" + (f"interleaved 1F1B, {self.vpp} virtual stages per GPU)" if self.vpp > 1
                                              else "1F1B)"))
        parts += [f"CP {self.cp}"] if self.cp > 1 else []
        return " x ".join(parts) or "no model parallelism"


NO_LAYOUT = Layout()


def parse_layout(text: str) -> Layout:
    """A layout from text: '' or 'none' (no model parallelism), 'auto', or comma/space-separated parts 'tp=2', 'pp=4',
    'cp=2', 'v=2' (= is optional: 'tp2 pp4'), each at most once, each 1..MAX_DEGREE. ValueError naming the field
    'layout' and how to write it otherwise."""
    t = str(text).strip().lower()
    if len(t) > MAX_LAYOUT_CHARS:
        raise ValueError(f"layout: {len(t):,} characters; a layout is at most {MAX_LAYOUT_CHARS} "
                         "(e.g. tp=2,pp=4,cp=1,v=2)")
    if t in ("", "none", "1"):
        return NO_LAYOUT
    if t == AUTO_LAYOUT:
        return Layout(auto=True)
    degrees: dict[str, int] = {}
    for part in re.split(r"[,;\s]+", re.sub(r"\s*=\s*", "=", t)):
        if not part:
            continue
        found = _PART.match(part)
        if not found:
            raise ValueError(f"layout: {shown(part)} is not a degree; write tp=N, pp=N, cp=N or v=N separated by "
                             "commas (e.g. tp=2,pp=4), or auto")
        key, value = LAYOUT_KEYS[found.group(1)], int(found.group(2))
        if key in degrees:
            raise ValueError(f"layout: {found.group(1)} is given twice")
        if not 1 <= value <= MAX_DEGREE:
            raise ValueError(f"layout: {found.group(1)}={value} is outside 1..{MAX_DEGREE}")
        degrees[key] = value
    return Layout(**degrees)
