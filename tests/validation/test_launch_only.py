"""Triton's libtorch backend (r21.10) stamps its compute end on the host once the first output's copy is queued, with
no stream synchronization, so 'Server Compute Infer' of DeepLearningExamples' TorchScript BERT rows is the launch of
the forward, not the forward (`launch_only`, read after the values were entered). Such rows are excluded, not scored;
the evidence is physical."""

from planner.validation.measured import conditions_read_after, load_measurements, predict_row, prediction_first_ids

TS_ID = "dletriton-large-t4-ts-fp16-b16-s384"  # TorchScript: the launch interval
TRT_ID = "dletriton-large-t4-trt-fp16-b16-s384"  # the TensorRT backend's rows of the same file stay scored


def _rows() -> dict:
    return {r.id: r for r in load_measurements()}


def test_the_launch_value_is_shorter_than_the_forward_at_the_datasheet_peak():
    """BERT-large (24 layers, h 1024, ffn 4096) over 16 x 384 = 6,144 tokens: the linear layers alone are
    2 x 24 x (4 h^2 + 2 h ffn) = 2 x 24 x 12,582,912 = 603,979,776 FLOP a token, 3.71e12 FLOP in all; at the T4's
    65 TFLOPS fp16 datasheet peak that is >= 57 ms, and the TensorRT row of the same pass reads 218 ms. The
    TorchScript cell is 7.3 ms: no forward pass fits in it."""
    rows = _rows()
    floor_s = 2 * 24 * (4 * 1024**2 + 2 * 1024 * 4096) * 16 * 384 / 65e12
    assert rows[TS_ID].value < floor_s / 5 < floor_s < rows[TRT_ID].value


def test_the_torchscript_rows_are_excluded_post_hoc_and_the_tensorrt_rows_still_scored():
    rows, committed = _rows(), prediction_first_ids()
    flagged = [k for k, v in conditions_read_after().items() if v.get("launch_only")]
    assert len(flagged) == 36  # 3 models x 4 GPUs x 3 batches, TorchScript only
    assert all(k in committed and "-ts-" in k and rows[k].launch_only is None for k in flagged)
    assert "launch_only" in (predict_row(rows[TS_ID]).excluded or "")
    assert predict_row(rows[TRT_ID]).excluded is None
