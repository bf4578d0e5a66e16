"""How far a table is from the example's target: the guide of the search.

A cheap stand-in for Foofah's table edit distance, in rough "steps still needed" units:
- content: target cells missing from the table (half price when the value is still inside a
  longer cell, so a split or extract can recover it; three quarters when its words are spread
  over several cells, so merges can), cells the target does not have, and, cheaper, surplus
  copies of target values (a fill before an unfold makes them);
- layout: target rows and target columns that do not yet appear whole in the table, whether
  the row and column counts differ, and how far the pairs of values sharing a row here are from
  those sharing a target row (a finer signal: a fill or fold moves values into the right rows);
  for a crosstab target, a long table one unfold away scores as well, by its (row head, column
  head, value) triples sharing rows.
``lost`` counts target values that appear nowhere in the table, not even inside a cell or as
words spread over cells; a step that raises it threw away data the answer needs, and the search
prunes it. Header names that ``insert_row`` can write are never lost.
Not covered: the order of rows or columns beyond whole-row / whole-column matches.
"""
from __future__ import annotations

import re
from collections import Counter, _count_elements
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, combinations

_WORD = re.compile(r"\w+")
_SEP_RUN = re.compile(r"[\W_]+")
# weights of the distance terms, in rough "steps" units
W = {"content": 2.0, "extra": 0.5, "surplus": 0.25, "rows": 0.5, "cols": 0.5, "shape": 0.5, "pairs": 1.0}

Table = list[list[str]]
PAIR_MEMO = 50_000  # row value sets whose pairs are kept per target
BIG_ROWS = 64  # target values in a table's rows past which the pairs are counted, not made
LAYOUT_MEMO = 50_000  # rows' target-value sets whose pair / triple score is kept per target
LAYOUT_MEMO_ROWS = 200  # ... for tables of at most this many rows


@dataclass(frozen=True)
class Target:
    """What the distance needs to know about one target table, computed once."""

    table: tuple
    counts: Counter
    values: frozenset  # distinct non-empty cells
    rows: frozenset
    cols: frozenset
    n_rows: int
    n_cols: int
    n_cells: int
    pairs: frozenset  # pairs of distinct values sharing a row
    triples: tuple  # crosstab targets only: (row head, column head, value) of each body cell
    insertable: frozenset  # header names an ``insert_row`` step can write: never counted as lost
    once: frozenset  # values the target holds once
    repeated: tuple  # (value, count) of the values it holds more than once

    @cached_property
    def memo(self) -> dict:
        """Parameters the library inferred against this target, by the column they came from."""
        return {}

    @cached_property
    def pair_memo(self) -> dict:
        """The value pairs of a row's set of target values, by that set (``_pair_score``)."""
        return {}

    @cached_property
    def partners(self) -> dict:
        """Each value of a target pair, with the values it shares a target row with."""
        out: dict = {}
        for a, b in self.pairs:
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
        return {v: frozenset(p) for v, p in out.items()}

    @cached_property
    def layout_memo(self) -> dict:
        """The pair / triple score of a table's rows, by their target values (``_layout``)."""
        return {}

    @cached_property
    def joined(self) -> str:
        """All distinct target values in one string, for substring tests."""
        return "\x1f".join(sorted(self.values))

    @cached_property
    def separators(self) -> list[str]:
        """Punctuation runs inside target cells, most frequent first (for joining cells)."""
        return separators(sorted(self.values), limit=3)

    @cached_property
    def finder(self):
        """A regex finding any target value inside a text (longest first), or None."""
        if not self.values:
            return None
        return re.compile("|".join(re.escape(v) for v in sorted(self.values, key=lambda v: (-len(v), v))))

    @cached_property
    def tokens(self) -> dict:
        """The words of each target value (what a merge of several cells must supply)."""
        return {v: tuple(_WORD.findall(v)) or (v,) for v in self.values}

    @classmethod
    def of(cls, table: Table) -> "Target":
        rows = [tuple(r) for r in table]
        counts = Counter(c for r in rows for c in r if c)
        return cls(
            table=tuple(rows), counts=counts, values=frozenset(counts),
            rows=frozenset(rows), cols=frozenset(columns(table)),
            n_rows=len(rows), n_cols=max((len(r) for r in rows), default=0),
            n_cells=max(sum(counts.values()), 1),
            pairs=frozenset(p for r in rows for p in combinations(sorted({c for c in r if c}), 2)),
            triples=_crosstab_triples(rows),
            insertable=frozenset(rows[0]) if has_header(rows) else frozenset(),
            once=frozenset(v for v, k in counts.items() if k == 1),
            repeated=tuple((v, k) for v, k in counts.items() if k > 1),
        )


def separators(cells: list[str], limit: int = 4) -> list[str]:
    """Punctuation runs inside cells (not at their ends), most frequent first, and their parts."""
    counts: Counter = Counter()
    for text in cells:
        found = set()
        for m in _SEP_RUN.finditer(text):
            if m.start() == 0 or m.end() == len(text):
                continue
            run = m.group()
            found.add(run)
            if len(run) > 1:
                found.update(run)
        counts.update(found)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))
    return [sep for sep, _ in ranked[:limit]]



_NUMBER = re.compile(r"[-+]?[$\u20ac\u00a3]?(\d[\d,]*(\.\d*)?|\.\d+)%?")


def header_like(row, below=None) -> bool:
    """Column names: words without digits or '@' (data rarely looks so), no repeats. Given the
    row ``below``, names with digits ("Profit 2022", "Q1") count too when some name sits above
    a number: a data row is rarely all words over a row of numbers."""
    if not row or len(set(row)) != len(row) or not all(
            any(ch.isalpha() for ch in v) and "@" not in v for v in row):
        return False
    if not any(ch.isdigit() for v in row for ch in v):
        return True
    return below is not None and any(_NUMBER.fullmatch(b.strip()) for b in below[:len(row)])


def has_header(table) -> bool:
    """Does the first row of ``table`` name its columns?"""
    return bool(table) and header_like(table[0], table[1] if len(table) > 1 else None)


def columns(table: Table) -> list[tuple]:
    width = max((len(r) for r in table), default=0)
    if all(len(r) == width for r in table):
        return list(zip(*table))
    return list(zip(*[list(r) + [""] * (width - len(r)) for r in table]))


def distance(table: Table, tgt: Target, max_lost: int | None = None) -> tuple[float | None, int]:
    """(estimated remaining work, number of lost target values); (0, 0) iff equal. With
    ``max_lost``, a table losing more than that many values gets ``(None, lost)`` without the
    layout terms: the search prunes it anyway, so they are not worth computing."""
    low, lost = lower_bound(table, tgt, max_lost)
    if low is None:
        return None, lost
    return finish(table, tgt, low), lost


def lower_bound(table: Table, tgt: Target, max_lost: int | None = None) -> tuple[float | None, int]:
    """``distance`` without its last term, the pair score (the dearest): (a lower bound of its
    h, lost). The bound is the whole sum's own first four terms and the term left out is never
    negative, so it is never above the distance, and ``finish`` adding the term gives the same
    float. With ``max_lost`` exceeded: ``(None, lost)``."""
    counts: dict = {}
    _count_elements(counts, chain.from_iterable(table))  # Counter's own C loop, without its checks
    counts.pop("", None)
    present = tgt.once.intersection(counts)
    # target values needed once (most of them), by set operations; all terms are multiples of
    # 1/4, so the order of the sums does not change the result
    matched = len(present)
    surplus = sum(map(counts.__getitem__, present)) - matched
    missing = 0.0
    absent = [(v, 1) for v in tgt.once.difference(present)]
    for value, need in tgt.repeated:
        have = counts.get(value, 0)
        if have >= need:
            matched += need
            surplus += have - need
        elif have:
            matched += have
            missing += need - have  # more copies needed: a fill or fold away
        else:
            absent.append((value, need))
    lost = 0
    if absent:
        joined = "\x1f".join(counts)
        for value, need in absent:
            if value in joined:
                missing += 0.5 * need
            elif all(tok in joined for tok in tgt.tokens[value]):
                missing += 0.75 * need  # its words are all here, in pieces: a merge can rebuild it
            else:
                missing += need
                lost += value not in tgt.insertable
    if max_lost is not None and lost > max_lost:
        return None, lost
    # surplus copies of target values (a fill before an unfold) cost less than foreign cells
    extra = sum(counts.values()) - matched - surplus
    content = (missing + W["extra"] * extra + W["surplus"] * surplus) / tgt.n_cells
    n_rows = len(table)
    n_cols = max(map(len, table), default=0)
    row_miss = len(tgt.rows.difference(map(tuple, table))) / max(len(tgt.rows), 1)
    # a column of another height is never a target column: skip building the columns
    cols_missing = len(tgt.cols) if n_rows != tgt.n_rows else len(tgt.cols.difference(columns(table)))
    col_miss = cols_missing / max(len(tgt.cols), 1)
    shape = W["shape"] * ((n_rows != tgt.n_rows) + (n_cols != tgt.n_cols))
    return W["content"] * content + W["rows"] * row_miss + W["cols"] * col_miss + shape, lost


def finish(table: Table, tgt: Target, low: float) -> float:
    """The distance's h from ``lower_bound``'s bound: the pair term added last, as the whole sum does."""
    h = low + W["pairs"] * (1.0 - _layout(table, tgt))
    if h == 0 and tuple(map(tuple, table)) != tgt.table:
        h = 0.25  # same cells, rows and columns, yet not equal (order): keep it above a solution
    return h


def _layout(table: Table, tgt: Target) -> float:
    """The better of the pair F1 and the crosstab triple recall. Both read only each row's set
    of target values, which most steps (a column moved, dropped or split off) leave as it was,
    so the score is kept per target by those sets."""
    if not (tgt.pairs or tgt.triples):
        return 1.0  # no pairs to make: a perfect pair score
    kept = tuple(map(tgt.values.intersection, table))
    if len(kept) > LAYOUT_MEMO_ROWS:  # a long table: its keys would cost more memory than they save
        return max(_pair_score(kept, tgt), _triple_recall(kept, tgt))
    memo = tgt.layout_memo
    got = memo.get(kept)
    if got is None:
        got = max(_pair_score(kept, tgt), _triple_recall(kept, tgt))
        if len(memo) < LAYOUT_MEMO:
            memo[kept] = got
    return got


def _crosstab_triples(rows: list[tuple]) -> tuple:
    """For a target whose first row names its columns (blank corner or header words), each body
    cell with its row head and column head: in the long table an unfold turns into this crosstab,
    the three share a row."""
    if len(rows) < 2 or len(rows[0]) < 3 or not (rows[0][0].strip() == "" or has_header(rows)):
        return ()
    head = rows[0]
    return tuple((r[0], head[c], v) for r in rows[1:] for c, v in enumerate(r)
                 if c >= 1 and v and c < len(head) and head[c] and r[0])


def _triple_recall(kept: list, tgt: Target) -> float:
    """Share of crosstab cells whose (row head, column head, value) already share a row
    (``kept``: the target values of each row)."""
    if not tgt.triples:
        return 0.0
    where: dict = {}  # value -> bit mask of the rows holding it
    for i, values in enumerate(kept):
        bit = 1 << i
        for c in values:
            where[c] = where.get(c, 0) | bit
    get = where.get
    hits = sum(1 for a, b, v in tgt.triples if get(a, 0) & get(b, 0) & get(v, 0))
    return hits / len(tgt.triples)


def _pair_score(kept: list, tgt: Target) -> float:
    """F1 of the same-row value pairs here against the target's: recall rewards moving values
    into the right rows, precision keeps piling every value into one row from looking good."""
    if not tgt.pairs:
        return 1.0
    sets = [v for v in set(kept) if len(v) > 1]
    size = sum(map(len, sets))
    if size > BIG_ROWS and len(frozenset().union(*sets)) == size:
        # long rows sharing no value: their pairs are distinct, so count them instead of making
        # them (a row of k values has k(k-1)/2), and the target's pairs among each row's values
        have_n = sum(len(v) * (len(v) - 1) // 2 for v in sets)
        partners = tgt.partners
        hits = sum(len(partners[a] & v) for v in sets for a in v if a in partners) // 2
        return 2 * hits / (have_n + len(tgt.pairs))
    memo = tgt.pair_memo
    have: set = set()
    for values in sets:  # rows holding the same target values give the same pairs
        got = memo.get(values)
        if got is None:  # most steps leave most rows' target values as they were
            got = frozenset(combinations(sorted(values), 2))
            if len(memo) < PAIR_MEMO:
                memo[values] = got
        have.update(got)
    return 2 * len(have & tgt.pairs) / (len(have) + len(tgt.pairs))
