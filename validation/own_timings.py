"""Our own Hugging Face timings (validation/measured/*_hf-transformers.json) against the planner, one line a record.

An analysis of this project's own measurements, not part of the planner and not a validation row (they are ours, not
published): each record of `validation/measure_hf.py` becomes a row in measurements.yaml's form and is predicted with
the engine as it is (runtime pytorch-eager as tuned, SDPA). Decode uses the least disturbed run (`min_s`: the device
hosts' wall-clock noise reached 3x, measured/README.md) and counts the prompt's prefill, as generate() does; prefill
and training use the median of their ten runs. A file of workloads not yet timed (`measure_hf.py --dry-run`) gets the
planner's predictions alone, to be committed before the timings exist.

Run from the repository root: `python3 validation/own_timings.py FILE GPU_ID [FILE GPU_ID ...]`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the planner of this checkout, not an installed one

from planner.validation.measured import evaluate_row, load_measurements, predict_row  # noqa: E402

# measure_hf.py's model names -> the planner's profiles (the same published configurations).
PROFILE = {"llama": "llama-2-7b", "gpt2": "gpt2-124m", "bert": "bert-base-squad"}


def row_of(index: int, record: dict, gpu: str) -> dict:
    """One measure_hf record as a measurements.yaml row (bf16: autocast for training, bf16 weights otherwise)."""
    row = dict(id=f"own-{index}", gpu=gpu, gpus=1, model=PROFILE[record["model"]], framework="hf-transformers",
               precision="bf16", weight_bits=16, attention=record.get("attn_implementation", "sdpa"),
               source="this project's own timing", conditions="validation/measure_hf.py", regime=record["regime"],
               batch=record["batch"], prompt_tokens=record.get("prompt_tokens", 0),
               gen_tokens=record.get("gen_tokens", 0))
    if "median_s" not in record:  # a workload planned, not yet timed (measure_hf.py --dry-run): a prediction only
        metric = {"decode": "tokens_per_s", "prefill": "step_seconds"}.get(record["regime"], "samples_per_s")
        return dict(row, metric=metric, seq_len=record.get("seq_len"))
    if record["regime"] == "decode":
        return dict(row, metric="tokens_per_s", value=record["batch"] * record["gen_tokens"] / record["min_s"])
    if record["regime"] == "prefill":
        return dict(row, metric="step_seconds", value=record["median_s"])
    return dict(row, seq_len=record["seq_len"], metric="samples_per_s", value=record["batch"] / record["median_s"])


def compare(path: Path, gpu: str) -> list[str]:
    """Lines `model regime batch prompt gen metric measured planner error` for every record of one file."""
    records = json.loads(path.read_text())["records"]
    doc = {"schema_version": 1, "as_of": "2026-11-27", "rows": [row_of(i, r, gpu) for i, r in enumerate(records)]}
    planned = not any("value" in r for r in doc["rows"])
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump(doc, f)
        f.flush()
        rows = load_measurements(f.name, measured=not planned)
    lines = []
    for row in rows:
        head = (f"{row.model:16s} {row.regime:8s} b{row.batch:<3d} prompt {row.prompt_tokens:<5d} "
                f"gen {row.gen_tokens:<5d} {row.metric:14s}")
        if planned:
            lines.append(f"{head} planner {predict_row(row).predicted:10.4g}")
            continue
        result, _ = evaluate_row(row)
        lines.append(f"{head} measured {row.value:10.4g} planner {result.predicted:10.4g} "
                     f"error {result.error_pct:+6.1f} %")
    return lines


def main(argv: list[str]) -> int:
    if not argv or len(argv) % 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for path, gpu in zip(argv[::2], argv[1::2]):
        print(f"{path} on {gpu}")
        print("\n".join("  " + line for line in compare(Path(path), gpu)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
