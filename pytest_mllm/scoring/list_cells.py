"""Answer cells written as Python lists, read as VLMEvalKit reads them, without running the cell's text.

VLMEvalKit's VQA scoring (`process_line` in vlmeval/dataset/utils/vqa_eval.py) asks whether
`eval(cell)` is a list and, if so, scores against its items. `eval` computes what a cell spells:
`[1/2]` is the list `[0.5]`, `[2*3, 'a']` is `[6, 'a']`; a cell naming anything (`[Gambia, Niger]`)
fails and stays one answer, its text. `list_cell` gives the same list by walking the cell's syntax
tree and computing only literal arithmetic (numbers, strings, lists, tuples; + - * / // % **, signs,
`not`, `~`), never evaluating names, calls or attributes. A cell it cannot compute is text, as a
cell `eval` refuses is; arithmetic `eval` would fail on (`[1/0]`) is text too.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert}
_MAX_DIGITS = 4300  # Python's limit on printing an int; a larger one the reference cannot print either
_MAX_LENGTH = 100_000  # a repeated string or list longer than this is not computed


class NotComputed(ValueError):
    """The cell holds something other than literal arithmetic, or arithmetic that fails."""


def cell_value(text: str) -> Any:
    """What the reference's `eval` makes of a cell, computed from its literal arithmetic only; NotComputed
    when the cell is anything else (a name, a call: `eval` raises NameError there, or runs it)."""
    try:
        tree = ast.parse(text.lstrip(" \t"), mode="eval")
        return _value(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotComputed(str(exc)) from None


def list_cell(text: str) -> list[Any] | None:
    """The list the reference's `eval` makes of a cell (its items as computed: numbers, strings, …),
    or None when that is not a list: the cell is then one answer, its text."""
    try:
        value = cell_value(text)
    except NotComputed:
        return None
    return value if isinstance(value, list) else None


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(item) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _apply(_UNARY[type(node.op)], _value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        _check_size(node.op, left, right)
        return _apply(_BINARY[type(node.op)], left, right)
    raise NotComputed(type(node).__name__)


def _apply(function: Callable[..., Any], *values: Any) -> Any:
    try:
        return function(*values)
    except (ArithmeticError, TypeError, ValueError) as exc:  # 1/0, 'a' - 1: eval raises, the cell is text
        raise NotComputed(str(exc)) from None


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse a power or repetition too large to compute quickly (eval would compute it, then fail or stall)."""
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
        if right * math.log10(abs(left)) > _MAX_DIGITS:
            raise NotComputed("power too large")
    if isinstance(op, ast.Mult):
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(count, int) \
                    and len(sequence) * count > _MAX_LENGTH:
                raise NotComputed("repetition too long")
