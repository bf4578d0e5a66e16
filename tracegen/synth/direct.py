"""The direct guesser: answer the new input without writing a program, by copying cells.

Each non-blank cell of the example output is traced to the example-input cells holding the same
text. The guesser then looks for a period: the smallest block of ``p`` output rows such that the
next block reads the same columns from sources shifted by one fixed step ``(dr, dc)``. The first
block becomes a template whose cells are either strided (shifted by ``k * step`` for the k-th
block), fixed (the same input cell every block, like a header name), or constant text. On the new
input the template is repeated for as long as its strided sources stay inside the table.
Without a period, each cell is copied from the same place, counted from the end of the table when
its source lies in the bottom half of the example input.

It is cheap and independent of the search: right on copy/reorder/fold-like cases, and honestly
wrong when cells are rewritten (split, merge, extract) or the layout depends on content.
"""
from __future__ import annotations

from collections import Counter

Table = list[list[str]]
_MAX_SOURCES = 6  # per output cell; repeated values (like "0") would otherwise blow up the votes
_MIN_SUPPORT = 0.6
_MAX_ROWS = 10_000
_MAX_PERIOD = 24  # longer blocks are not worth finding: the guess is cheap by design
_VOTE_ROWS = 60


def _sources(example_in: Table, example_out: Table) -> list[list[list[tuple[int, int]]]]:
    where: dict[str, list[tuple[int, int]]] = {}
    for r, row in enumerate(example_in):
        for c, v in enumerate(row):
            if v.strip():
                where.setdefault(v, []).append((r, c))
    return [[where.get(v, [])[:_MAX_SOURCES] if v.strip() else [] for v in row] for row in example_out]


def _period(src) -> tuple[int, tuple[int, int] | None]:
    """Smallest block height whose successor block is the same cells shifted by one step."""
    n = len(src)
    for p in range(1, min(n, _MAX_PERIOD + 1)):
        votes: Counter = Counter()
        total = 0
        for r in range(min(n - p, _VOTE_ROWS)):
            for c, here in enumerate(src[r]):
                there = src[r + p][c] if c < len(src[r + p]) else []
                if here and there:
                    total += 1
                    votes.update({(b[0] - a[0], b[1] - a[1]) for a in here for b in there})
        votes.pop((0, 0), None)
        if total and votes:
            step, count = min(votes.items(), key=lambda kv: (-kv[1], abs(kv[0][0]) + abs(kv[0][1]), kv[0]))
            if count / total >= _MIN_SUPPORT:
                return p, step
    return n, None


def _template(example_in: Table, example_out: Table, src, p: int, step) -> list[list[tuple]]:
    """Per cell of the first block: ("stride", (r, c)), ("fixed", (r, c)) or ("text", value)."""
    n = len(example_out)

    def later_value(i: int, c: int, k: int) -> str | None:
        row = example_out[i + k * p]
        return row[c] if c < len(row) else None

    rows = []
    for i in range(min(p, n)):
        later = range(1, (n - 1 - i) // p + 1)  # the blocks below that have this row
        cells = []
        for c, value in enumerate(example_out[i]):
            choice = ("text", value)
            strided = [a for a in src[i][c] if step and all(
                _read(example_in, a[0] + k * step[0], a[1] + k * step[1]) == later_value(i, c, k)
                for k in later)]
            if strided:
                choice = ("stride", strided[0])
            elif src[i][c] and all(later_value(i, c, k) == value for k in later):
                choice = ("fixed", src[i][c][0])
            cells.append(choice)
        rows.append(cells)
    return rows


def _read(table: Table, r: int, c: int) -> str | None:
    if 0 <= r < len(table) and 0 <= c < len(table[r]):
        return table[r][c]
    return None


def guess_direct(example_in: Table, example_out: Table, test_in: Table) -> Table:
    """Guess the output for ``test_in`` from the example by cell copying (see module doc)."""
    if not example_out:
        return []
    src = _sources(example_in, example_out)
    p, step = _period(src)
    template = _template(example_in, example_out, src, p, step)
    n_in = len(example_in)
    if not any(kind == "stride" for cells in template for kind, _ in cells):
        step = None
    if step is None:
        out = []
        for i, cells in enumerate(template):
            row = []
            for kind, what in cells:
                if kind == "text":
                    row.append(what)
                    continue
                r, c = what
                if r >= n_in / 2 and n_in > 1:
                    r = len(test_in) - (n_in - r)
                row.append(_read(test_in, r, c) or "")
            out.append(row)
        return out
    out = []
    for k in range(_MAX_ROWS):
        cells = template[k % len(template)]
        block = k // len(template)
        row = []
        for kind, what in cells:
            if kind == "text":
                row.append(what)
            elif kind == "fixed":
                row.append(_read(test_in, *what) or "")
            else:
                value = _read(test_in, what[0] + block * step[0], what[1] + block * step[1])
                if value is None:
                    return out
                row.append(value)
        out.append(row)
    return out
