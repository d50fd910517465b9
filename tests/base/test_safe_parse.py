"""User text is refused at parse when it holds what no reader can see or no encoder can write."""

import pytest

from planner.base.safe_parse import TextError, check_text, check_text_values, clean_text, text_problem

# Each is invisible on a page or breaks what the text is written into: ESC, BEL and NUL make YAML that `sky launch`
# refuses (YAML 1.1 allows no C0 control but tab and line breaks in a stream), NEL (U+0085) and U+2028 are line
# breaks to YAML and JavaScript, and a lone surrogate has no UTF-8 form at all.
ATTACKS = ["\x1b[2J", "\x07", "\x00", "\x85", "\u2028", "\u2029", "\ud800", "\udfff", "\x7f", "\r"]


@pytest.mark.parametrize("bad", ATTACKS)
def test_a_refused_character_is_named_by_its_code_point_and_position(bad):
    problem = text_problem(f"ab{bad}c")
    assert problem and f"U+{ord(bad[0]):04X}" in problem and "character 3" in problem
    assert bad not in problem  # the message never carries the character itself
    problem.encode("utf-8")


def test_tab_and_newline_pass_only_in_multi_line_text():
    assert text_problem("a\tb") and text_problem("a\nb")
    assert text_problem("a\tb\nc", multiline=True) is None
    assert text_problem("Llama 3 (8B) — ünïcödé 模型 🙂") is None


def test_a_document_names_the_path_of_the_first_refused_value_or_key():
    with pytest.raises(TextError) as err:
        check_text_values({"models": [{"id": "x", "name": "evil\ud800"}]}, "upload")
    assert err.value.field == "models[0].name" and "U+D800" in str(err.value)
    with pytest.raises(TextError) as err:
        check_text_values({"ok": {"bad\x1bkey": 1}}, "upload")
    assert err.value.field == "ok[key #1]"
    check_text_values({"derivation": "line one\n\tline two", "n": [1, 2.0, None, True]}, "upload")


def test_check_text_returns_good_text_and_clean_text_makes_any_text_showable():
    assert check_text("fine", "link", "m_name") == "fine"
    with pytest.raises(TextError, match="field 'm_name'"):
        check_text("a\x1bb", "link", "m_name")
    assert clean_text("a\ud800b\x1bc") == "a\ufffdb\ufffdc"
    clean_text("a\ud800b").encode("utf-8")
