"""Reshaping families: fold/unfold, transpose, wrapping records, flattening and exploding.

Each ``_make_*`` returns a Draw for case ``k``; the family list at the bottom holds the
metadata. Sizes follow real use: the new input usually has more rows, groups or columns than
the example.
"""
from __future__ import annotations

import random

from cases.generators import ops
from cases.generators import words as w
from cases.generators.spec import Draw, Family


def _make_fold_with_header(rng: random.Random, k: int) -> Draw:
    key_name, pool, value_name, lo, hi = rng.choice((
        ("Region", w.REGIONS, "Sales", 1200, 48000),
        ("Store", tuple(c[0] for c in w.CITIES), "Visitors", 300, 9000),
        ("Product", w.PRODUCTS, "Units", 5, 900),
    ))
    col_name, col_maker = rng.choice((
        ("Quarter", lambda n: w.quarters(rng.randint(2020, 2023), n)),
        ("Month", lambda n: [f"{m} {y}" for y in [rng.randint(2021, 2024)] for m in w.MONTHS[:n]]),
        ("Year", lambda n: [str(y) for y in range(rng.randint(2015, 2020), 2030)][:n]),
    ))

    def table(n_rows: int, n_cols: int) -> list[list[str]]:
        cols = col_maker(n_cols)
        return [[key_name] + cols] + [
            [key] + [w.count(rng, lo, hi) for _ in cols] for key in w.distinct(rng, pool, n_rows)
        ]

    n_ex = rng.choice((2, 3))
    example = table(rng.randint(2, 3), n_ex)
    test = table(rng.randint(3, 4), 5 - n_ex)
    return Draw(example, test, lambda t: ops.fold(t, 1, header=True, names=(col_name, value_name)))


def _make_fold_no_header(rng: random.Random, k: int) -> Draw:
    kind = rng.choice(("scores", "phones", "emails"))

    def value(first: str, last: str) -> str:
        if kind == "scores":
            return str(rng.randint(55, 100))
        return w.phone(rng) if kind == "phones" else w.email(rng, first, last)

    def table(n_rows: int, n_vals: int) -> list[list[str]]:
        return [[f"{f} {l}"] + [value(f, l) for _ in range(n_vals)] for f, l in w.names(rng, n_rows)]

    example = table(3, 2) if rng.random() < 0.7 else table(3, 3)
    test = table(4, 3) if rng.random() < 0.6 else table(rng.randint(4, 6), 2)
    return Draw(example, test, lambda t: ops.fold(t, 1))


def _make_unfold_pivot(rng: random.Random, k: int) -> Draw:
    key_name, keys, attr_name, attrs, maker = rng.choice((
        ("Employee", [f"{f} {l}" for f, l in w.names(rng, 6)], "Month", list(w.MONTHS[:4]),
         lambda: str(rng.randint(80, 180))),
        ("Store", [c[0] for c in w.CITIES[:6]], "Metric", ["Revenue", "Orders", "Returns", "Visitors"],
         lambda: w.count(rng, 10, 25000)),
        ("Student", [f"{f} {l}" for f, l in w.names(rng, 6)], "Subject", list(w.SUBJECTS[:4]),
         lambda: rng.choice(("A", "A-", "B+", "B", "B-", "C+", "C"))),
    ))
    header = [key_name, attr_name, "Value"]

    def table(n_keys: int, n_attrs: int) -> list[list[str]]:
        chosen = rng.sample(attrs, n_attrs)
        return [header] + [[key, a, maker()] for key in rng.sample(keys, n_keys) for a in chosen]

    example = table(2, 2) if k % 2 else table(3, 2)
    test = table(3, 3) if rng.random() < 0.5 else table(rng.choice((3, 4)), 2 + (k % 2))
    return Draw(example, test, lambda t: ops.unfold(t, header=True))


def _make_transpose(rng: random.Random, k: int) -> Draw:
    fields = rng.choice((
        ("Name", "Department", "Office", "Phone"),
        ("Product", "SKU", "Price", "Stock"),
        ("Metric", "Jan", "Feb", "Mar"),
    ))

    def record(field: str) -> str:
        return {
            "Name": lambda: w.full_name(rng),
            "Department": lambda: rng.choice(w.DEPARTMENTS),
            "Office": lambda: w.city(rng)[0],
            "Phone": lambda: w.phone(rng),
            "Product": lambda: rng.choice(w.PRODUCTS),
            "SKU": lambda: w.product_code(rng, (2, 4, 0), sep=""),
            "Price": lambda: "$" + w.amount(rng, 5, 400),
            "Stock": lambda: str(rng.randint(0, 250)),
            "Metric": lambda: rng.choice(("Revenue", "Orders", "Refunds", "Signups", "Churn")),
        }.get(field, lambda: w.count(rng, 100, 9000))()

    def table(n_items: int) -> list[list[str]]:
        cols = [[record(f) for f in fields] for _ in range(n_items)]
        return [[f] + [c[i] for c in cols] for i, f in enumerate(fields)]

    n_fields = rng.choice((3, 4))
    fields = fields[:n_fields]
    example = table(2)
    test = table(rng.choice((3, 4)))
    return Draw(example, test, ops.transpose)


def _address_lines(rng: random.Random, n_lines: int) -> list[str]:
    first, last = w.names(rng, 1)[0]
    city, state, zip3 = w.city(rng)
    lines = [f"{first} {last}", w.street_address(rng), f"{city}, {state} {w.zip_code(rng, zip3)}", w.phone(rng)]
    if n_lines == 2:
        return [lines[0], w.email(rng, first, last)]
    return lines[:n_lines]


def _make_wrap_every_k(rng: random.Random, k: int) -> Draw:
    size = (3, 2, 4, 3, 2)[k - 1]

    def table(n_records: int) -> list[list[str]]:
        return [[line] for _ in range(n_records) for line in _address_lines(rng, size)]

    n_ex = 3 if size == 2 else 2
    example = table(n_ex)
    test = table(min(12 // size, n_ex + rng.randint(1, 2)))
    return Draw(example, test, lambda t: [[r[0] for r in c] for c in ops.chunk(t, size)])


def _wrap_by_key(t: list[list[str]]) -> list[list[str]]:
    return ops.pad([[g[0][0]] + [r[1] for r in g] for g in ops.group_consecutive(t)])


def _wrap_every_2(t: list[list[str]]) -> list[list[str]]:
    return ops.pad([[c[0][0]] + [r[1] for r in c] for c in ops.chunk(t, 2)])


def _make_wrap_by_key(rng: random.Random, k: int) -> Draw:
    def order_rows(sizes: list[int]) -> list[list[str]]:
        order_id = rng.randint(10000, 90000)
        rows = []
        for n in sizes:
            order_id += rng.randint(1, 9)  # increasing, so neighbouring orders never share an id
            rows += [[f"SO-{order_id}", item] for item in w.distinct(rng, w.PRODUCTS, n)]
        return rows

    # At most two of the sizes are 2, so the example never has equal-sized groups (which
    # would make "wrap every n rows" fit as well).
    ex_sizes = rng.sample([1, 2, 3, 2], rng.choice((3, 4)))
    test_sizes = [rng.randint(1, 3) for _ in range(rng.randint(4, 5))]
    return Draw(order_rows(ex_sizes), order_rows(test_sizes), _wrap_by_key)


def _make_wrap_contact_lines(rng: random.Random, k: int) -> Draw:
    def contact_rows(sizes: list[int]) -> list[list[str]]:
        rows = []
        for (first, last), n in zip(w.names(rng, len(sizes)), sizes):
            values = [w.phone(rng), w.phone(rng), w.email(rng, first, last)]
            values = values[-n:] if n < 3 else values
            rows += [[f"{first} {last}", v] for v in values]
        return rows

    example = contact_rows([2] * rng.choice((2, 3, 4)))
    test_sizes = [3, 1] + [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
    rng.shuffle(test_sizes)
    return Draw(example, contact_rows(test_sizes), _wrap_by_key, alternative=_wrap_every_2)


def _make_flatten_groups(rng: random.Random, k: int) -> Draw:
    sep = ("; ", ", ", "; ", " / ", ", ")[k - 1]
    label = rng.choice(("Team", "Project", "Shift"))
    pool = {"Team": ("Falcon", "Orion", "Atlas", "Nova", "Delta", "Summit"),
            "Project": ("Website Redesign", "Q3 Audit", "Warehouse Move", "CRM Rollout", "Hiring Plan"),
            "Shift": ("Morning", "Afternoon", "Evening", "Night", "Weekend")}[label]

    def table(sizes: list[int]) -> list[list[str]]:
        rows = []
        for group, n in zip(w.distinct(rng, pool, len(sizes)), sizes):
            rows.append([f"{label} {group}" if label == "Team" else group, ""])
            rows += [["", f"{f} {l}"] for f, l in w.names(rng, n)]
        return rows

    def program(t: list[list[str]]) -> list[list[str]]:
        out: list[list[str]] = []
        for head, member in t:
            if head.strip():
                out.append([head, []])
            else:
                out[-1][1].append(member)
        return [[head, sep.join(members)] for head, members in out]

    example = table([rng.randint(2, 3), rng.randint(1, 3)])
    test = table([rng.randint(1, 3) for _ in range(3)])
    return Draw(example, test, program)


def _make_explode_list(rng: random.Random, k: int) -> Draw:
    sep = (", ", "; ", ",", " / ", "; ")[k - 1]
    kind = rng.choice(("project", "product"))

    def row() -> list[str]:
        if kind == "project":
            head = rng.choice(("Budget Review", "Office Move", "Vendor Audit", "Launch Plan", "Q4 Forecast",
                               "Training Day", "Website Refresh", "Inventory Count"))
            items = [f"{f} {l}" for f, l in w.names(rng, rng.randint(1, 3))]
        else:
            head = w.product_code(rng, (2, 4, 2))
            items = w.distinct(rng, w.TAGS, rng.randint(1, 3))
        return [head, sep.join(items)]

    example = [row() for _ in range(3)]
    while all(sep not in r[1] for r in example):
        example = [row() for _ in range(3)]
    test = [row() for _ in range(rng.randint(4, 5))]

    def program(t: list[list[str]]) -> list[list[str]]:
        return [[head, item] for head, items in t for item in items.split(sep)]

    return Draw(example, test, program)


FAMILIES = (
    Family("fold_with_header", "Unpivot period columns into (key, period, value) rows under a new header.",
           "reshape", ("fold keeping the header",), _make_fold_with_header),
    Family("fold_no_header", "Unpivot each row's values into one (name, value) row per value; no header.",
           "reshape", ("fold",), _make_fold_no_header),
    Family("unfold_pivot", "Pivot (key, attribute, value) rows into one row per key with a column per attribute.",
           "reshape", ("unfold",), _make_unfold_pivot),
    Family("transpose_record_card", "Turn a field-per-row record card into a header row plus one row per record.",
           "reshape", ("transpose",), _make_transpose),
    Family("wrap_every_k", "Mailing labels listed one line per cell; join every k lines into one row.",
           "reshape", ("wrap every k rows",), _make_wrap_every_k),
    Family("wrap_by_key", "Order lines keyed by order id; one row per order with its items side by side.",
           "reshape", ("wrap rows sharing a key",), _make_wrap_by_key),
    Family("wrap_contact_lines", "Contact details on consecutive lines per person; one row per person.",
           "reshape", ("wrap rows sharing a key",), _make_wrap_contact_lines,
           ambiguous_why="every person in the example has exactly 2 lines, so 'wrap every 2 rows' fits too"),
    Family("flatten_groups", "Group heading rows followed by member rows; one row per group with members joined.",
           "reshape", ("flatten nested groups",), _make_flatten_groups),
    Family("explode_list", "A cell holding a delimited list becomes one row per item.",
           "reshape", ("split a cell into rows",), _make_explode_list),
)
