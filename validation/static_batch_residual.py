"""What a static batch's whole generate() lacks, per forward step, and which rows beat the weight-streaming floor.

An analysis of validation rows, POST HOC (issue 37, static batches with short outputs), not part of the planner:
nothing here is read by the engine. For every row whose id starts with one of the given prefixes (default: round
5's three static-batch sources, Azure's TensorRT-LLM Python-session rows, NeMo's Llama-2 TensorRT-LLM table and
AMD's ROCm vLLM latency tables), with the values estimates use (data/runtimes_tuned.yaml):

    seconds of the generate() = step_seconds as given, or batch x output tokens / tokens_per_s
    residual per step = (measured seconds - predicted seconds) / output tokens

(a generate() of g output tokens runs g forward steps: the context step that yields the first token and g - 1
generation steps), i.e. what each forward step would have to cost more if the whole miss were a fixed per-step
cost. Each (source family, model, GPU, GPU count, prompt) group's residuals are fitted as a + b x batch (least
squares), to show whether the miss is a fixed per-step cost (a) or grows with the batch (b: per-sequence work, or
the context phase's work).

The floor: a decode step reads every weight once, so the g - 1 generation steps take at least
(g - 1) x params x weight_bits / 8 / (GPUs x datasheet bandwidth) seconds; a row measured below it cannot have run
the conditions it states (its precision or lengths differ), and is flagged 'below floor'.

Run: python3 validation/static_batch_residual.py [row id prefix ...]
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import load_measurements, predict_row, row_gpu, validation_models  # noqa: E402

DEFAULT_PREFIXES = ("azure-trtllm-", "nemo-llama2-", "rocmvllm")


def generate_seconds(metric: str, value: float, batch: int, gen_tokens: int) -> float:
    """Seconds of one generate() of the batch: the value itself for step_seconds, else batch x output tokens over a
    tokens_per_s value (generated tokens per second summed over the batch, prefill included)."""
    if metric == "step_seconds":
        return value
    if metric == "tokens_per_s":
        return batch * gen_tokens / value
    raise ValueError(f"metric {metric!r}: only step_seconds and tokens_per_s rows are whole generate() times")


def residual_ms_per_step(measured_s: float, predicted_s: float, gen_tokens: int) -> float:
    """Milliseconds each of the generate()'s forward steps (one per output token) lacks: the miss spread evenly."""
    return (measured_s - predicted_s) / gen_tokens * 1e3


def weight_floor_s(params: float, weight_bits: float, gen_tokens: int, gpus: int, mem_bw_gbps: float) -> float:
    """Seconds the gen_tokens - 1 generation steps take at least: every weight read once a step, the GPUs' datasheet
    bandwidth all used (the context step and the KV cache not counted: a lower bound)."""
    return (gen_tokens - 1) * params * weight_bits / 8 / (gpus * mem_bw_gbps * 1e9)


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(a, b) of the least-squares line y = a + b x; b = 0 and a = mean(y) when every x is the same."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if not sxx:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def family(row_id: str) -> str:
    """The row's source family and version: the id up to the model (e.g. 'rocmvllm0100', 'azure-trtllm')."""
    for prefix in DEFAULT_PREFIXES:
        if row_id.startswith(prefix):
            return row_id.split("-llama")[0].split("-mistral")[0] if prefix == "rocmvllm" else prefix.rstrip("-")
    return row_id.split("-")[0]


def main(prefixes: tuple[str, ...]) -> None:
    catalog, models = load_catalog(), validation_models()
    groups: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    print(f"{'row':62s} {'meas s':>9s} {'pred s':>9s} {'ms/step':>8s} {'floor s':>8s}")
    for row in load_measurements():
        if not row.id.startswith(prefixes):
            continue
        predicted = predict_row(row, catalog, models).predicted
        meas = generate_seconds(row.metric, row.value, row.batch, row.gen_tokens)
        pred = generate_seconds(row.metric, predicted, row.batch, row.gen_tokens)
        per_step = residual_ms_per_step(meas, pred, row.gen_tokens)
        floor = weight_floor_s(models.get(row.model).params, row.weight_bits, row.gen_tokens, row.gpus,
                               row_gpu(row, catalog).mem_bw_gbps)
        flag = "  below floor" if meas < floor else ""
        print(f"{row.id:62s} {meas:9.4f} {pred:9.4f} {per_step:8.2f} {floor:8.4f}{flag}")
        if not flag:
            key = (family(row.id), row.model, row.gpu, f"x{row.gpus}", f"p{row.prompt_tokens}")
            groups[key].append((row.batch, per_step))
    print("\nresidual ms per step = a + b x batch, per group (rows below the floor left out)")
    for key in sorted(groups, key=str):
        xs, ys = zip(*groups[key])
        a, b = fit_line(list(xs), list(ys))
        print(f"{' '.join(map(str, key)):62s} n={len(xs):2d} a={a:7.2f} ms  b={b * 1e3:7.1f} us/seq")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or DEFAULT_PREFIXES)
