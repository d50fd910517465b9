import pytest

from planner.base.expressions import ExpressionError, evaluate, names


def test_arithmetic_with_names():
    assert evaluate("2*L**2 + d/4 - 1", {"L": 3, "d": 8}) == 2 * 9 + 2 - 1


@pytest.mark.parametrize("text", ["__import__('os')", "L.real", "[1,2]", "lambda: 1", "L if L else 1", "'a'*3",
                                  "2**100", "1/0", "True + 1"])
def test_anything_but_arithmetic_is_rejected(text):
    with pytest.raises(ExpressionError):
        evaluate(text, {"L": 1})


def test_unknown_names_are_reported():
    with pytest.raises(ExpressionError, match="unknown name 'x'"):
        evaluate("x + 1", {})
    assert names("a*b + L") == {"a", "b", "L"}
