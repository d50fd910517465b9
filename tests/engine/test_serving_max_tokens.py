"""The client's cap on each reply (max_tokens) in a ShareGPT-like spread: no output past it, the mean kept, and a
finite burst, which ends with its longest reply, timed by the capped tail. Expected figures derived by hand."""

import numpy as np
import pytest
import yaml

from planner.base.schema import DataFileError
from planner.engine.serving_sim import Requests, StepTimes, burst_tokens_per_s
from planner.inputs.serving_runtimes import Scheduler
from planner.inputs.facts import load_facts
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import with_posthoc
from tests.fixtures.posthoc import posthoc_from

STEP = 0.01  # seconds, every step of a flat step model
MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def _flat(tokens: int = 4096) -> StepTimes:
    flat = (STEP,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, 10**7, 1e-6, 1.0)


def test_a_cap_cuts_the_tail_and_keeps_the_mean():
    """Exponential outputs of mean 300: the top quantile of 512 rows, 300 x ln(1024) = 2,080 tokens, runs to the
    dataset's 1,024-token cut uncapped; under max_tokens 512 none passes 512 and the mean stays 300 (rescaled)."""
    free, capped = Requests.sharegpt_like(220, 300), Requests.sharegpt_like(220, 300, max_output=512)
    assert max(free.outputs) > 900
    assert max(capped.outputs) == 512 and np.mean(capped.outputs) == pytest.approx(300, abs=0.5)
    assert capped.prompts == free.prompts  # the prompts are not the client's cap's business


def test_a_mean_near_or_at_the_cap_puts_the_outputs_at_it():
    """A mean of 473 under a cap of 512 (most replies hit it: the fixed point crawls there, the scale bisected):
    mean kept; a mean of 512 under 512: every reply 512 tokens."""
    near = Requests.sharegpt_like(80, 473, rows=64, max_output=512)
    assert max(near.outputs) == 512 and np.mean(near.outputs) == pytest.approx(473, abs=0.5)
    assert Requests.spread(80, 512, "sharegpt", rows=8, max_output=512).outputs == (512,) * 8
    with pytest.raises(ValueError, match="can't keep a mean of 600 output tokens"):  # above the cap: refused
        Requests.sharegpt_like(80, 600, max_output=512)


def test_a_burst_ends_with_its_longest_capped_reply():
    """Flat steps of 10 ms, 8 requests sent at once, every prompt (at most 1,024 tokens, 8 of them within the
    4,096-token budget) prefilled in the first step, which also samples each first token: the last reply of L
    tokens completes after L steps, so the burst's output tokens/s is sum(outputs) / (L x 10 ms). At mean 300
    capped at 512 the longest reply is 512 (over 8 rows the top quantile 300 x ln 16 = 832 is cut there)."""
    reqs = Requests.sharegpt_like(100, 300, rows=8, max_output=512)
    assert max(reqs.outputs) == 512
    expected = sum(reqs.outputs) / (512 * STEP)
    assert burst_tokens_per_s(_flat(), MIXED, reqs, 8) == pytest.approx(expected, rel=0.01)


def test_a_row_cap_below_its_mean_output_is_refused_naming_the_field(tmp_path):
    row = {"id": "cap", "source": "x", "conditions": "y", "model": "llama-3-8b", "gpu": "h100-sxm", "runtime": "vllm",
           "tp": 1, "input_tokens": 128, "output_tokens": 300, "metric": "saturation_output_tokens_per_s",
           "lengths": "sharegpt", "requests": 100, "max_output_tokens": 512}
    path = tmp_path / "rows.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [row]}))
    assert load_rows(path)[0].max_output_tokens == 512
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [{**row, "max_output_tokens": 200}]}))
    with pytest.raises(DataFileError, match="max_output_tokens"):
        load_rows(path)
    # a post-hoc cap below a matched row's mean is refused when the row is predicted, named, not silently applied
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [{k: v for k, v in row.items()
                                                                   if k != "max_output_tokens"}]}))
    cap = posthoc_from(tmp_path, "  - {rows: 'cap', max_output_tokens: 200, why: x}\n")
    capped = with_posthoc(load_rows(path)[0], cap)
    with pytest.raises(ValueError, match="max_output_tokens 200 is below the mean output 300"):
        predict(capped, load_facts())
