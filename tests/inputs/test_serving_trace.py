"""Request traces and the serving engines' data: malformed lines named, sizes capped."""

import pytest

from planner.inputs.serving_runtimes import load_schedulers
from planner.inputs.serving_trace import MAX_TRACE_ROWS, load_trace, parse_trace


def test_csv_and_json_lines_read_alike():
    assert parse_trace("input,output\n512,128\n{\"input\": 64, \"output\": 2}\n") == ((512, 64), (128, 2))


@pytest.mark.parametrize("text, words", [("12,x\n", "line 1: output"), ("1,2,3\n", "line 1: expected"),
                                         ("{\"input\": 1}\n", "line 1"), ("0,5\n", "input 0"), ("", "no requests"),
                                         ("5,-1\n", "line 1: output")])
def test_a_malformed_trace_is_refused_by_line_and_field(text, words):
    with pytest.raises(ValueError, match=words):
        parse_trace(text)


def test_too_many_rows_are_refused_before_they_are_all_read():
    with pytest.raises(ValueError, match="more than 100,000"):
        parse_trace("1,1\n" * (MAX_TRACE_ROWS + 1))


def test_a_device_or_missing_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_trace(tmp_path / "none.csv")
    with pytest.raises(ValueError):
        load_trace("/dev/zero")


def test_vllm_defaults_depend_on_the_gpu():
    vllm = load_schedulers().get("vllm")
    assert (vllm.on("h100-sxm", 80).max_num_seqs, vllm.on("h100-sxm", 80).token_budget) == (1024, 8192)
    assert (vllm.on("a100-sxm-80gb", 80).max_num_seqs, vllm.on("a100-sxm-80gb", 80).token_budget) == (256, 2048)
    assert vllm.on("l4", 24).token_budget == 2048
