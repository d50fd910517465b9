"""A committed row mapped a 2021-22 run to today's framework key; validation/conditions_read_after.yaml's `framework`
and `attention` (with refines_assumed) read it as the stack of its era: Megatron-LM @50a4b5fa02 (megatron-lm-2021:
no communication overlap, scores materialized), MT-NLG's Megatron-DeepSpeed (the same profile, ZeRO-1) and NeMo
Megatron 22.08 (attention manual, the nemo key's overlap). Checked on load naming the field."""

from dataclasses import replace

import pytest
import yaml

from planner.base.schema import DataFileError
from planner.validation.measured import conditions_read_after, load_measurements, predict_row

SC21 = "mlm-sc21-gpt-1.7b-fp16-a100sxm80-x32-tp1-pp1-mb1-ga16-seq2048-ac"
MTNLG = "mtnlg-530b-bf16-a100sxm80-x2240-tp8-pp35-dp8-mb1-ga240-seq2048-ac"
NEMO = "nemo2208-gpt3-5b-bf16-a100sxm80-x8-tp1-pp1-mb2-ga128-seq2048"


def _row(row_id):
    return next(r for r in load_measurements() if r.id == row_id)


@pytest.mark.parametrize("row_id, runtime, sharding", [
    (SC21, "megatron-lm-2021", "ddp"),  # --DDP-impl local: no distributed optimizer in 2021
    (MTNLG, "megatron-lm-2021", "zero1"),  # DeepSpeed's ZeRO-1 under the same layers
    (NEMO, "megatron-lm", "zero1"),  # distributed_fused_adam, the nemo key's schedule kept
])
def test_the_rows_are_planned_as_their_eras_stack(row_id, runtime, sharding):
    row = _row(row_id)
    assert row.framework in ("megatron-lm", "megatron-deepspeed", "nemo") and row.attention == "sdpa"  # committed
    plan = predict_row(row).plan
    assert (plan.runtime, plan.attention, plan.workload.sharding) == (runtime, "manual", sharding)


def test_materialized_scores_cost_at_least_their_bytes_at_the_datasheet_rate():
    """SC21's 1.7B (24 layers, 24 heads, sequence 2,048, fp16), 16 micro-batches of 1 a step on each GPU, full
    recomputation: each layer's 24 x 2,048^2 = 100.7M scores are written and read at least once in each of the two
    forwards: 100.7M x 2 B x 2 x 2 x 24 x 16 = 309 GB a step, 0.152 s at the A100 80GB's 2,039 GB/s at the least."""
    row = _row(SC21)
    era = replace(row, id="not-in-conditions", framework="megatron-lm-2021")
    step_s = row.batch * row.seq_len / predict_row(era).predicted
    manual_step_s = row.batch * row.seq_len / predict_row(replace(era, attention="manual")).predicted
    scores_bytes = 24 * 2048**2 * 2 * 2 * 2 * 24 * 16
    assert manual_step_s - step_s >= scores_bytes / 2039e9
    assert predict_row(row).predicted == pytest.approx(predict_row(replace(era, attention="manual")).predicted)


@pytest.mark.parametrize("field, value", [("framework", "megatron-2021"), ("attention", "flash-3")])
def test_an_unknown_era_field_is_refused_naming_it(tmp_path, field, value):
    path = tmp_path / "after.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [
        {"id": SC21, field: value, "refines_assumed": True, "source": "test"}]}))
    with pytest.raises(DataFileError, match=field):
        conditions_read_after(path)
