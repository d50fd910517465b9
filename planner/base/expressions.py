"""A tiny safe arithmetic evaluator for model-profile formulas (numbers, names, + - * / ** and parentheses)."""

from __future__ import annotations

import ast
import math
import operator
from typing import Mapping

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class ExpressionError(ValueError):
    pass


def parse(text: str) -> ast.Expression:
    """Parse and check that only arithmetic is used; raises ExpressionError otherwise."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise ExpressionError(f"expected a formula string or a number, got {text!r}")
    if len(str(text)) > 2000:
        raise ExpressionError("formula is longer than 2000 characters")
    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a formula: {exc.msg}") from None
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load,
                   *_BINARY, *_UNARY)
        if not isinstance(node, allowed):
            raise ExpressionError(f"'{type(node).__name__}' is not allowed; use numbers, names, + - * / ** and ()")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, (int, float))):
            raise ExpressionError(f"only numbers are allowed as constants, got {node.value!r}")
    return tree


def names(text: str) -> set[str]:
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name)}


def evaluate(text: str, variables: Mapping[str, float]) -> float:
    """Evaluate a formula with the given variables; the result must be finite."""
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in variables:
                raise ExpressionError(f"unknown name '{node.id}'")
            return float(variables[node.id])
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](ev(node.operand))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, exp = ev(node.left), ev(node.right)
            if abs(exp) > 16:
                raise ExpressionError("exponents above 16 are not allowed")
            return base ** exp
        return _BINARY[type(node.op)](ev(node.left), ev(node.right))

    try:
        value = ev(parse(text))
    except ZeroDivisionError:
        raise ExpressionError("division by zero") from None
    except OverflowError:
        raise ExpressionError("result too large") from None
    if isinstance(value, complex) or math.isnan(value) or math.isinf(value):
        raise ExpressionError(f"result is not a finite number ({value})")
    return value
