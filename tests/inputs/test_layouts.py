"""A training layout as users write it: parsed back to the same text, and every bad part named."""

import pytest

from planner.inputs.layouts import Layout, parse_layout


@pytest.mark.parametrize("text, layout", [
    ("", Layout()), ("none", Layout()), ("auto", Layout(auto=True)),
    ("tp=2,pp=4", Layout(tp=2, pp=4)), ("TP2 PP4 v2", Layout(tp=2, pp=4, vpp=2)),
    ("tp = 8; cp = 2", Layout(tp=8, cp=2)), ("vpp=2,pp=2", Layout(pp=2, vpp=2)),
])
def test_layouts_parse_and_read_back(text, layout):
    assert parse_layout(text) == layout
    assert parse_layout(layout.text()) == layout


def test_the_words_name_each_degree():
    assert Layout(tp=2, pp=4, vpp=2, cp=2).describe() == ("TP 2 (+SP) x PP 4 (interleaved 1F1B, 2 virtual stages "
                                                          "per GPU) x CP 2")
    assert Layout(tp=2, pp=4, vpp=2, cp=2).model_parallel == 16


@pytest.mark.parametrize("text, words", [
    ("tp=0", "tp=0 is outside 1..1024"), ("dp=2", "'dp=2' is not a degree"), ("tp=2,tp=4", "tp is given twice"),
    ("tp=" + "9" * 80, "characters; a layout is at most 64"), ("<script>", "is not a degree"),
])
def test_a_bad_layout_names_the_field_and_the_fix(text, words):
    with pytest.raises(ValueError) as exc:
        parse_layout(text)
    assert str(exc.value).startswith("layout: ") and words in str(exc.value)
