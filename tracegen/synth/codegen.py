"""Emit a program as readable, self-contained Python source defining ``transform(table)``.

The helpers in the emitted code are the source of ``operators`` copied verbatim (with the
private helpers they call, found by name), so running the code gives exactly what the search
computed in-process. The first line, ``# program: <key>``, names the program so a later repair
round can read it back; ``# tried: <key>`` lines carry earlier failed attempts along.
Not covered: pretty-printing beyond one comment per step.
"""
from __future__ import annotations

import ast
import inspect
import re

from . import operators as ops
from .program import parse_key, program_key

_CALLS = re.compile(r"\b(_?[a-z][a-z_]*)\(")
_PRED_WORDS = {"empty": "is blank", "nonempty": "is not blank", "numeric": "is a number",
               "not_numeric": "is not a number", "contains": "contains {value!r}",
               "not_contains": "does not contain {value!r}", "equals": "is {value!r}"}


def _helpers(names: list[str]) -> list[str]:
    """The operator functions used, preceded by every private helper they need, in order."""
    out: list[str] = []

    def visit(name: str) -> None:
        if name in out:
            return
        for dep in _CALLS.findall(inspect.getsource(getattr(ops, name))):
            if dep != name and dep.startswith("_") and hasattr(ops, dep):
                visit(dep)
        out.append(name)

    for name in names:
        visit(name)
    return sorted(out, key=lambda n: (not n.startswith("_"), out.index(n)))


def _literal(value) -> str:
    if isinstance(value, str) and "\\" in value and '"' not in value and "\n" not in value \
            and not value.endswith("\\"):
        return f'r"{value}"'
    return repr(value)


def describe_step(name: str, p: dict) -> str:
    """One short line saying what a step does."""
    if name in ("delete_rows", "wrap_records"):
        pred = _PRED_WORDS[p["pred"]].format(value=p["value"])
        where = "any cell" if p["col"] < 0 else f"column {p['col']}"
        if name == "wrap_records":
            return f"join rows into records, a new record starting where {where} {pred}"
        return f"delete the rows where {where} {pred}"
    text = {
        "drop_column": "drop column {col}",
        "move_column": "move column {src} to position {dst}",
        "copy_column": "copy column {col}",
        "merge_columns": "merge columns {left} and {right} with {sep!r}",
        "split_column": "split column {col} on {sep!r}",
        "extract": "extract {pattern!r} from column {col} into a new column",
        "delete_empty_columns": "delete the empty columns",
        "strip_cells": "trim spaces around every cell",
        "delete_empty_rows": "delete the empty rows",
        "delete_first_rows": "delete the first {count} row(s)",
        "delete_last_rows": "delete the last {count} row(s)",
        "fill_down": "fill blank cells of column {col} from above",
        "explode": "give each {sep!r}-separated piece of column {col} its own row",
        "transpose": "transpose the table",
        "fold": "fold the columns from {start} on into rows, {width} cell(s) at a time",
        "fold_with_header": "fold the columns from {start} on into (header, value) rows",
        "wrap_rows": "join every {count} rows into one",
        "wrap_all": "join all rows into one",
        "delete_duplicate_rows": "delete repeated rows",
        "group_by_key": "join consecutive rows with the same column {col} into one row",
        "collapse_rows": "collapse consecutive rows with the same column {col}, joining cells with {sep!r}",
        "lift_group_headers": "turn single-cell title rows into a first column of the rows below",
        "insert_row": "put the header row {values!r} on top",
        "select_columns": "keep the columns named {names!r}",
        "fill_right": "fill blank cells of row {row} from the left",
        "merge_rows": "merge row {row} with the row below it, joining cells with {sep!r}",
        "rewrite_cells": "rewrite the cells of column {col} matching {pattern!r} as {template!r}",
    }
    if name == "split_once":
        return f"split column {p['col']} in two at the {'last' if p['from_right'] else 'first'} {p['sep']!r}"
    if name == "unfold":
        extra = {"none": "", "blank": ", with a header row",
                 "first": ", keeping row 0 as the header"}[p["header"]]
        return f"unfold column {p['vcol']} into one column per value of column {p['hcol']}{extra}"
    if name == "divide":
        pred = _PRED_WORDS[p["pred"]].format(value=p["value"])
        pred = pred.replace("is ", "are ", 1)
        return f"divide column {p['col']}: cells that {pred} stay, the others move right"
    return text[name].format(**p)


def _compact_source(name: str) -> str:
    """An operator's source without its docstring and comments (``ast.unparse`` keeps no comments),
    so the code is the same function in fewer tokens."""
    tree = ast.parse(inspect.getsource(getattr(ops, name)))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def emit_code(program, *, tried=(), compact: bool = False) -> str:
    """Source code of ``program`` as a ``transform(table)`` function plus its helpers.

    ``compact``: the same functions without docstrings, comments or step comments, and no blank
    lines between them (the ``# program:`` / ``# tried:`` lines stay: a later repair reads them).
    It computes exactly what the readable rendering computes; only the text is shorter."""
    names = list(dict.fromkeys(name for name, _ in program))
    helpers = _helpers(names)
    if compact:
        sources = [_compact_source(n) for n in helpers]
    else:
        sources = [inspect.getsource(getattr(ops, n)).rstrip() for n in helpers]
    lines = [f"# program: {program_key(program)}"]
    lines += [f"# tried: {key}" for key in tried]
    if any("re." in s for s in sources):
        lines.append("import re")
    if not compact:
        lines.append("")
    for src in sources:
        lines += [src] if compact else ["", src, ""]
    lines += ["def transform(table):"] if compact else ["", "def transform(table):"]
    if not program and not compact:
        lines.append("    # no step found: return the table as it is")
    for i, (name, params) in enumerate(program, 1):
        args = "".join(f", {k}={_literal(v)}" for k, v in params.items())
        if not compact:
            lines.append(f"    # {i}. {describe_step(name, params)}")
        lines.append(f"    table = {name}(table{args})")
    lines.append("    return table")
    return "\n".join(lines) + "\n"


def strip_history(code: str) -> str:
    """``code`` without the synthesizer's bookkeeping lines (``# program:`` / ``# tried:``): what a
    distilled model is shown and trained on, since the keys mean nothing to it."""
    return "".join(line for line in code.splitlines(keepends=True)
                   if not line.startswith(("# program: ", "# tried: ")))


def read_history(code: str | None) -> tuple[tuple | None, list[str]]:
    """(the program named in emitted code, the keys of all programs it and its ``# tried`` lines
    name); (None, []) for code this module did not write."""
    if not code:
        return None, []
    program, keys = None, []
    for line in code.splitlines():
        if line.startswith("# program: "):
            key = line[len("# program: "):].strip()
            program = parse_key(key)
            if program is not None:
                keys.append(program_key(program))
        elif line.startswith("# tried: ") and parse_key(line[len("# tried: "):].strip()) is not None:
            keys.append(program_key(parse_key(line[len("# tried: "):].strip())))
    return program, list(dict.fromkeys(keys))
