"""The host CPUs of serving sources' machines, where a source names them, as a row's `host_speed`
(planner/engine/host_speed.py): a PassMark PerformanceTest 11 single-thread rating measured by Spare Cores'
inspector (SpareCores/sc-inspector-data @804d3c71dda, data/<vendor>/<server>/passmark/stdout, CPU_SINGLETHREAD)
over the reference hosts' rating (validation/sparecores_hosts.py: the mean of its Sapphire Rapids H100 and Zen 3 A100
servers' family means). Read 2026-11-28, after the rows' values were seen: the speeds are entered post hoc in
validation/serving/posthoc.yaml, one per machine, none fitted to the rows.

- Subrahmanyam2305/LLM-serve: an AWS g5.xlarge (its README, 'Hardware Tested'), AMD EPYC 7R32; Spare Cores measured
  that very instance type.
- LambdaLabsML/vllm-benchmark, 8x A100-SXM4-80GB (Lambda Cloud gpu_8x_a100_80gb_sxm4, 240 vCPUs): a Zen 3 'Milan'
  64-core EPYC either way the sources name it. Lambda's own Hyperplane-A100 servers: 2x EPYC 7763
  (lambdalabs.com/blog/tesla-a100-server-total-cost-of-ownership); users of Lambda Cloud A100 instances print an
  EPYC 7J13 (gpu_1x_a100_sxm4, sebastiaagramunt's 'Nvidia-GPU Performance' post, 2025-07; A100-SXM4-40GB,
  an inference-lab qualification record of 2026-08-02), and an 8x A100 80GB VM of exactly Lambda's shape (240
  single-thread vCPUs, 2 NUMA nodes) prints 'AMD EPYC 7J13 64-Core Processor' (a StartHack 2024 README). Spare Cores
  has no 7J13; it measured the 7763 on 131 Azure servers (median 2,394) and the reference's own Zen 3 A100 servers
  (EPYC 7V13, mean 2,431). The family mean is used: host_speed 0.90 (0.84-0.96 over the 7763 servers' spread).
- LambdaLabsML/vllm-benchmark, 8x H100-SXM (Lambda Cloud gpu_8x_h100_sxm5, 208 vCPUs): 2x Xeon Platinum 8480+
  'Sapphire Rapids' (Lambda's MLPerf system description of its H100 cloud nodes, LambdaLabsML/mlcommon-lambda-v4.1
  systems/lambda_1cc_n1_H100-SXM-80GB.json, 'Available cloud', 52 cores a socket exposed: 2 x 52 x 2 = 208 vCPUs,
  the on-demand shape). Spare Cores has no 8480+; the reference's own Sapphire Rapids H100 servers (Xeon Platinum
  8481C, mean 2,952) give host_speed 1.10 (Sapphire Rapids Platinum parts there: medians 2,479-3,288).

`python3 validation/serving_hosts.py` prints each machine's host_speed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparecores_hosts import (PASSMARK_SINGLE_THREAD, SAPPHIRE_RAPIDS_REFERENCE, ZEN3_REFERENCE,  # noqa: E402
                              family_mean, reference_rating)

# machine: (the CPU its sources name, the rating used, where that rating comes from)
MACHINES = {
    "aws/g5.xlarge (Subrahmanyam2305/LLM-serve)":
        ("AMD EPYC 7R32 (Zen 2)", PASSMARK_SINGLE_THREAD["aws/g5.xlarge"][1], "measured on aws/g5.xlarge"),
    "Lambda 8x A100-SXM4-80GB (LambdaLabsML/vllm-benchmark)":
        ("AMD EPYC 7J13 / 7763 (Zen 3 Milan, 64 cores)", family_mean(ZEN3_REFERENCE),
         "the reference's Zen 3 A100 servers (EPYC 7V13)"),
    "Lambda 8x H100-SXM (LambdaLabsML/vllm-benchmark)":
        ("Intel Xeon Platinum 8480+ (Sapphire Rapids)", family_mean(SAPPHIRE_RAPIDS_REFERENCE),
         "the reference's Sapphire Rapids H100 servers (Xeon Platinum 8481C)"),
}


def machine_speed(machine: str) -> float:
    """`machine`'s host_speed: its rating over the reference's, rounded to 0.01."""
    return round(MACHINES[machine][1] / reference_rating(), 2)


def main() -> None:
    print(f"reference rating {reference_rating():,.1f}")
    for machine, (cpu, rating, where) in MACHINES.items():
        print(f"{machine:56s} {cpu:44s} {rating:8,.1f} ({where})  host_speed {machine_speed(machine):.2f}")


if __name__ == "__main__":
    main()
