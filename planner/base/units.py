"""Units and physical constants used across the planner; each number lives here once, with its source."""

BYTES_PER_GB = 1e9  # decimal gigabyte (SI): how bandwidths, memory use and tables are stated
BYTES_PER_GIB = 2**30  # gibibyte: GPU memory is built in powers of two ('24 GB' on a card is 24 GiB)
FP32_BYTES = 4  # IEEE 754 single precision: master weights, gradients, optimizer states, logits
SECONDS_PER_HOUR = 3600.0
FLOPS_PER_TFLOP = 1e12


def gib_to_gb(gib: float) -> float:
    """GiB -> decimal GB (x 1.0737)."""
    return gib * BYTES_PER_GIB / BYTES_PER_GB
