"""Text families: split by a delimiter, merge columns, extract with patterns (phones, ZIP
codes, years, e-mails, amounts), divide a mixed column, and normalise dates.

Each ``_make_*`` returns a Draw for case ``k``; the family list at the bottom holds the metadata.
"""
from __future__ import annotations

import random
import re

from cases.generators import ops
from cases.generators import words as w
from cases.generators.spec import Draw, Family

Table = list[list[str]]


def _make_split_delimiter(rng: random.Random, k: int) -> Draw:
    def row() -> list[str]:
        if k == 1:  # person, "City, ST"
            town, state, _ = w.city(rng)
            return [w.full_name(rng), f"{town}, {state}"]
        if k == 2:  # "Origin - Destination", flight number
            a, b = rng.sample(w.CITIES, 2)
            return [f"{a[0]} - {b[0]}", f"{rng.choice(('UA', 'DL', 'AA', 'WN'))} {rng.randint(100, 2999)}"]
        if k == 3:  # product, "L x W x H"
            return [rng.choice(w.PRODUCTS), " x ".join(str(rng.randint(2, 120)) for _ in range(3))]
        if k == 4:  # category path
            path = rng.choice((("Office", "Furniture", "Chairs"), ("Office", "Supplies", "Paper"),
                               ("Electronics", "Audio", "Headsets"), ("Electronics", "Accessories", "Cables"),
                               ("Home", "Lighting", "Desk Lamps"), ("Home", "Storage", "Shelves")))
            return [w.product_code(rng, (2, 4, 0), sep=""), " > ".join(path)]
        first, last = w.names(rng, 1)[0]  # one pipe-delimited export line
        return ["|".join((last, first, rng.choice(w.DEPARTMENTS)))]

    col, sep = {1: (1, ", "), 2: (0, " - "), 3: (1, " x "), 4: (1, " > "), 5: (0, "|")}[k]
    example = [row() for _ in range(rng.randint(3, 4))]
    test = [row() for _ in range(rng.randint(5, 8))]
    return Draw(example, test, lambda t: ops.map_col(t, col, lambda s: s.split(sep)))


def _make_split_product_code(rng: random.Random, k: int) -> Draw:
    sep = ("-", "-", "/", "-", ".")[k - 1]
    seg = rng.choice(((2, 4, 3), (3, 3, 2), (2, 5, 2)))

    def row(lengths: tuple[int, int, int]) -> list[str]:
        return [w.product_code(rng, lengths, sep), rng.choice(w.PRODUCTS), str(rng.randint(0, 300))]

    example = [row(seg) for _ in range(rng.randint(3, 4))]
    # Codes from a second supplier have other segment lengths.
    other = [s for s in ((2, 4, 3), (3, 3, 2), (2, 5, 2), (4, 3, 3)) if s != seg]
    test = [row(seg if rng.random() < 0.4 else rng.choice(other)) for _ in range(rng.randint(4, 6))]
    test.insert(rng.randint(0, len(test)), row(other[k % len(other)]))
    a, b = seg[0], seg[0] + 1 + seg[1]

    def program(t: Table) -> Table:
        return ops.map_col(t, 0, lambda s: s.split(sep))

    def fixed_positions(t: Table) -> Table:
        return ops.map_col(t, 0, lambda s: [s[:a], s[a + 1:b], s[b + 1:]])

    return Draw(example, test, program, alternative=fixed_positions)


def _make_merge_columns(rng: random.Random, k: int) -> Draw:
    def row() -> list[str]:
        first, last = w.names(rng, 1)[0]
        if k in (1, 3):
            return [first, last, rng.choice(w.DEPARTMENTS)]
        if k == 2:
            town, state, zip3 = w.city(rng)
            return [w.street_address(rng), town, state, w.zip_code(rng, zip3)]
        if k == 4:
            y, m, d = w.ymd(rng)
            return [f"INV-{rng.randint(1000, 9999)}", str(y), f"{m:02d}", f"{d:02d}"]
        return [f"{first} {last}", str(rng.choice((503, 512, 303, 614, 919))), f"555-{rng.randint(100, 199):04d}"]

    merge = {
        1: lambda r: [f"{r[0]} {r[1]}", r[2]],
        2: lambda r: [f"{r[0]}, {r[1]}, {r[2]} {r[3]}"],
        3: lambda r: [f"{r[1]}, {r[0]}", r[2]],
        4: lambda r: [r[0], f"{r[1]}-{r[2]}-{r[3]}"],
        5: lambda r: [r[0], f"({r[1]}) {r[2]}"],
    }[k]
    example = [row() for _ in range(rng.randint(3, 4))]
    test = [row() for _ in range(rng.randint(5, 8))]
    return Draw(example, test, lambda t: [merge(r) for r in t])


_PHONE = re.compile(r"\(?\d{3}\)?[ .-]?\d{3}[.-]\d{4}")


def _make_extract_phone(rng: random.Random, k: int) -> Draw:
    templates = ("Call after 5pm at {p}", "Reach me on {p} (cell)", "Office: {p} ext {e}", "{p} - ask for billing",
                 "Left voicemail, callback {p}", "Prefers text to {p}", "Main line {p}, fax on request")

    def table(styles: list[str]) -> Table:
        return [[w.full_name(rng), rng.choice(templates).format(p=w.phone(rng, s), e=rng.randint(10, 99))]
                for s in styles]

    ex_styles = ["paren", "dash", "dot"] + ([rng.choice(("paren", "dash", "dot"))] if rng.random() < 0.5 else [])
    rng.shuffle(ex_styles)
    example = table(ex_styles)
    test = table([rng.choice(("paren", "dash", "dot")) for _ in range(rng.randint(5, 8))])
    return Draw(example, test, lambda t: [[r[0], _PHONE.search(r[1]).group(0)] for r in t])


_ZIP = re.compile(r"\b(\d{5})(?:-\d{4})?\s*$")


def _make_extract_zip(rng: random.Random, k: int) -> Draw:
    plus4 = k >= 3  # later cases mix in ZIP+4 codes; the example then shows one

    def address(with_plus4: bool) -> str:
        town, state, zip3 = w.city(rng)
        unit = rng.choice(("", "", f", Suite {rng.randint(100, 450)}", f", Apt {rng.randint(1, 40)}"))
        z = w.zip_code(rng, zip3) + (f"-{rng.randint(1000, 9999)}" if with_plus4 else "")
        return f"{w.street_address(rng)}{unit}, {town}, {state} {z}"

    def table(n: int, force_plus4: bool) -> Table:
        flags = [plus4 and rng.random() < 0.4 for _ in range(n)]
        if force_plus4:
            flags[rng.randrange(n)] = True
        return [[w.company(rng), address(f)] for f in flags]

    example = table(rng.randint(3, 5), plus4)
    test = table(rng.randint(5, 8), False)
    return Draw(example, test, lambda t: [[r[0], _ZIP.search(r[1]).group(1)] for r in t])


def _make_extract_year(rng: random.Random, k: int) -> Draw:
    fmt = ("{t} ({y})", "{t} [{y}]", "{t} ({y})", "{t}, {y}", "{t} - {y}")[k - 1]
    genres = ("Drama", "Comedy", "Documentary", "Thriller", "Animation", "Mystery")

    def table(n: int) -> Table:
        return [[fmt.format(t=w.title(rng), y=rng.randint(1962, 2023)), rng.choice(genres)] for _ in range(n)]

    pattern = re.compile(r"^(.*?)[\s,\-]*[\(\[]?((?:19|20)\d\d)[\)\]]?$")

    def program(t: Table) -> Table:
        return [list(pattern.match(r[0]).groups()) + [r[1]] for r in t]

    return Draw(table(rng.randint(3, 5)), table(rng.randint(5, 8)), program)


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _make_extract_email(rng: random.Random, k: int) -> Draw:
    def cell() -> str:
        first, last = w.names(rng, 1)[0]
        addr = w.email(rng, first, last)
        if k in (2, 4) and rng.random() < 0.5:
            return f"{addr} ({first} {last})"
        return f"{first} {last} <{addr}>" if k != 5 else f'"{last}, {first}" <{addr}>'

    def program(t: Table) -> Table:
        out = []
        for (c,) in t:
            addr = _EMAIL.search(c).group(0)
            name = c.replace(addr, "").strip(' <>()"')
            out.append([name, addr])
        return out

    example = [[cell()] for _ in range(rng.randint(3, 5))]
    test = [[cell()] for _ in range(rng.randint(5, 8))]
    return Draw(example, test, program)


_AMOUNT = re.compile(r"-?\$[\d,]+\.\d\d")


def _make_extract_amount(rng: random.Random, k: int) -> Draw:
    at_end = ("Payment received {a}", "Invoice {n} paid {a}", "Card purchase at {c} {a}", "Wire transfer {a}",
              "Monthly fee {a}")
    in_middle = ("Refund of {a} issued to card", "{a} deposit - check {n}", "Paid {a} to {c} on account {n}",
                 "Transfer {a} to savings")

    def row(templates: tuple[str, ...]) -> list[str]:
        template = rng.choice(templates)
        text = template.format(a="$" + w.amount(rng, 4, 6000), n=rng.randint(1000, 9999), c=w.company(rng))
        return [w.fmt_date(w.ymd(rng, (2022, 2024)), "iso"), text]

    example = [row(at_end) for _ in range(rng.randint(3, 5))]
    test = [row(at_end + in_middle) for _ in range(rng.randint(4, 7))]
    test.insert(rng.randint(0, len(test)), row(in_middle))

    def program(t: Table) -> Table:
        return [[r[0], _AMOUNT.search(r[1]).group(0)] for r in t]

    return Draw(example, test, program, alternative=lambda t: [[r[0], r[1].split()[-1]] for r in t])


def _make_divide_column(rng: random.Random, k: int) -> Draw:
    def table(kinds: list[bool]) -> Table:
        rows = []
        for (first, last), is_email in zip(w.names(rng, len(kinds)), kinds):
            rows.append([f"{first} {last}", w.email(rng, first, last) if is_email else w.phone(rng)])
        return rows

    def kinds(n: int) -> list[bool]:
        out = [True, False] + [rng.random() < 0.5 for _ in range(n - 2)]
        rng.shuffle(out)
        return out

    def program(t: Table) -> Table:
        return [[r[0], "", r[1]] if "@" in r[1] else [r[0], r[1], ""] for r in t]

    return Draw(table(kinds(rng.randint(3, 5))), table(kinds(rng.randint(5, 8))), program)


_DATE_PATTERNS = (
    (re.compile(r"^(\d{4})-(\d\d)-(\d\d)$"), lambda m: (m[1], m[2], m[3])),
    (re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$"), lambda m: (m[3], m[1], m[2])),
    (re.compile(r"^([A-Z][a-z]+) (\d{1,2}), (\d{4})$"), lambda m: (m[3], _month(m[1]), m[2])),
    (re.compile(r"^(\d{1,2}) ([A-Z][a-z]+) (\d{4})$"), lambda m: (m[3], _month(m[2]), m[1])),
)


def _month(name: str) -> str:
    return str(w.MONTHS.index(name[:3]) + 1)


def _iso(s: str) -> str:
    for pattern, parts in _DATE_PATTERNS:
        m = pattern.match(s)
        if m:
            y, mo, d = parts(m)
            return f"{int(y):04d}-{int(mo):02d}-{int(d):02d}"
    raise ValueError(f"unparsed date {s!r}")


def _make_normalize_dates(rng: random.Random, k: int) -> Draw:
    formats = rng.sample(["us", "short", "long", "abbr", "dmy"], rng.choice((2, 3)))
    if rng.random() < 0.3:
        formats.append("iso")  # some rows are already right

    def table(fmts: list[str]) -> Table:
        return [[f"INV-{rng.randint(10000, 99999)}", w.fmt_date(w.ymd(rng), f), "$" + w.amount(rng, 40, 9000)]
                for f in fmts]

    ex_fmts = formats + rng.sample(formats, max(0, 3 - len(formats)))
    rng.shuffle(ex_fmts)
    example = table(ex_fmts)
    test = table([rng.choice(formats) for _ in range(rng.randint(5, 8))])
    return Draw(example, test, lambda t: ops.map_col(t, 1, lambda s: [_iso(s)]))


FAMILIES = (
    Family("split_delimiter", "Split one column into several at a delimiter (', ', ' - ', ' x ', ' > ', '|').",
           "text", ("split column",), _make_split_delimiter),
    Family("split_product_code", "Split product codes like HW-2041-BLK into their segments.",
           "text", ("split column",), _make_split_product_code,
           ambiguous_why="every example code has the same segment lengths, so cutting at fixed positions fits"),
    Family("merge_columns", "Join name, address, date or phone parts into one formatted column.",
           "text", ("merge columns",), _make_merge_columns),
    Family("extract_phone", "Pull the phone number out of a free-text note.",
           "text", ("extract pattern",), _make_extract_phone),
    Family("extract_zip", "Pull the 5-digit ZIP code out of a full postal address.",
           "text", ("extract pattern",), _make_extract_zip),
    Family("extract_year", "Split a title carrying its year into title and year columns.",
           "text", ("extract pattern",), _make_extract_year),
    Family("extract_email", "Split 'Name <address>' style cells into name and e-mail columns.",
           "text", ("extract pattern",), _make_extract_email),
    Family("extract_amount", "Pull the dollar amount out of a bank transaction description.",
           "text", ("extract pattern",), _make_extract_amount,
           ambiguous_why="every example amount is the description's last word, so 'take the last word' fits"),
    Family("divide_column", "A contact column mixes phones and e-mails; divide it into two columns.",
           "text", ("divide column",), _make_divide_column),
    Family("normalize_dates", "Dates typed in several formats become ISO yyyy-mm-dd.",
           "text", ("reformat dates",), _make_normalize_dates),
)
