"""A DRAM fraction is tuned only on rows whose time it sets near its prior (measured.movers): a batch-1 decode row
whose token the host's dispatch sets at eager PyTorch's priors measures the host, and stays out of the GDDR fraction,
while a training row whose step the DRAM traffic sets stays in. Bounds derived by hand below."""

import pytest

from planner.inputs.catalog import load_catalog
from planner.validation.measured import (DRAM_PROBE_BELOW_PRIOR, adjust_for, evaluate_row, load_measurements, movers,
                                         prior_params)

GDDR = "mem_bw_efficiency.gddr"
HOST_BOUND = "bnb-llama31-8b-bf16-rtx4090-b1"  # bitsandbytes' README, RTX 4090, Llama 3.1 8B, BF16, batch 1
DRAM_BOUND = "timm-vits16-amp-rtx3090-train-b384"  # timm's ViT-S/16 AMP training at batch 384 on an RTX 3090


@pytest.fixture(scope="module")
def rows():
    by_id = {r.id: r for r in load_measurements()}
    return by_id[HOST_BOUND], by_id[DRAM_BOUND]


def _speed(row, gddr: float) -> float:
    params = dict(prior_params("pytorch-eager"), **{GDDR: gddr})
    return evaluate_row(row, adjust=adjust_for("pytorch-eager", params))[0].predicted


def test_the_host_bound_row_moves_only_far_below_the_prior(rows):
    """Llama-3-8B streams its layers' and lm_head's bf16 weights each token: 8.03e9 parameters less the 128,256 x
    4,096 embedding table (read one row a token) = 7.50e9 x 2 bytes = 15.0 GB. On the RTX 4090's 1,008 GB/s at the
    prior less the probe, 0.85 - 0.10 = 0.75, that is 15.0 / 756 = 19.8 ms; the same README's H100 row (24.4 ms a
    token, weights streamed in 15.0 / 3,350 = 4.5 ms) shows eager transformers' host near 20+ ms a token, so the
    host sets the token at 0.85 and at 0.75 alike. At the grid's 0.40 the weights alone take 15.0 / 403 = 37.2 ms:
    at most 26.9 tokens/s, and the row moves there."""
    host_bound, _ = rows
    assert DRAM_PROBE_BELOW_PRIOR == pytest.approx(0.10)
    assert load_catalog().get("rtx-4090").mem_bw_gbps == pytest.approx(1008.0)
    assert _speed(host_bound, 0.85) == pytest.approx(_speed(host_bound, 0.75), rel=1e-9)
    assert _speed(host_bound, 0.40) < 1 / (15.0e9 / (0.40 * 1008e9))
    assert _speed(host_bound, 0.40) < _speed(host_bound, 0.75)


def test_only_the_row_its_dram_sets_informs_the_gddr_fraction(rows):
    """The training step's activations and optimizer traffic go through DRAM at every fraction: faster at 0.85 than
    at 0.75. Of the two rows, only it informs the GDDR fraction; the host-bound row still informs the host's
    dispatch (its token is set by it)."""
    host_bound, dram_bound = rows
    assert _speed(dram_bound, 0.85) > _speed(dram_bound, 0.75)
    moved = movers("pytorch-eager", [host_bound, dram_bound], (GDDR, "host_us_per_kernel"))
    assert [r.id for r in moved[GDDR]] == [DRAM_BOUND]
    assert host_bound in moved["host_us_per_kernel"]
