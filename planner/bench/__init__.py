"""Local torch benchmark: `python -m planner.bench [--quick] [--device auto|cuda|mps|cpu] [--out FILE]`.

Measures this machine's NVIDIA GPU (CUDA events), Apple GPU (MPS) or CPU (torch.utils.benchmark; one torch thread and
process CPU time by default) and writes one JSON result that planner.calibration.fit fits (`python -m planner
estimate --calibration FILE`, or the app's upload). `--model MODULE:FACTORY --input NAME=SIZES` measures your own
model instead of the built-in decoders (planner.bench.user_model). This package imports torch; the core does not.

Result document (schema_version 2, bench_version 1; planner.inputs.bench_result.parse_result validates it; the
field-by-field table is in docs/SCHEMAS.md):
  kind: "planner-bench-result", schema_version, bench_version, quick, elapsed_s, torch_compile (status text)
  environment: device_type (cuda|mps|cpu), device_name (torch's name; a CUDA device must be in data/gpus.yaml),
      compute_capability, memory_gb (decimal GB), torch_version, cuda_version, hip_version, cpu_model, cpu_threads,
      torch_threads, float32_matmul_precision, clock (wall|cpu|device), load_average, date (ISO, UTC), platform
  micro: memory_bandwidth {tensor_mib, bytes_moved, gbps, timing, passes_gbps}
         matmul {fp32|tf32|fp16|bf16: {status, best_tflops, sizes: [{n, tflops, timing}]} or {status, reason}}
         launch_overhead {ops_per_call, us_per_op, timing}
  workloads: [{model (a planner decoder profile), workload (decode|forward|train), batch, position (decode) or
      seq, precision, compiled, runtime, status (ok|unavailable), measured_s or reason, compile_s, timing}]
      (the anchors first: launch-bound and bandwidth-bound decode points that separate the fitted factors)
  model_runs (--model): [{factory, args, input_size_name, precision, batch (1), profile (the traced profile
      document), trace_s, points: [{workload (forward|train), size, status, measured_s or reason, timing}]}]
Times are in seconds: the median over runs within a round, the least-disturbed of several interleaved rounds,
warm-up runs excluded.
"""

from planner.inputs.bench_result import BENCH_VERSION, MAX_RESULT_BYTES, RESULT_SCHEMA_VERSION

__all__ = ["BENCH_VERSION", "MAX_RESULT_BYTES", "RESULT_SCHEMA_VERSION"]
