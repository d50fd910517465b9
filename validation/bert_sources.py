"""BERT-large SQuAD fine-tuning (run_squad.py --fp16, apex amp O2) on one GPU: every published step time of the two
sources beside the planner's, and what a fixed per-step cost would have to be (validation/REPORT.md 'Two sources of
one script' quotes it). An analysis of published figures, not part of the planner.

Run: python3 validation/bert_sources.py

Step times are milliseconds per optimizer step at batch B. Lambda's are steady state, read from its DLL logs: the
timestamps of 'Training Iteration: 51' and '101' (50 steps apart), so the first step and the 101st-for-100 count
of its e2e figure are out. DeepLearningExamples' are B / the README's sequences/s (max_steps -1: the whole two
epochs, run_squad.py's `len(train_features) * num_train_epochs / time_to_train`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from planner.validation.measured import load_measurements, predict_row

LAMBDA = "lambdal/deeplearning-benchmark @aa5addb6 pytorch/results/{}/PyTorch_bert_large_squad_FP16/{}"
DLE = "NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/BERT/README.md @{}, table '{}'"
TEMPLATE_ROW = {"a100": "dle-bert-large-fp16-a100sxm80-x1-squad384",  # the row whose GPU and batch are swapped
                "h100": "dle-bert-large-fp16-a100sxm80-x1-squad384",
                "v100": "dle-bert-large-fp16-v100sxm32-x1-squad384"}


@dataclass(frozen=True)
class Point:
    """One published single-GPU configuration: its step time in ms at `batch` sequences of 384 tokens."""
    label: str
    gpu: str
    batch: int
    step_ms: float
    container: str
    source: str


POINTS = (
    Point("Lambda A100_SXM4 (2020)", "a100-sxm-40gb", 32, 285.4, "build 16972326",
          LAMBDA.format("A100_SXM4", "04-11-2020_21-22-32.txt")),
    Point("Lambda A100_p4 (AWS p4d, 2020)", "a100-sxm-40gb", 32, 283.1, "build 16972326",
          LAMBDA.format("A100_p4", "05-11-2020_20-56-24.txt")),
    Point("Lambda A100_PCIe (2020)", "a100-pcie-40gb", 32, 336.4, "build 16972326",
          LAMBDA.format("A100_PCIe", "31-10-2020_17-22-26.txt")),
    Point("DLE DGX A100 40GB (20.06)", "a100-sxm-40gb", 32, 32 / 116 * 1e3, "pytorch:20.06-py3",
          DLE.format("f8b3a63f", "Fine-tuning NVIDIA DGX A100 (8x A100 40GB)', row 1, mixed precision 116")),
    Point("DLE DGX A100 80GB (21.11)", "a100-sxm-80gb", 32, 32 / 110.5 * 1e3, "pytorch:21.11-py3",
          DLE.format("a07d20a1", "Fine-tuning NVIDIA DGX A100 (8x A100 80GB)', row 1, mixed precision 110.5")),
    Point("Lambda A100_80GB_SXM4 (2021)", "a100-sxm-80gb", 64, 494.9, "build 21060478",
          LAMBDA.format("A100_80GB_SXM4", "26-11-2021_12-41-20.txt")),
    Point("Lambda A100_80GB_PCIe (2021)", "a100-pcie-80gb", 64, 537.7, "build 21060478",
          LAMBDA.format("A100_80GB_PCIe", "09-12-2021_15-59-39.txt")),
    Point("Lambda A100_40GB_SXM4_v1", "a100-sxm-40gb", 48, 351.4, "build 44877844",
          LAMBDA.format("A100_40GB_SXM4_v1", "19-11-2022_07-15-21.txt")),
    Point("Lambda A100_80GB_SXM4_v1 (the row)", "a100-sxm-80gb", 112, 719.7, "build 44877844",
          LAMBDA.format("A100_80GB_SXM4_v1", "19-11-2022_18-45-37.txt")),
    Point("Lambda A100_40GB_PCIe_v1", "a100-pcie-40gb", 48, 401.1, "build 46164382",
          LAMBDA.format("LambdaCloud_A100_40GB_PCIe_v1", "14-12-2022_22-38-08.txt")),
    Point("Lambda A100_80GB_PCIe_v1", "a100-pcie-80gb", 112, 788.8, "build 46164382",
          LAMBDA.format("A100_80GB_PCIe_v1", "14-12-2022_22-40-13.txt")),
    Point("Lambda H100_80GB_SXM5_v1", "h100-sxm", 112, 353.9, "build 46164382",
          LAMBDA.format("H100_80GB_SXM5_v1", "14-02-2023_05-22-57.txt")),
    # Lambda Cloud's V100 16 GB, taken as SXM2 (900 GB/s as the PCIe card)
    Point("Lambda V100_16GB_v1", "v100-sxm2-16gb", 16, 270.2, "build 46164382",
          LAMBDA.format("LambdaCloud_V100_16GB_v1", "16-12-2022_02-59-50.txt")),
    Point("DLE DGX-1 V100 32G (21.11)", "v100-sxm2-32gb", 16, 16 / 52 * 1e3, "pytorch:21.11-py3",
          DLE.format("a07d20a1", "Fine-tuning NVIDIA DGX-1 With 32G', row 1, mixed precision 52")),
)

# Pairs run in one container on the same chip at two batches (memory size, bandwidth and power differ: the planner's
# ratio of the two GPUs' per-sequence times at one batch carries one to the other).
SAME_CONTAINER = (("Lambda A100_40GB_SXM4_v1", "Lambda A100_80GB_SXM4_v1 (the row)"),
                  ("Lambda A100_40GB_PCIe_v1", "Lambda A100_80GB_PCIe_v1"))


def planner_step_ms(gpu: str, batch: int) -> float:
    """The committed planner's step time (ms) for BERT-large SQuAD, apex O2, 384 tokens, `batch` on one `gpu`."""
    rows = {r.id: r for r in load_measurements()}
    family = next(k for k in TEMPLATE_ROW if gpu.startswith(k))
    row = replace(rows[TEMPLATE_ROW[family]], gpu=gpu, batch=batch, micro_batch=batch)
    return batch / predict_row(row).predicted * 1e3


def fixed_cost_ms(small: Point, large: Point) -> tuple[float, float]:
    """(F, c) with step = F + B x c, the small-batch GPU's c scaled by the planner's per-sequence ratio of the two
    GPUs at the small batch (the 40 GB cards hold no more): what a per-step cost independent of the batch would have
    to be for both to hold."""
    ratio = planner_step_ms(small.gpu, small.batch) / planner_step_ms(large.gpu, small.batch)
    c = (large.step_ms - small.step_ms) / (large.batch - small.batch * ratio)
    return large.step_ms - large.batch * c, c


def main() -> None:
    print(f"{'configuration':38s} {'gpu':15s} {'B':>4s} {'container':18s} {'step ms':>8s} {'ms/seq':>7s} "
          f"{'planner':>8s} {'planner/measured':>16s}")
    for p in POINTS:
        pred = planner_step_ms(p.gpu, p.batch)
        print(f"{p.label:38s} {p.gpu:15s} {p.batch:4d} {p.container:18s} {p.step_ms:8.1f} {p.step_ms / p.batch:7.2f} "
              f"{pred:8.1f} {pred / p.step_ms:16.3f}")
    by_label = {p.label: p for p in POINTS}
    print("\nsame container, two batches: the per-step cost F (ms) both points imply, and c (ms a sequence)")
    for a, b in SAME_CONTAINER:
        f, c = fixed_cost_ms(by_label[a], by_label[b])
        print(f"  {a} B={by_label[a].batch} / {b} B={by_label[b].batch}: F = {f:6.1f} ms, c = {c:5.2f} ms")


if __name__ == "__main__":
    main()
