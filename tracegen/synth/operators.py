"""Table operators of the synthesizer: pure functions on tables (lists of rows of strings).

These functions are the single definition of what each program step does: the search calls them
in-process and ``codegen`` copies their source, verbatim, into the emitted ``transform`` program.
So every function here
- uses only builtins, ``re`` and the private helpers of this module (codegen finds them by name);
- reads no module-level constant, never mutates its argument and returns fresh row lists;
- never raises on a table of strings of any shape: a column past the end of a row reads as an
  empty cell, so a program learned on the example also runs on a new input of another shape.

Covered: the layout operators of Foofah / Potter's Wheel / Data Wrangler (drop, move, copy, merge,
split, extract, delete, fill, divide, fold, unfold, transpose, wrap, explode, trim) and a few
spreadsheet chores beyond them: select columns by name, put a header row on top, turn group
title rows into a column, join or collapse rows that share a key, drop repeated rows.
Cell text is rewritten only by ``rewrite_cells``: a cell matching a token pattern becomes a
template of fixed text and the pattern's captured pieces (dates reordered, units or prefixes added).
Not covered: arithmetic, sorting, case changes and lookups.
"""
from __future__ import annotations

import re


# ---------------------------------------------------------------- helpers

def _cell(row, col):
    return row[col] if 0 <= col < len(row) else ""


def _padded(row, width):
    short = width - len(row)
    return list(row) + [""] * short if short > 0 else list(row)


def _rectangle(table):
    width = max((len(row) for row in table), default=0)
    return [_padded(row, width) for row in table]


def _test(cell, pred, value):
    """Does one cell satisfy a row predicate? Empty means blank after trimming spaces."""
    text = cell.strip()
    if pred == "empty":
        return text == ""
    if pred == "nonempty":
        return text != ""
    if pred == "numeric":
        return re.fullmatch(r"[-+]?[$\u20ac\u00a3]?(\d[\d,]*(\.\d*)?|\.\d+)%?", text) is not None
    if pred == "not_numeric":
        return not _test(cell, "numeric", value)
    if pred == "contains":
        return value in cell
    if pred == "not_contains":
        return value not in cell
    if pred == "equals":
        return cell == value
    return False


# ---------------------------------------------------------------- columns

def drop_column(table, col):
    """Remove column `col`."""
    return [list(row[:col]) + list(row[col + 1:]) for row in table]


def move_column(table, src, dst):
    """Move column `src` so that it ends up at position `dst`."""
    out = []
    for row in table:
        cells = _padded(row, max(src, dst) + 1)
        cells.insert(dst, cells.pop(src))
        out.append(cells)
    return out


def copy_column(table, col):
    """Insert a copy of column `col` right after it."""
    out = []
    for row in table:
        cells = _padded(row, col + 1)
        out.append(cells[:col + 1] + [cells[col]] + cells[col + 1:])
    return out


def merge_columns(table, left, right, sep):
    """Join the non-empty cells of columns `left` and `right` with `sep` into column `left`."""
    out = []
    for row in table:
        cells = _padded(row, max(left, right) + 1)
        cells[left] = sep.join(v for v in (cells[left], cells[right]) if v)
        del cells[right]
        out.append(cells)
    return out


def split_column(table, col, sep):
    """Split column `col` at every `sep` into as many columns as the longest split needs."""
    parts = [_cell(row, col).split(sep) for row in table]
    width = max((len(p) for p in parts), default=1)
    out = []
    for row, p in zip(table, parts):
        cells = _padded(row, col + 1)
        out.append(cells[:col] + p + [""] * (width - len(p)) + cells[col + 1:])
    return out


def split_once(table, col, sep, from_right):
    """Split column `col` in two at the first (or last) `sep`; cells without it stay left."""
    out = []
    for row in table:
        cells = _padded(row, col + 1)
        text = cells[col]
        head, found, tail = text.rpartition(sep) if from_right else text.partition(sep)
        pair = [head, tail] if found else [text, ""]
        out.append(cells[:col] + pair + cells[col + 1:])
    return out


def extract(table, col, pattern):
    """Insert after column `col` the first match of `pattern` (its group 1 if it has one)."""
    out = []
    for row in table:
        cells = _padded(row, col + 1)
        m = re.search(pattern, cells[col])
        value = (m.group(1) if m.re.groups else m.group(0)) if m else ""
        out.append(cells[:col + 1] + [value or ""] + cells[col + 1:])
    return out


def rewrite_cells(table, col, pattern, template):
    """Rewrite each cell of column `col` that matches `pattern` whole as `template` (fixed text
    and the pattern's groups, \\g<1> ...); cells that do not match stay as they are."""
    out = []
    for row in table:
        cells = list(row)
        if col < len(cells):
            m = re.match(pattern, cells[col])
            if m and m.end() == len(cells[col]):
                # the first match at the start spans the cell: it is the whole-cell match, and
                # re.sub reuses the parsed template where Match.expand parses it on every call
                cells[col] = re.sub(pattern, template, cells[col], count=1)
            elif m:  # a shorter first match (a lazy group): the whole-cell match may still exist
                m = re.fullmatch(pattern, cells[col])
                if m:
                    cells[col] = m.expand(template)
        out.append(cells)
    return out


def divide(table, col, pred, value):
    """Divide column `col` in two: cells satisfying the predicate stay, the others move right."""
    out = []
    for row in table:
        cells = _padded(row, col + 1)
        text = cells[col]
        keep = text if _test(text, pred, value) else ""
        moved = "" if keep or not text.strip() else text
        out.append(cells[:col] + [keep, moved] + cells[col + 1:])
    return out


def select_columns(table, names):
    """Keep the columns whose name in row 0 is one of `names`, in that order."""
    header = list(table[0]) if table else []
    picked = [header.index(n) for n in names if n in header]
    return [[_cell(row, c) for c in picked] for row in table]


def delete_empty_columns(table):
    """Remove the columns whose cells are all blank."""
    rect = _rectangle(table)
    keep = [c for c in range(len(rect[0]) if rect else 0) if any(row[c].strip() for row in rect)]
    return [[row[c] for c in keep] for row in rect]


def strip_cells(table):
    """Trim leading and trailing whitespace from every cell."""
    return [[cell.strip() for cell in row] for row in table]


# ---------------------------------------------------------------- rows

def insert_row(table, values):
    """Put a row of fixed text on top (a header the table does not have yet)."""
    return [list(values)] + [list(row) for row in table]


def delete_empty_rows(table):
    """Remove the rows whose cells are all blank."""
    return [list(row) for row in table if any(cell.strip() for cell in row)]


def delete_rows(table, col, pred, value):
    """Remove the rows whose cell in column `col` satisfies the predicate (col -1: any cell)."""
    if col < 0:
        return [list(row) for row in table if not any(_test(c, pred, value) for c in row)]
    return [list(row) for row in table if not _test(_cell(row, col), pred, value)]


def delete_first_rows(table, count):
    """Remove the first `count` rows."""
    return [list(row) for row in table[count:]]


def delete_last_rows(table, count):
    """Remove the last `count` rows."""
    return [list(row) for row in table[:max(len(table) - count, 0)]]


def fill_down(table, col):
    """Fill blank cells of column `col` with the nearest non-blank cell above."""
    out, last = [], ""
    for row in table:
        cells = _padded(row, col + 1)
        if cells[col].strip():
            last = cells[col]
        else:
            cells[col] = last
        out.append(cells)
    return out


def fill_right(table, row):
    """Fill blank cells of row `row` with the nearest non-blank cell to their left (a header
    cell spanning several columns)."""
    out = [list(r) for r in table]
    if 0 <= row < len(out):
        last = ""
        for c, v in enumerate(out[row]):
            if v.strip():
                last = v
            else:
                out[row][c] = last
    return out


def merge_rows(table, row, sep):
    """Join row `row` and the row below it cell by cell with `sep` (two header rows become one)."""
    if not 0 <= row < len(table) - 1:
        return [list(r) for r in table]
    top, low = table[row], table[row + 1]
    width = max(len(top), len(low))
    merged = [sep.join(v for v in (_cell(top, c), _cell(low, c)) if v) for c in range(width)]
    return [list(r) for r in table[:row]] + [merged] + [list(r) for r in table[row + 2:]]


def delete_duplicate_rows(table):
    """Keep only the first of identical rows."""
    seen, out = set(), []
    for row in table:
        if tuple(row) not in seen:
            seen.add(tuple(row))
            out.append(list(row))
    return out


def lift_group_headers(table):
    """Rows holding a single non-blank cell are group titles: remove them, and give every other
    row a new first column with the latest title above it."""
    out, title = [], ""
    for row in table:
        filled = [v for v in row if v.strip()]
        if len(filled) == 1 and len(row) > 1:
            title = filled[0]
        else:
            out.append([title] + list(row))
    return out


def explode(table, col, sep):
    """Give each `sep`-separated piece of column `col` its own copy of the row."""
    out = []
    for row in table:
        cells = _padded(row, col + 1)
        for piece in cells[col].split(sep):
            out.append(cells[:col] + [piece] + cells[col + 1:])
    return out


# ---------------------------------------------------------------- reshaping

def transpose(table):
    """Rows become columns."""
    return [list(col) for col in zip(*_rectangle(table))]


def fold(table, start, width):
    """Each row becomes one row per group of `width` cells from column `start` on, keyed by the
    cells before `start`."""
    out = []
    for row in table:
        keys = _padded(row[:start], start)
        for c in range(start, len(row), width):
            out.append(keys + _padded(row[c:c + width], width))
    return out


def fold_with_header(table, start):
    """Like fold with width 1, but each value row also gets its column's name from row 0."""
    if not table:
        return []
    header = table[0]
    out = []
    for row in table[1:]:
        keys = _padded(row[:start], start)
        for c in range(start, len(row)):
            out.append(keys + [_cell(header, c), row[c]])
    return out


def unfold(table, hcol, vcol, header):
    """Spread column `vcol` into one column per distinct value of column `hcol`, one row per
    distinct key (the other columns). `header`: "none"; "blank" adds a first row naming the new
    columns; "first" also reads row 0 as the header of the table and keeps its key names."""
    rect = _rectangle(table)
    top = rect[0] if header == "first" and rect else None
    if top is not None:
        rect = rect[1:]
    seen, rows = {}, {}  # the new column names in order of appearance, as dict keys
    for row in rect:
        key = tuple(v for c, v in enumerate(row) if c not in (hcol, vcol))
        name = _cell(row, hcol)
        seen[name] = None
        rows.setdefault(key, {})[name] = _cell(row, vcol)
    names = list(seen)
    out = [list(key) + [values.get(n, "") for n in names] for key, values in rows.items()]
    if top is not None:
        out.insert(0, [v for c, v in enumerate(top) if c not in (hcol, vcol)] + names)
    elif header == "blank":
        width = max(len(rect[0]) - 2, 0) if rect else 0
        out.insert(0, [""] * width + names)
    return out


def wrap_rows(table, count):
    """Join every `count` consecutive rows into one row."""
    groups = [sum((list(r) for r in table[i:i + count]), []) for i in range(0, len(table), count)]
    return _rectangle(groups)


def wrap_all(table):
    """Join all rows into a single row."""
    return [sum((list(r) for r in table), [])] if table else []


def wrap_records(table, col, pred, value):
    """Join rows into records: a record starts at each row whose column `col` satisfies the
    predicate; the rows before the first such row form a record of their own."""
    groups = []
    for row in table:
        if not groups or _test(_cell(row, col), pred, value):
            groups.append([])
        groups[-1].extend(row)
    return _rectangle(groups)


def group_by_key(table, col):
    """Join each run of consecutive rows with the same cell in column `col` into one row: that
    cell, then the other cells of every row of the run."""
    groups, last = [], None
    for row in table:
        key = _cell(row, col)
        if not groups or key != last:
            groups.append([key])
            last = key
        groups[-1].extend(v for c, v in enumerate(row) if c != col)
    return _rectangle(groups)


def collapse_rows(table, col, sep):
    """Join each run of consecutive rows with the same cell in column `col` into one row; each
    other column holds the run's non-blank cells joined with `sep`."""
    width = max([len(row) for row in table] + [col + 1])
    groups = []
    for row in table:
        row = _padded(row, width)
        if groups and row[col] == groups[-1][0][col]:
            groups[-1].append(row)
        else:
            groups.append([row])
    return [[g[0][c] if c == col else sep.join(r[c] for r in g if r[c].strip()) for c in range(len(g[0]))]
            for g in groups]
