"""The operator library the search draws from: which steps to try on a table, with which parameters.

Parameters are inferred from the current table and the target rather than enumerated blindly:
separators are the punctuation runs found inside a column's cells, and a split is proposed only if
one of its pieces is a target cell; merges only with a separator that rebuilds a target cell;
extraction patterns (a fixed library plus patterns anchored on the text around a target value
found inside a cell) only when they pull a target value out; keywords for deleting rows come from
cells the target does not contain (words before numbers); wrap sizes from the ratio of the
shapes; cell rewrites (a token pattern of the cell and a template of fixed text and its pieces)
from the first row whose cell differs from its target row, checked on every other such row.
Each proposal is a ``(name, params)`` step; ``OPERATORS[name]`` is the function that applies it.
Steps are proposed general-first, so when two steps reach the same table the general one is kept.
Not covered: operators whose parameters are free text absent from the example.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterator

from . import operators as ops
from .heuristic import Target, has_header, separators

Table = list[list[str]]
Step = tuple[str, dict]

OPERATORS = {
    name: getattr(ops, name) for name in (
        "drop_column", "move_column", "copy_column", "merge_columns", "split_column", "split_once",
        "extract", "divide", "delete_empty_columns", "strip_cells", "delete_empty_rows",
        "delete_rows", "delete_first_rows", "delete_last_rows", "delete_duplicate_rows", "fill_down",
        "explode", "transpose", "fold", "fold_with_header", "unfold", "wrap_rows", "wrap_all",
        "wrap_records", "group_by_key", "collapse_rows", "lift_group_headers", "insert_row",
        "select_columns", "fill_right", "merge_rows", "rewrite_cells",
    )
}

# general patterns first: money, a number, words, a capitalised name, a bracketed part, an email,
# a date, a phone number, the first and the last word
PATTERNS = (
    r"[-+]?[$\u20ac\u00a3]\s?\d[\d,]*(?:\.\d+)?", r"-?\d+(?:[.,]\d+)*", r"\d+",
    r"[A-Za-z][A-Za-z.' -]*[A-Za-z]", r"[A-Za-z]+",
    r"[A-Z][a-zA-Z]*(?:['-][A-Za-z]+)*(?: [A-Z][a-zA-Z]*(?:['-][A-Za-z]+)*)+",
    r"\(([^)]*)\)", r"\[([^\]]*)\]", r'"([^"]*)"', r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    r"\d{1,4}[/-]\d{1,2}[/-]\d{1,4}", r"\(?\d{3}\)?[ .-]?\d{3}[ .-]\d{4}", r"^\S+", r"\S+$",
)
MERGE_SEPS = (" ", "", ", ", ",", "-", "/", ":", ": ", "_", ".", " - ", "|", ";", "; ")
_PREDS = ("empty", "nonempty", "numeric", "not_numeric")
SAMPLE_ROWS = 40  # rows read when inferring cell-level parameters
ROWS_MEMO_MAX = 200  # columns of at most this many cells have their row steps kept per search
_TOKEN = re.compile(r"\w\w+")
_PIECE = re.compile(r"\d+|[^\W\d_]+|.", re.S)


def step_cost(name: str, params: dict) -> float:
    """Cost of one step when ranking consistent programs: specific parameters cost more."""
    if name == "delete_rows" and params["pred"] in ("contains", "equals"):
        return 1.3 if _has_letter(params["value"]) else 1.5  # a number is data, not a label
    if name == "extract" and params["pattern"] not in PATTERNS:
        return 1.3
    if name == "copy_column":
        return 1.2
    if name == "rewrite_cells":
        return 1.3
    if name == "delete_first_rows":
        return 1.6  # by position: right for titles, an overfit for most else
    if name == "delete_last_rows":
        return 2.1
    if name in ("insert_row", "select_columns"):
        return 1.5
    return 1.0


def apply_step(table: Table, step: Step) -> Table:
    name, params = step
    return OPERATORS[name](table, **params)


def unfold_cells(table: Table, hcol: int, vcol: int, header: str) -> int:
    """How many cells ``unfold`` would make of ``table``, without making them: an unfold on a
    column of many distinct values makes a table of rows x names cells, which the search would
    build only to drop it as too big."""
    w = width(table)
    body = table[1:] if header == "first" and table else table
    keep = [c for c in range(w) if c not in (hcol, vcol)]
    keys = {tuple([r[c] if c < len(r) else "" for c in keep]) for r in body}
    names = len({r[hcol] if 0 <= hcol < len(r) else "" for r in body})
    cells = len(keys) * (len(keep) + names)
    if header == "first" and table:
        cells += len(keep) + names
    elif header == "blank":
        cells += (max(w - 2, 0) if body else 0) + names
    return cells


def width(table: Table) -> int:
    return max((len(r) for r in table), default=0)


def _column(table: Table, col: int) -> list[str]:
    return [r[col] if col < len(r) else "" for r in table]


def _context_patterns(cells: list[str], tgt: Target, limit: int = 2) -> list[str]:
    """Regexes that cut a target value out of a cell by the words right around it."""
    out: list[str] = []
    for text in cells:
        if len(out) >= limit:
            break
        m = tgt.finder.search(text) if tgt.finder else None
        if m:
            value, i = m.group(), m.start()
            before = re.search(r"\S+\s*$", text[:i])
            after = re.match(r"\s*\S+", text[i + len(value):])
            if before and after:
                pat = re.escape(before.group()) + "(.+?)" + re.escape(after.group())
            elif before:
                pat = re.escape(before.group()) + "(.+)$"
            elif after:
                pat = "^(.+?)" + re.escape(after.group())
            else:
                continue
            if pat not in out:
                out.append(pat)
    return out


def _cell_pattern(text: str, digits: bool) -> str:
    """A regex matching ``text`` whole, one group per piece: a number (each digit when
    ``digits``: fixed-width codes like phone numbers), a word's first letter and its rest."""
    out = []
    for piece in _PIECE.findall(text):
        if piece[0].isdigit():
            out.append(r"(\d)" * len(piece) if digits else r"(\d+)")
        elif piece[0].isalpha():
            out.append(r"([^\W\d_])([^\W\d_]*)")
        else:
            out.append(re.escape(piece))
    return "".join(out)


def _template(groups: tuple, target: str) -> str | None:
    """``target`` as fixed text and group references (\\g<k>), longest group first and, on a
    tie, the group right after the last one used; None when no group is used."""
    out, pos, last, used = [], 0, 0, False
    while pos < len(target):
        best = None
        for k, g in enumerate(groups, 1):
            if g and target.startswith(g, pos):
                rank = (-len(g), k <= last, k)
                if best is None or rank < best[0]:
                    best = (rank, k, g)
        if best is None:
            out.append(target[pos].replace("\\", "\\\\"))
            pos += 1
        else:
            out.append(f"\\g<{best[1]}>")
            pos, last, used = pos + len(best[2]), best[1], True
    return "".join(out) if used else None


def _rewrites(values: list[str], rows: list[tuple], col: int) -> list[tuple[str, str]]:
    """(pattern, template) pairs that rewrite the cells of a column into one target column,
    row by row. A cell already in its target row is no evidence (else, when that leaves nothing
    to rewrite, a cell equal to the target cell at its own position); the first other cell gives
    the candidates, every other one must agree; a target value that is a piece of its cell is
    left to split and extract."""
    pairs = [(v, r) for v, r in zip(values, rows) if v not in r]
    if not pairs:
        pairs = [(v, r) for v, r in zip(values, rows) if v != (r[col] if col < len(r) else "")]
    if not pairs or not pairs[0][0].strip():
        return []
    x0, row0 = pairs[0]
    out: list[tuple[str, str]] = []
    for digits in (False, True):
        rx = re.compile(_cell_pattern(x0, digits))
        m0 = rx.fullmatch(x0)
        if m0 is None or not all(rx.fullmatch(x) for x, _ in pairs):
            continue
        for c, y in enumerate(row0):
            if not y or y in x0:
                continue
            template = _template(m0.groups(), y)
            if template is None or any(rx.fullmatch(x).expand(template) != (r[c] if c < len(r) else None)
                                       for x, r in pairs):
                continue
            step = (rx.pattern, template)
            if step not in out:
                out.append(step)
        if out:
            break
    return out


# ---------------------------------------------------------------- proposals

def _whole_table(table: Table, tgt: Target) -> Iterator[Step]:
    cells = [c for r in table for c in r]
    if any(not any(c.strip() for c in r) for r in table):
        yield "delete_empty_rows", {}
    cols = [_column(table, c) for c in range(width(table))]
    if any(not any(v.strip() for v in col) for col in cols):
        yield "delete_empty_columns", {}
    if any(c != c.strip() for c in cells):
        yield "strip_cells", {}
    if len({tuple(r) for r in table}) < len(table):
        yield "delete_duplicate_rows", {}
    if len(table) > 1 or width(table) > 1:
        yield "transpose", {}


def _rows(table: Table, tgt: Target) -> Iterator[Step]:
    n, w = len(table), width(table)
    for row in range(min(n, 3)):
        cells = table[row]
        if any(not v.strip() for v in cells[1:]) and any(v.strip() for v in cells[:-1]):
            yield "fill_right", {"row": row}
        if row + 1 < n:
            for sep in tgt.separators[:2] + [" "]:
                if any(a and b and sep.join((a, b)) in tgt.values for a, b in zip(cells, table[row + 1])):
                    yield "merge_rows", {"row": row, "sep": sep}
                    break
    for col in range(w):
        # a function of the column alone, which most steps leave as it was: worked out once
        values = tuple(_column(table, col))
        if n > ROWS_MEMO_MAX:  # a long column: not worth keeping
            yield from _column_row_steps(values, col)
            continue
        key = ("rows", col, values)
        found = tgt.memo.get(key)
        if found is None:
            found = tgt.memo[key] = list(_column_row_steps(values, col))
        yield from found


def _column_row_steps(values: tuple, col: int) -> Iterator[Step]:
    """Fill down and delete-by-predicate steps for one whole column."""
    n = len(values)
    blank = [not v.strip() for v in values]
    first = blank.index(False) if False in blank else n
    if any(blank[first + 1:]):  # a blank below some filled cell
        yield "fill_down", {"col": col}
    for pred in _PREDS:
        hits = sum(ops._test(v, pred, "") for v in values)
        if 0 < hits < n:
            yield "delete_rows", {"col": col, "pred": pred, "value": ""}


def _reshape(table: Table, tgt: Target) -> Iterator[Step]:
    n, w = len(table), width(table)
    for start in range(0, w - 1):
        for size in (1, 2, 3):
            rest = w - start
            if size == 1 or (rest % size == 0 and rest // size >= 2):
                yield "fold", {"start": start, "width": size}
        if n >= 2:
            yield "fold_with_header", {"start": start}
    for hcol in range(w):
        distinct = len(set(_column(table, hcol)))
        if not 2 <= distinct < n or n < 3:
            continue
        vcols = range(w) if w <= 4 else sorted({min(hcol + 1, w - 1), w - 1})
        for vcol in vcols:
            if vcol != hcol:
                for header in ("none", "blank", "first"):
                    yield "unfold", {"hcol": hcol, "vcol": vcol, "header": header}
    sizes = {2, 3}
    if w and tgt.n_cols % w == 0:
        sizes.add(tgt.n_cols // w)
    if tgt.n_rows:
        sizes.update({n // tgt.n_rows, math.ceil(n / tgt.n_rows)})
    for k in sorted(s for s in sizes if 2 <= s < n):
        yield "wrap_rows", {"count": k}
    if n >= 2:
        yield "wrap_all", {}
    for col in range(min(w, 3)):
        values = _column(table, col)
        if values[0].strip() and any(not v.strip() for v in values):
            yield "wrap_records", {"col": col, "pred": "nonempty", "value": ""}
        if 2 <= values.count(values[0]) < n:
            yield "wrap_records", {"col": col, "pred": "equals", "value": values[0]}
        runs = sum(1 for i in range(1, n) if values[i] != values[i - 1]) + 1
        if w >= 2 and runs < n:
            yield "group_by_key", {"col": col}
            for sep in tgt.separators:
                yield "collapse_rows", {"col": col, "sep": sep}
    if w >= 2 and any(sum(1 for v in r if v.strip()) == 1 for r in table):
        yield "lift_group_headers", {}


def _cells(table: Table, tgt: Target) -> Iterator[Step]:
    w = width(table)
    same_rows, grows = len(table) == tgt.n_rows and tgt.n_rows, len(tgt.table) > len(table)
    for col in range(w):
        # parameters are inferred from the first rows: enough to find them, cheap on long tables;
        # they depend on nothing else, so each column's are worked out once per search
        values = tuple(_column(table[:SAMPLE_ROWS], col))
        key = ("cells", col, values, bool(same_rows), grows)
        found = tgt.memo.get(key)
        if found is None:
            found = tgt.memo[key] = list(_column_steps(values, col, tgt, bool(same_rows), grows))
        yield from found
    rows = [r for r in table if len(r) >= 2][:4]
    joined = tgt.joined
    # a merge can only help if both cells are already parts of some target value
    parts = [{c for c, v in enumerate(r) if v and v in joined} for r in rows]
    pairs = {(left, right) for p in parts for left in p for right in p if left != right}
    for left, right in sorted(pairs):
        if w > 12 and abs(left - right) > 1:
            continue
        ok: set = set()
        for r, p in zip(rows, parts):
            if left in p and right in p:
                ok.update(_joins(r[left], r[right], tgt))
        for sep in MERGE_SEPS:
            if sep in ok:
                yield "merge_columns", {"left": left, "right": right, "sep": sep}


def _joins(a: str, b: str, tgt: Target) -> frozenset:
    """The separators that join ``a`` and ``b`` into (part of) a target value, once per pair."""
    key = ("join", a, b)
    found = tgt.memo.get(key)
    if found is None:
        joined = tgt.joined
        found = tgt.memo[key] = frozenset(sep for sep in MERGE_SEPS if sep.join((a, b)) in joined)
    return found


def _column_steps(values: tuple, col: int, tgt: Target, same_rows: bool, grows: bool) -> Iterator[Step]:
    """The cell-level steps for one column, from its first rows' ``values``."""
    finder = tgt.finder
    inside = [v for v in dict.fromkeys(values)
              if v and v not in tgt.values and finder is not None and finder.search(v)]
    for sep in separators(values):
        pieces = [p for v in values for p in v.split(sep)]
        if any(p in tgt.values for p in pieces):
            yield "split_column", {"col": col, "sep": sep}
            yield "split_once", {"col": col, "sep": sep, "from_right": False}
            if any(v.count(sep) > 1 for v in values):
                yield "split_once", {"col": col, "sep": sep, "from_right": True}
            if grows:
                yield "explode", {"col": col, "sep": sep}
    if inside:
        for pat in PATTERNS + tuple(_context_patterns(inside, tgt)):
            rx = re.compile(pat)
            for v in inside:
                m = rx.search(v)
                got = (m.group(1) if rx.groups else m.group(0)) if m else None
                if got and got != v and got in tgt.values:
                    yield "extract", {"col": col, "pattern": pat}
                    break
    if same_rows:
        for pattern, template in _rewrites(list(values), list(tgt.table[:SAMPLE_ROWS]), col):
            yield "rewrite_cells", {"col": col, "pattern": pattern, "template": template}
    filled = [v for v in values if v.strip()]
    kinds = {ops._test(v, "numeric", "") for v in filled}
    if len(kinds) == 2:
        yield "divide", {"col": col, "pred": "numeric", "value": ""}
        yield "divide", {"col": col, "pred": "not_numeric", "value": ""}
    for mark in _marks(filled):
        yield "divide", {"col": col, "pred": "contains", "value": mark}
        yield "divide", {"col": col, "pred": "not_contains", "value": mark}


def _marks(cells: list[str], limit: int = 4) -> list[str]:
    """Punctuation marks found in some but not all cells: they tell two kinds of cell apart."""
    counts = Counter(ch for v in cells for ch in set(v) if not ch.isalnum() and not ch.isspace())
    marks = [ch for ch, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if 0 < k < len(cells)]
    return marks[:limit]


def _columns(table: Table, tgt: Target) -> Iterator[Step]:
    w = width(table)
    top = table[0] if table else []
    names = list(tgt.table[0]) if has_header(tgt.table) else []
    if names and list(top) != names and all(v in top for v in names):
        cells = Counter(c for r in table for c in r)
        if all(cells[v] == 1 for v in names):
            yield "select_columns", {"names": names}
    for col in range(w):
        yield "drop_column", {"col": col}
    for src in range(w):
        dsts = range(w) if w <= 6 else sorted({0, w - 1, max(src - 1, 0), min(src + 1, w - 1)})
        for dst in dsts:
            if dst != src and dst != src - 1:  # moving src to src-1 equals moving src-1 to src
                yield "move_column", {"src": src, "dst": dst}
    for col in range(w):
        yield "copy_column", {"col": col}


def _specific(table: Table, tgt: Target) -> Iterator[Step]:
    n = len(table)
    if has_header(tgt.table) and tgt.table[0] not in {tuple(r) for r in table}:
        present = {c for r in table for c in r}
        if any(v and v not in present for v in tgt.table[0]):
            yield "insert_row", {"values": list(tgt.table[0])}
    foreign = Counter(c for r in table for c in r if c.strip() and c not in tgt.values)
    joined_tgt = "\x1f".join(tgt.values)
    # words before numbers: a label ("Total", "Note") marks the rows to drop, a number is data
    for value, _ in sorted(foreign.items(), key=lambda kv: (not _has_letter(kv[0]), -kv[1], kv[0]))[:3]:
        yield "delete_rows", {"col": -1, "pred": "equals", "value": value}
    tokens = Counter(t for c in foreign for t in set(_TOKEN.findall(c)) if t not in joined_tgt)
    for token, _ in sorted(tokens.items(), key=lambda kv: (not _has_letter(kv[0]), -kv[1], kv[0]))[:3]:
        yield "delete_rows", {"col": -1, "pred": "contains", "value": token}
    if any(not c.strip() for r in table for c in r):
        yield "delete_rows", {"col": -1, "pred": "empty", "value": ""}
    for k in (1, 2, 3):
        if n > k:
            yield "delete_first_rows", {"count": k}
    for k in (1, 2):
        if n > k:
            yield "delete_last_rows", {"count": k}


def _has_letter(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def propose(table: Table, tgt: Target) -> Iterator[Step]:
    """Every step worth trying on ``table`` given the target, general steps first."""
    for source in (_whole_table, _rows, _reshape, _cells, _columns, _specific):
        yield from source(table, tgt)
