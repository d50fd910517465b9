"""AccelMark's vLLM 0.7.3 (V0) rows re-predicted by today's planner, POST HOC (their values were entered after the
predictions were committed; the committed predictions stay the score): median |error| and bias per regime, then the
short-prompt TTFT rows' residual (measured - predicted, ms) beside the same machine's own decode TPOT, with their
rank correlation per model (a host-bound prefill follows the host CPU's speed, which no row states), and the host
CPU each run recorded (HOST_CPU, read after the values: POST HOC).

    python3 validation/accelmark_ttft.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation.measured import evaluate_row, load_measurements  # noqa: E402

SOURCE = "FreedomIntelligence/AccelMark"
SHORT_PROMPT = 1000  # tokens: the interactive suites' ShareGPT prompts, not suite D's 28.7k
# The host CPU of each single-GPU run of the short-prompt rows (suites A and F: one host per GPU), as its result.json
# records it (environment.cpu.model; FreedomIntelligence/AccelMark @5797fc42, results/verified/*_nvidia_vllm_47f5d58e_*,
# read 2026-11-27 after the values were entered). 'Intel Xeon @ 2.x GHz' is how a cloud VM names a CPU it hides.
HOST_CPU = {
    "h100-sxm": "Xeon Platinum 8481C (Sapphire Rapids)", "h200-sxm": "Xeon Platinum 8558 (Emerald Rapids)",
    "a100-sxm-40gb": "EPYC 7532 (Zen 2)", "a100-sxm-80gb": "EPYC 7742 (Zen 2)", "a800-sxm-80gb": "EPYC 7763 (Zen 3)",
    "rtx-3090": "Xeon Gold 6278C (Cascade Lake)", "rtx-4090": "Xeon Gold 6530 (Emerald Rapids)",
    "rtx-4000-ada": "Xeon Gold 6548Y+ (Emerald Rapids)", "rtx-6000-ada": "Xeon Gold 6548Y+ (Emerald Rapids)",
    "rtx-a6000": "Xeon Platinum 8368 (Ice Lake)", "l4": "Intel Xeon @ 2.20GHz (not named)",
    "t4": "Intel Xeon @ 2.00GHz (not named)",
}


def _ranks(values: list[float]) -> list[int]:
    order = sorted(values)
    return [order.index(v) for v in values]


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation of two equal-length lists without ties."""
    n = len(a)
    d2 = sum((x - y) ** 2 for x, y in zip(_ranks(a), _ranks(b)))
    return 1 - 6 * d2 / (n * (n * n - 1))


def main() -> None:
    rows = {r.id: r for r in load_measurements() if r.source.startswith(SOURCE)}
    by_regime: dict[str, list[tuple[float, float]]] = defaultdict(list)
    residual: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for rid, r in rows.items():
        res, _ = evaluate_row(r)
        if res.error_pct is None:
            continue
        by_regime[res.regime].append((abs(res.error_pct), res.error_pct))
        decode = rows.get(rid.replace("-prefill", "-decode"))
        if r.regime == "prefill" and r.gpus == 1 and r.prompt_tokens < SHORT_PROMPT and decode:
            ttft_ms = r.prompt_tokens / r.value * 1e3
            tpot_ms = (decode.gen_tokens / decode.value * 1e3 - ttft_ms) / (decode.gen_tokens - 1)
            residual[r.model].append((r.gpu, ttft_ms - r.prompt_tokens / res.predicted * 1e3, tpot_ms))
    for regime, errs in sorted(by_regime.items()):
        print(f"{regime:24s} n={len(errs):3d}  median |error| {statistics.median(a for a, _ in errs):6.1f} %  "
              f"bias {statistics.median(e for _, e in errs):+7.1f} %")
    for model, pts in sorted(residual.items()):
        rho = spearman([p[1] for p in pts], [p[2] for p in pts])
        print(f"\n{model}: TTFT residual vs the machine's own TPOT, Spearman {rho:.2f} ({len(pts)} GPUs)")
        for gpu, resid, tpot in sorted(pts, key=lambda p: p[2]):
            print(f"  {gpu:16s} residual {resid:6.1f} ms   TPOT {tpot:5.2f} ms   host {HOST_CPU.get(gpu, '?')}")


if __name__ == "__main__":
    main()
