"""Cleanup families: fill down, drop blank/title/total/repeated-header rows, merge two header
rows, dedupe, and drop, reorder or select columns.

Each ``_make_*`` returns a Draw for case ``k``; the family list at the bottom holds the metadata.
"""
from __future__ import annotations

import random

from cases.generators import ops
from cases.generators import words as w
from cases.generators.spec import Draw, Family

Table = list[list[str]]


def sales_groups(rng: random.Random, sizes: list[int]) -> list[tuple[str, list[list[str]]]]:
    """(region, [[rep, sales], ...]) per group; sales are whole dollars with thousands commas."""
    return [
        (region, [[f"{f} {l}", w.count(rng, 800, 40000)] for f, l in w.names(rng, n)])
        for region, n in zip(w.distinct(rng, w.REGIONS, len(sizes)), sizes)
    ]


def _make_fill_down(rng: random.Random, k: int) -> Draw:
    theme = rng.choice(("sales", "orders", "staff"))

    def table(sizes: list[int]) -> Table:
        if theme == "sales":
            rows = [["Region", "Sales Rep", "Sales"]]
            for region, reps in sales_groups(rng, sizes):
                rows += [[region if i == 0 else ""] + rep for i, rep in enumerate(reps)]
            return rows
        if theme == "orders":
            rows = [["Order Date", "Order No", "Item", "Qty"]]
            order = rng.randint(4000, 9000)
            for n in sizes:
                order += rng.randint(1, 40)
                date = w.fmt_date(w.ymd(rng), "us")
                rows += [[date if i == 0 else "", f"#{order}" if i == 0 else "", item, str(rng.randint(1, 12))]
                         for i, item in enumerate(w.distinct(rng, w.PRODUCTS, n))]
            return rows
        rows = [["Department", "Employee", "Title"]]
        for dept, n in zip(w.distinct(rng, w.DEPARTMENTS, len(sizes)), sizes):
            rows += [[dept if i == 0 else "", f"{f} {l}", rng.choice(w.JOB_TITLES)]
                     for i, (f, l) in enumerate(w.names(rng, n))]
        return rows

    cols = [0, 1] if theme == "orders" else [0]
    example = table([rng.randint(2, 3), rng.randint(1, 3)])
    test = table([rng.randint(1, 3) for _ in range(rng.randint(3, 4))])
    return Draw(example, test, lambda t: ops.fill_down(t, cols, start=1))


def _make_drop_blank_rows(rng: random.Random, k: int) -> Draw:
    cols = rng.choice((["Date", "Customer", "Amount"], ["Name", "Email", "Phone"], ["SKU", "Product", "Price"]))

    def table(n_rows: int, n_blank: int) -> Table:
        if cols[0] == "Date":
            body = [[w.fmt_date(w.ymd(rng), "iso"), w.company(rng), w.amount(rng, 20, 5000)]
                    for _ in range(n_rows)]
        elif cols[0] == "Name":
            body = w.staff_table(rng, cols, n_rows)[1:]
        else:
            body = [[w.product_code(rng, (2, 4, 0), sep=""), rng.choice(w.PRODUCTS), w.amount(rng, 3, 300)]
                    for _ in range(n_rows)]
        # Blank rows go between data rows, never only at the end ("drop the last row" would fit).
        for pos in sorted(rng.sample(range(1, n_rows), n_blank), reverse=True):
            body.insert(pos, [""] * len(cols))
        return [list(cols)] + body

    example = table(rng.randint(3, 5), rng.randint(1, 2))
    test = table(rng.randint(5, 8), rng.randint(2, 3))
    return Draw(example, test, lambda t: ops.keep_rows(t, lambda r: not ops.is_blank(r)))


def drop_before_header(t: Table) -> Table:
    """Drop the rows above the first row whose cells are all filled (the header)."""
    start = next(i for i, r in enumerate(t) if all(c.strip() for c in r))
    return ops.copy(t[start:])


def title_rows(rng: random.Random, n: int, width: int, subject: str) -> Table:
    lines = [f"{subject} Report", f"Prepared by {w.full_name(rng)} on {w.fmt_date(w.ymd(rng), 'us')}",
             rng.choice(("Confidential - internal use only", f"Source: {w.company(rng)} ERP export")), ""]
    chosen = lines[:n - 1] + [lines[3]] if n >= 2 else lines[:1]
    return [[line] + [""] * (width - 1) for line in chosen]


def _make_drop_title_rows(rng: random.Random, k: int) -> Draw:
    subject, cols = rng.choice((
        ("Quarterly Expense", ["Date", "Employee", "Category", "Amount"]),
        ("Staff Directory", ["Name", "Department", "Phone", "Email"]),
        ("Inventory", ["SKU", "Product", "On Hand", "Reorder Level"]),
    ))

    def body(n: int) -> Table:
        if subject == "Staff Directory":
            return w.staff_table(rng, cols, n)
        if subject == "Inventory":
            return [cols] + [
                [w.product_code(rng, (2, 4, 0), sep=""), p, str(rng.randint(0, 400)), str(rng.randint(5, 50))]
                for p in w.distinct(rng, w.PRODUCTS, n)
            ]
        categories = ("Travel", "Meals", "Software", "Supplies", "Training")
        return [cols] + [
            [w.fmt_date(w.ymd(rng), "iso"), w.full_name(rng), rng.choice(categories), w.amount(rng, 8, 2400)]
            for _ in range(n)
        ]

    n_ex = 2
    n_test = rng.choice((1, 3, 4))
    example = title_rows(rng, n_ex, len(cols), subject) + body(rng.randint(2, 4))
    test = title_rows(rng, n_test, len(cols), subject) + body(rng.randint(4, 7))
    return Draw(example, test, drop_before_header, alternative=lambda t: ops.copy(t[n_ex:]))


def _make_drop_total_rows(rng: random.Random, k: int) -> Draw:
    def table(sizes: list[int]) -> Table:
        rows = [["Region", "Sales Rep", "Sales"]]
        grand = 0
        for region, reps in sales_groups(rng, sizes):
            rows += [[region] + rep for rep in reps]
            subtotal = sum(int(r[1].replace(",", "")) for r in reps)
            grand += subtotal
            rows.append([f"{region} Total", "", f"{subtotal:,}"])
        rows.append(["Grand Total", "", f"{grand:,}"])
        return rows

    example = table([rng.randint(1, 2), rng.randint(1, 2)])
    test = table([rng.randint(1, 2) for _ in range(3)])
    return Draw(example, test, lambda t: ops.keep_rows(t, lambda r: not r[0].endswith(" Total")))


def _make_drop_summary_rows(rng: random.Random, k: int) -> Draw:
    label = ("Total", "TOTAL", "Total:", "Total", "TOTAL")[k - 1]
    cols = ["Date", "Description", "Amount"]
    items = ("Office supplies", "Client lunch", "Taxi to airport", "Hotel (2 nights)", "Software license",
             "Printer toner", "Conference fee", "Parking", "Team dinner", "Courier")

    def block(n: int, month: int) -> Table:
        rows = [[w.fmt_date((2023, month, rng.randint(1, 28)), "us"), rng.choice(items), w.amount(rng, 6, 900)]
                for _ in range(n)]
        cents = sum(round(float(r[2].replace(",", "")) * 100) for r in rows)
        return rows + [[label, "", f"{cents / 100:,.2f}"]]

    month = rng.randint(1, 10)
    example = [cols] + block(rng.randint(2, 4), month)
    # A second month pasted under the first: its total row is no longer the last row.
    test = [cols] + block(rng.randint(2, 4), month) + block(rng.randint(2, 4), month + 1)

    def program(t: Table) -> Table:
        return ops.keep_rows(t, lambda r: r[0].strip().rstrip(":").lower() != "total")

    return Draw(example, test, program, alternative=lambda t: ops.copy(t[:-1]))


def _make_drop_repeated_headers(rng: random.Random, k: int) -> Draw:
    cols = rng.choice((["Name", "Department", "Phone"], ["Employee ID", "Name", "Hire Date", "Salary"],
                       ["Name", "City", "State", "Email"]))

    def table(pages: list[int]) -> Table:
        rows: Table = []
        for n in pages:
            rows += w.staff_table(rng, cols, n)
        return rows

    example = table([rng.randint(2, 3), 2])
    test = table([3, rng.randint(2, 3), rng.randint(1, 2)])
    return Draw(example, test, lambda t: [list(t[0])] + [list(r) for r in t[1:] if r != t[0]])


def _make_merge_header_rows(rng: random.Random, k: int) -> Draw:
    sep = (" ", " ", " - ", "_", " ")[k - 1]
    key = rng.choice(("Region", "Store", "Division"))

    def table(n_groups: int, n_years: int, n_rows: int) -> Table:
        groups = w.distinct(rng, ("Revenue", "Expenses", "Profit", "Units", "Headcount"), n_groups)
        years = [str(y) for y in range(2024 - n_years, 2024)]
        top = [""] + [g if i == 0 else "" for g in groups for i in range(n_years)]
        keys = w.distinct(rng, w.REGIONS if key != "Store" else tuple(c[0] for c in w.CITIES), n_rows)
        return [top, [key] + years * n_groups] + [[r] + [w.count(rng, 50, 9000) for _ in top[1:]] for r in keys]

    def program(t: Table) -> Table:
        top, bottom = t[0][1:], t[1]
        label, merged = "", [bottom[0]]
        for j, cell in enumerate(top, start=1):
            label = cell or label  # a merged cell's label spreads to the blank cells on its right
            merged.append(f"{label}{sep}{bottom[j]}")
        return [merged] + ops.copy(t[2:])

    example = table(2, 2, rng.randint(2, 3))
    test = table(3, 2, rng.randint(3, 4)) if rng.random() < 0.5 else table(2, 3, rng.randint(3, 5))
    return Draw(example, test, program)


def _make_dedupe(rng: random.Random, k: int, adjacent_in_example: bool) -> Draw:
    cols = ["Name", "Email", "Session"] if adjacent_in_example else ["Name", "Email", "City"]
    sessions = ("Morning Workshop", "Keynote", "Panel A", "Panel B", "Networking Lunch")

    def rows(n: int) -> Table:
        body = w.staff_table(rng, ["Name", "Email", "City"], n)[1:]
        if adjacent_in_example:
            body = [[r[0], r[1], rng.choice(sessions)] for r in body]
        return body

    def with_dups(body: Table, n_dups: int, adjacent: bool) -> Table:
        out = ops.copy(body)
        for i in sorted(rng.sample(range(len(body) - 1), n_dups), reverse=True):
            # Adjacent: repeat right below. Otherwise at least one other row sits in between.
            pos = i + 1 if adjacent else rng.randint(i + 2, len(out))
            out.insert(pos, list(body[i]))
        return out

    example = [cols] + with_dups(rows(rng.randint(3, 4)), rng.randint(1, 2), adjacent=adjacent_in_example)
    test = [cols] + with_dups(rows(rng.randint(5, 7)), rng.randint(2, 3), adjacent=False)
    if not adjacent_in_example:
        return Draw(example, test, ops.dedupe)
    return Draw(example, test, ops.dedupe,
                alternative=lambda t: [list(r) for i, r in enumerate(t) if i == 0 or r != t[i - 1]])


def _make_column_pick(rng: random.Random, k: int, mode: str) -> Draw:
    schema = list(rng.choice((
        ("Employee ID", "Name", "Department", "Notes", "Phone", "Email"),
        ("Name", "Title", "Hire Date", "Salary", "City"),
        ("First", "Last", "Email", "Phone", "State"),
        ("Employee ID", "First", "Last", "Department", "Title", "Hire Date"),
    )))
    if mode == "reorder":
        order = list(range(len(schema)))
        while order == sorted(order):
            rng.shuffle(order)
    elif mode == "drop":
        dropped = set(rng.sample(range(len(schema)), rng.choice((1, 2))))
        order = [i for i in range(len(schema)) if i not in dropped]
    else:  # select by name: a subset, in a new order
        order = rng.sample(range(len(schema)), rng.choice((2, 3)))
    example = w.staff_table(rng, schema, rng.randint(2, 4))
    test_schema = list(schema)
    if mode == "by_name":
        # The new export lists the same columns in another order.
        while [test_schema.index(schema[i]) for i in order] == order:
            rng.shuffle(test_schema)
    test = w.staff_table(rng, test_schema, rng.randint(4, 7))
    if mode != "by_name":
        return Draw(example, test, lambda t: ops.select(t, order))
    wanted = [schema[i] for i in order]
    return Draw(example, test, lambda t: ops.select(t, [t[0].index(c) for c in wanted]),
                alternative=lambda t: ops.select(t, order))


FAMILIES = (
    Family("fill_down", "Grouped labels are written once per group; fill them into the blank cells below.",
           "cleanup", ("fill down",), _make_fill_down),
    Family("drop_blank_rows", "Remove the empty rows scattered through a list.",
           "cleanup", ("drop blank rows",), _make_drop_blank_rows),
    Family("drop_title_rows", "A report starts with title and note lines; keep the header and data only.",
           "cleanup", ("drop title rows",), _make_drop_title_rows,
           ambiguous_why="the example has 2 title lines, so 'drop the first 2 rows' fits; "
                         "the new input has another count"),
    Family("drop_total_rows", "Remove the per-group '<Region> Total' rows and the 'Grand Total' row.",
           "cleanup", ("drop subtotal rows",), _make_drop_total_rows),
    Family("drop_summary_rows", "Remove the 'Total' rows from an expense list.",
           "cleanup", ("drop total rows",), _make_drop_summary_rows,
           ambiguous_why="the example's only total row is its last row, so 'drop the last row' fits"),
    Family("drop_repeated_headers", "A report repeats its header on every page; keep only the first.",
           "cleanup", ("drop repeated header rows",), _make_drop_repeated_headers),
    Family("merge_header_rows", "Two header rows (merged group labels over years) become one header row.",
           "cleanup", ("fill group labels right", "merge two header rows"), _make_merge_header_rows),
    Family("dedupe_rows", "Remove repeated rows from a contact list, keeping the first occurrence.",
           "cleanup", ("dedupe",), lambda rng, k: _make_dedupe(rng, k, adjacent_in_example=False)),
    Family("dedupe_signups", "Remove repeated sign-ups, keeping the first occurrence.",
           "cleanup", ("dedupe",), lambda rng, k: _make_dedupe(rng, k, adjacent_in_example=True),
           ambiguous_why="the example's duplicates sit right under their original, "
                         "so 'drop a row equal to the one above' fits"),
    Family("drop_columns", "Drop columns that are not needed (ids, notes, ...).",
           "cleanup", ("drop columns",), lambda rng, k: _make_column_pick(rng, k, "drop")),
    Family("reorder_columns", "Put the columns in the order another system expects.",
           "cleanup", ("reorder columns",), lambda rng, k: _make_column_pick(rng, k, "reorder")),
    Family("select_columns_by_name", "Keep a few named columns, in a given order, from an export.",
           "cleanup", ("select columns by header",), lambda rng, k: _make_column_pick(rng, k, "by_name"),
           ambiguous_why="the new export orders its columns differently, "
                         "so picking the example's positions fails"),
)
