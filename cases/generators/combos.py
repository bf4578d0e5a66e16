"""Multi-step families: two or three of the single steps, in the order real cleanups need them.

Each ``_make_*`` returns a Draw for case ``k``; the family list at the bottom holds the metadata.
"""
from __future__ import annotations

import random

from cases.generators import ops
from cases.generators import words as w
from cases.generators.cleanup import drop_before_header, sales_groups, title_rows
from cases.generators.spec import Draw, Family

Table = list[list[str]]


def _make_title_fill_down(rng: random.Random, k: int) -> Draw:
    n_titles = rng.choice((1, 2, 3))  # the same count in example and new input

    def table(sizes: list[int]) -> Table:
        rows = [["Region", "Sales Rep", "Sales"]]
        for region, reps in sales_groups(rng, sizes):
            rows += [[region if i == 0 else ""] + rep for i, rep in enumerate(reps)]
        return title_rows(rng, n_titles, 3, "Regional Sales") + rows

    example = table([2, rng.randint(1, 2)])
    test = table([rng.randint(1, 3) for _ in range(3)])
    return Draw(example, test, lambda t: ops.fill_down(drop_before_header(t), [0], start=1))


def _make_split_reorder(rng: random.Random, k: int) -> Draw:
    sep = (", ", ", ", "; ", ", ", " / ")[k - 1]

    def table(n: int) -> Table:
        out = []
        for f, l in w.names(rng, n):
            rec = w.employee(rng, f, l)
            out.append([f"{l}{sep}{f}", rec["Department"], rec["Email"]])
        return out

    def program(t: Table) -> Table:
        return [[r[0].split(sep)[1], r[0].split(sep)[0], r[2], r[1]] for r in t]

    return Draw(table(rng.randint(3, 4)), table(rng.randint(5, 8)), program)


def _make_promote_header_fold(rng: random.Random, k: int) -> Draw:
    def table(n_rows: int, n_years: int) -> Table:
        years = [str(y) for y in range(2024 - n_years, 2024)]
        what = f"{rng.choice(('Annual', 'Yearly'))} {rng.choice(('Revenue', 'Headcount', 'Units Sold'))}"
        title = [f"{what} by Region"]
        return [title + [""] * n_years, ["Region"] + years] + [
            [r] + [w.count(rng, 40, 90000) for _ in years] for r in w.distinct(rng, w.REGIONS, n_rows)
        ]

    example = table(rng.randint(2, 3), 2)
    test = table(rng.randint(3, 4), 3) if rng.random() < 0.6 else table(4, 2)
    return Draw(example, test, lambda t: ops.fold(t[1:], 1, header=True, names=("Year", "Value")))


def _make_fill_down_unfold(rng: random.Random, k: int) -> Draw:
    grades = ("A", "A-", "B+", "B", "B-", "C+", "C")

    def table(n_students: int, subjects: list[str]) -> Table:
        rows = [["Student", "Subject", "Grade"]]
        for f, l in w.names(rng, n_students):
            rows += [[f"{f} {l}" if i == 0 else "", s, rng.choice(grades)] for i, s in enumerate(subjects)]
        return rows

    ex_subjects = w.distinct(rng, w.SUBJECTS, 2)
    new_subjects = tuple(s for s in w.SUBJECTS if s not in ex_subjects)
    test_subjects = ex_subjects + w.distinct(rng, new_subjects, rng.randint(0, 1))
    example = table(rng.randint(2, 3), ex_subjects)
    test = table(3 if len(test_subjects) == 3 else 4, test_subjects)  # at most 12 data rows
    return Draw(example, test, lambda t: ops.unfold(ops.fill_down(t, [0], start=1), header=True))


def _make_blank_dedupe(rng: random.Random, k: int) -> Draw:
    cols = ["Name", "Email", "Phone"]

    def table(n: int, n_dups: int, n_blank: int) -> Table:
        body = w.staff_table(rng, cols, n)[1:]
        for i in sorted(rng.sample(range(n - 1), n_dups), reverse=True):
            body.insert(rng.randint(i + 2, len(body)), list(body[i]))  # never right below its original
        for pos in sorted(rng.sample(range(1, len(body)), n_blank), reverse=True):
            body.insert(pos, ["", "", ""])
        return [cols] + body

    example = table(3, 1, 1)
    test = table(rng.randint(4, 6), rng.randint(1, 2), rng.randint(1, 3))

    def program(t: Table) -> Table:
        return ops.dedupe(ops.keep_rows(t, lambda r: not ops.is_blank(r)))

    return Draw(example, test, program)


def _make_fold_skip_blank(rng: random.Random, k: int) -> Draw:
    shifts = ("9-5", "7-3", "12-8", "10-6", "6-2")

    def table(n_people: int, days: list[str]) -> Table:
        rows = [["Employee"] + days]
        for f, l in w.names(rng, n_people):
            cells = [rng.choice(shifts) if rng.random() < 0.55 else "" for _ in days]
            cells[rng.randrange(len(days))] = rng.choice(shifts)  # everyone works at least once
            rows.append([f"{f} {l}"] + cells)
        return rows

    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    example = table(2, days[:3])
    while not any(c == "" for r in example[1:] for c in r):
        example = table(2, days[:3])
    test = table(rng.randint(3, 4), days[: rng.choice((4, 5))])
    return Draw(example, test, lambda t: ops.fold(t, 1, header=True, names=("Day", "Shift"), skip_blank=True))


def _make_sections_to_rows(rng: random.Random, k: int) -> Draw:
    def table(sizes: list[int]) -> Table:
        rows = []
        for dept, n in zip(w.distinct(rng, w.DEPARTMENTS, len(sizes)), sizes):
            rows.append([dept, "", ""])
            rows += [[f"{f} {l}", rng.choice(w.JOB_TITLES), f"x{rng.randint(100, 899)}"]
                     for f, l in w.names(rng, n)]
        return rows

    def program(t: Table) -> Table:
        out, section = [], ""
        for row in t:
            if not row[1].strip():
                section = row[0]  # a heading row: only its first cell is filled
            else:
                out.append([section] + list(row))
        return out

    example = table([rng.randint(1, 3), rng.randint(1, 2)])
    test = table([rng.randint(1, 3) for _ in range(3)])
    return Draw(example, test, program)


def _make_subtotals_fill_down(rng: random.Random, k: int) -> Draw:
    def table(sizes: list[int]) -> Table:
        rows = [["Region", "Sales Rep", "Sales"]]
        for region, reps in sales_groups(rng, sizes):
            rows += [[region if i == 0 else ""] + rep for i, rep in enumerate(reps)]
            total = sum(int(r[1].replace(",", "")) for r in reps)
            rows.append([f"{region} Total", "", f"{total:,}"])
        return rows

    def program(t: Table) -> Table:
        return ops.fill_down(ops.keep_rows(t, lambda r: not r[0].endswith(" Total")), [0], start=1)

    example = table([2, rng.randint(1, 2)])
    test = table([rng.randint(1, 3) for _ in range(3)])
    return Draw(example, test, program)


def _make_labeled_lines(rng: random.Random, k: int) -> Draw:
    fields = (("Name", "Phone", "Email"), ("Name", "Company"), ("Name", "Title", "Department", "Phone"),
              ("Name", "Email", "City"), ("Name", "Phone"))[k - 1]
    sep = (": ", ": ", " - ", ": ", " = ")[k - 1]

    def table(n: int) -> Table:
        rows = []
        for f, l in w.names(rng, n):
            rec = w.employee(rng, f, l)
            rec["Company"] = w.company(rng)
            rows += [[f"{name}{sep}{rec[name]}"] for name in fields]
        return rows

    def program(t: Table) -> Table:
        records = [[r[0].split(sep, 1) for r in c] for c in ops.chunk(t, len(fields))]
        return [[kv[0] for kv in records[0]]] + [[kv[1] for kv in rec] for rec in records]

    n_ex = 3 if len(fields) == 2 else 2
    example = table(n_ex)
    test = table(min(12 // len(fields), n_ex + rng.randint(1, 2)))
    return Draw(example, test, program)


def _make_clean_export(rng: random.Random, k: int) -> Draw:
    cols = ["Name", "Department", "Phone", "Notes"]

    def table(n: int, n_blank: int) -> Table:
        body = []
        for row in w.staff_table(rng, cols, n)[1:]:
            # Exported cells often carry stray spaces.
            body.append([c if rng.random() < 0.5 else rng.choice((" ", "  ", "")) + c + rng.choice((" ", "  "))
                         for c in row])
        for pos in sorted(rng.sample(range(1, n), n_blank), reverse=True):
            body.insert(pos, [rng.choice(("", " ")) for _ in cols])
        return [cols] + body

    def program(t: Table) -> Table:
        rows = ops.keep_rows(t, lambda r: not ops.is_blank(r))
        return [[c.strip() for c in r[:3]] for r in rows]

    example = table(rng.randint(3, 4), 1)
    test = table(rng.randint(5, 8), rng.randint(1, 3))
    return Draw(example, test, program)


FAMILIES = (
    Family("title_fill_down", "Drop a report's title lines, then fill the region labels down.",
           "combo", ("drop title rows", "fill down"), _make_title_fill_down),
    Family("split_reorder", "Split 'Last, First' names and put the columns in a new order.",
           "combo", ("split column", "reorder columns"), _make_split_reorder),
    Family("promote_header_fold", "Drop the title line above the header, then unpivot the year columns.",
           "combo", ("drop title row", "fold keeping the header"), _make_promote_header_fold),
    Family("fill_down_unfold", "Fill student names down, then pivot subjects into columns.",
           "combo", ("fill down", "unfold"), _make_fill_down_unfold),
    Family("blank_dedupe", "Drop blank rows and repeated contacts from a pasted list.",
           "combo", ("drop blank rows", "dedupe"), _make_blank_dedupe),
    Family("fold_skip_blank",
           "Unpivot a weekly shift grid into (employee, day, shift) rows, skipping empty cells.",
           "combo", ("fold keeping the header", "drop blank values"), _make_fold_skip_blank),
    Family("sections_to_rows", "Section heading rows become a column on every row of their section.",
           "combo", ("fill section label into rows", "drop heading rows"), _make_sections_to_rows),
    Family("subtotals_fill_down", "Drop '<Region> Total' rows and fill region labels down.",
           "combo", ("drop subtotal rows", "fill down"), _make_subtotals_fill_down),
    Family("labeled_lines_to_records",
           "'Label: value' lines, a fixed number per record, become a table with a header.",
           "combo", ("wrap every k rows", "split label from value", "promote labels to header"),
           _make_labeled_lines),
    Family("clean_export", "Trim stray spaces, drop blank rows and drop the Notes column of an export.",
           "combo", ("trim cells", "drop blank rows", "drop column"), _make_clean_export),
)
