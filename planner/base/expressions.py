"""A tiny safe arithmetic evaluator for model-profile formulas (numbers, names, + - * / ** and parentheses).

Formulas come from uploads and links, so parsing and evaluation are bounded: at most MAX_FORMULA_CHARS characters
and MAX_FORMULA_NODES syntax nodes, evaluated with an explicit stack (no recursion), exponents at most
MAX_EXPONENT, results finite.
"""

from __future__ import annotations

import ast
import math
import operator
import threading
from functools import lru_cache
from collections.abc import Mapping

from planner.base.safe_parse import shown

MAX_FORMULA_CHARS = 4000
MAX_FORMULA_NODES = 1000  # numbers, names and operations; data/models_generic.yaml's longest formula has 446
MAX_EXPONENT = 16
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
# CPython 3.11's AST constructor keeps a per-interpreter recursion count: parsing from several threads at once (page
# sessions) can fail with "AST constructor recursion depth mismatch". Parses are cached, so one lock costs nothing.
_PARSE_LOCK = threading.Lock()
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, *_BINARY, *_UNARY)


class ExpressionError(ValueError):
    pass


@lru_cache(maxsize=1024)
def _parse_text(text: str) -> ast.Expression:
    if len(text) > MAX_FORMULA_CHARS:  # also keeps CPython's recursive AST construction far from its limit
        raise ExpressionError(f"formula is longer than {MAX_FORMULA_CHARS} characters")
    try:
        with _PARSE_LOCK:
            tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a formula: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError("formula is nested too deeply") from None
    count = 0
    for node in ast.walk(tree):  # ast.walk is iterative
        count += isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name))
        if count > MAX_FORMULA_NODES:
            raise ExpressionError(f"formula has more than {MAX_FORMULA_NODES} terms and operators")
        if not isinstance(node, _ALLOWED):
            raise ExpressionError(f"'{type(node).__name__}' is not allowed; use numbers, names, + - * / ** and ()")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                               or not isinstance(node.value, (int, float))):
            raise ExpressionError(f"only numbers are allowed as constants, got {shown(node.value)}")
    return tree


def parse(text: str | int | float) -> ast.Expression:
    """Parse and check that only arithmetic is used; raises ExpressionError otherwise."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise ExpressionError(f"expected a formula string or a number, got {shown(text)}")
    if isinstance(text, int) and text.bit_length() > 256:
        raise ExpressionError(f"expected a formula or a number of ordinary size, got {shown(text)}")
    return _parse_text(str(text))


def names(text: str) -> set[str]:
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name)}


def _apply(node: ast.AST, args: list[float]) -> float:
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](args[0])
    base, exp = args
    if isinstance(node.op, ast.Pow) and abs(exp) > MAX_EXPONENT:
        raise ExpressionError(f"exponents above {MAX_EXPONENT} are not allowed")
    return _BINARY[type(node.op)](base, exp)


def _children(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    return []


def _leaf(node: ast.AST, variables: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return float(node.value)
    if node.id not in variables:
        raise ExpressionError(f"unknown name '{node.id}'")
    return float(variables[node.id])


def _run(tree: ast.Expression, variables: Mapping[str, float]) -> float:
    """Post-order evaluation with an explicit stack."""
    values: list[float] = []
    stack: list[tuple[ast.AST, bool]] = [(tree.body, False)]
    while stack:
        node, expanded = stack.pop()
        kids = _children(node)
        if not kids:
            values.append(_leaf(node, variables))
        elif expanded:
            args = values[-len(kids):]
            del values[-len(kids):]
            values.append(_apply(node, args))
        else:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
    return values[0]


def evaluate(text: str | int | float, variables: Mapping[str, float]) -> float:
    """Evaluate a formula with the given variables; the result must be finite."""
    try:
        value = _run(parse(text), variables)
    except ZeroDivisionError:
        raise ExpressionError("division by zero") from None
    except OverflowError:
        raise ExpressionError("result too large") from None
    if isinstance(value, complex) or math.isnan(value) or math.isinf(value):
        raise ExpressionError(f"result is not a finite number ({value})")
    return value
