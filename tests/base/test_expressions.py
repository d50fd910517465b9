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


def test_evaluation_order_follows_python_precedence():
    assert evaluate("2 - 3 - 4", {}) == -5 and evaluate("2 ** 3 ** 2", {}) == 512 and evaluate("-2 ** 2", {}) == -4
    assert evaluate("(1 + 2) * (3 - 5) / 4", {}) == -1.5


def test_a_formula_past_the_node_cap_is_refused():
    # 501 names and 500 additions = 1001 nodes > 1000; 2 characters per term stays under the length cap
    with pytest.raises(ExpressionError, match="more than 1000 terms"):
        evaluate("+".join(["L"] * 501), {"L": 1})


def test_deep_nesting_and_giant_numbers_are_refused():
    with pytest.raises(ExpressionError, match="nested too deeply|too many nested"):
        evaluate("(" * 1500 + "1" + ")" * 1500, {})
    with pytest.raises(ExpressionError, match="ordinary size"):
        evaluate(10 ** 5000, {})


def test_a_long_flat_sum_under_the_cap_is_evaluated_without_recursion():
    assert evaluate("+".join(["1"] * 500), {}) == 500  # 999 nodes, left-nested 499 deep
