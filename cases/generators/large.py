"""Real-size by-example cases: spreadsheet exports of 500-2,000 rows and the clean table wanted.

Each case is a clean relational table (a header and typed columns: names, dates, amounts with
units or currency, categories) and its messy export, made by applying a few chores that real
report exports show: title and note rows on top, blank separator rows, a "Total" footer, group
cells merged down a column (blank under the first row of each group), group title rows, an empty
spacer column, values carrying their unit ("12.5 kg"), ISO dates the user wants as MM/DD/YYYY,
and a wide year-by-column layout the user wants long. The public example and the new input are
two independent draws of the same chores on different data and sizes, so a program learned on
the example is judged on an input of another length. Everything depends on the seed only.

    python -m cases.generators.large OUT_DIR [--n 40] [--seed 0]   # writes Foofah-format files

``large_cases(n, seed)`` returns the case objects (Foofah keys); ``write_cases`` writes them.
Not covered: chores that need arithmetic or lookups (recomputed totals, currency conversion).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

MIN_ROWS, MAX_ROWS = 500, 2000

_FIRST = ("Ann", "Bob", "Carla", "Dev", "Eun", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kofi", "Lena", "Mo",
          "Nia", "Omar", "Pia", "Quinn", "Ravi", "Sara", "Tom", "Uma", "Vik", "Wen", "Xia", "Yara", "Zed")
_LAST = ("Smith", "Garcia", "Nguyen", "Okafor", "Müller", "Rossi", "Kim", "Silva", "Novak", "Khan", "Berg",
         "Dubois", "Ivanova", "Tanaka", "Lopez", "Moreau", "Haddad", "Costa", "Evans", "Popescu")
_REGIONS = ("North", "South", "East", "West", "Central", "Coastal", "Highlands", "Metro", "Valley", "Islands")
_ITEMS = ("bolts", "nuts", "washers", "cable", "paint", "timber", "glue", "tiles", "pipes", "valves", "sand",
          "cement", "gravel", "wire", "hinges", "screws", "brackets", "panels")
_UNITS = ("kg", "g", "lb", "m", "L")
_STATUS = ("open", "shipped", "held", "returned", "closed")
_TITLES = ("Quarterly sales report", "Inventory export", "Regional summary", "Shipments by depot",
           "Monthly readings", "Payroll extract")


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2015, 2024)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _money(rng: random.Random) -> str:
    return f"${rng.randint(1, 9999)}.{rng.randint(0, 99):02d}"


def _schema(rng: random.Random, chores: set) -> list[tuple[str, str]]:
    """(column name, kind) of the clean table: a group column first when cells are merged."""
    cols = [("Region", "region")] if "merged" in chores or "groups" in chores else []
    cols.append(("Name", "name"))
    pool = [("Date", "date"), ("Item", "item"), ("Amount", "money"), ("Status", "status"), ("Qty", "int")]
    rng.shuffle(pool)
    cols += pool[:rng.randint(2, 3)]
    if "dates" in chores and ("Date", "date") not in cols:
        cols.append(("Date", "date"))
    if "units" in chores:
        cols.insert(rng.randint(1, len(cols)), ("Weight", "unit"))
    return cols


def _cell(rng: random.Random, kind: str, unit: str) -> str | tuple:
    if kind == "name":
        return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    if kind == "date":
        return _date(rng)
    if kind == "item":
        return rng.choice(_ITEMS)
    if kind == "money":
        return _money(rng)
    if kind == "status":
        return rng.choice(_STATUS)
    if kind == "int":
        return str(rng.randint(0, 500))
    if kind == "unit":
        return (f"{rng.randint(0, 999)}.{rng.randint(0, 9)}", unit)
    raise ValueError(kind)


def _draw(rng: random.Random, chores: set, schema: list, unit: str, n_rows: int) -> tuple[list, list]:
    """One (messy input, clean output) pair of ``n_rows`` data rows."""
    regions = sorted(rng.sample(_REGIONS, rng.randint(3, len(_REGIONS))))
    sizes = [1] * len(regions)
    for _ in range(n_rows - len(regions)):
        sizes[rng.randrange(len(regions))] += 1
    rows = []  # the clean data rows; unit cells stay (value, unit) pairs until laid out
    for region, size in zip(regions, sizes):
        for _ in range(size):
            rows.append([region if kind == "region" else _cell(rng, kind, unit) for _, kind in schema])
    header = [name for name, _ in schema]

    def clean_row(row):
        out = []
        for (name, kind), v in zip(schema, row):
            if kind == "unit":
                out += list(v)
            elif kind == "date" and "dates" in chores:
                y, m, d = v.split("-")
                out.append(f"{m}/{d}/{y}")
            else:
                out.append(v)
        return out

    def messy_row(row):
        return [" ".join(v) if isinstance(v, tuple) else v for v in row]

    if "units" in chores:  # the clean header names the unit column too
        i = [kind for _, kind in schema].index("unit")
        clean_header = header[:i + 1] + ["Unit"] + header[i + 1:]
    else:
        clean_header = list(header)
    clean = [clean_row(r) for r in rows]
    messy = [messy_row(r) for r in rows]
    if "wide" in chores:  # the year columns of each row become rows of the clean table
        years = [str(y) for y in range(2019, 2019 + rng.randint(3, 5))]
        keys = [r[:2] for r in messy]
        values = [[str(rng.randint(0, 9999)) for _ in years] for _ in messy]
        messy = [k + v for k, v in zip(keys, values)]
        header = header[:2] + years
        clean_header = header[:2] + ["Year", "Value"]
        clean = [k + [y, v] for k, vs in zip(keys, values) for y, v in zip(years, vs)]
    width = len(header)
    if "merged" in chores:  # the group cell shows on the first row of its group only
        last = None
        for r in messy:
            if r[0] == last:
                r[0] = ""
            else:
                last = r[0]
    if "groups" in chores:  # the group sits on a row of its own; the clean table keeps it per row
        body, last = [], None
        for r in messy:
            if r[0] != last:
                body.append([r[0]] + [""] * (width - 2))
                last = r[0]
            body.append(r[1:])
        messy = body
        header = header[1:]
    if "blanks" in chores:  # a blank separator row every few rows
        every = rng.randint(8, 40)
        messy = [r for i, row in enumerate(messy) for r in ([row, [""] * len(row)] if i % every == every - 1 else [row])]
    messy = [header] + messy
    if "spacer" in chores:  # an empty column the export left between two others
        at = rng.randint(1, len(header) - 1)
        messy = [r[:at] + [""] + r[at:] for r in messy]
    if "total" in chores:
        messy.append(["Total"] + [""] * (len(messy[0]) - 2) + [str(len(rows))])
    if "title" in chores:
        top = [[rng.choice(_TITLES)] + [""] * (len(messy[0]) - 1)]
        top.append([f"Exported {_date(rng)}"] + [""] * (len(messy[0]) - 1))
        messy = top + [[""] * len(messy[0])] + messy
    return messy, [clean_header] + clean


CHORES = ("title", "blanks", "total", "merged", "groups", "spacer", "units", "dates", "wide")
_CLEANUPS = ("title", "blanks", "total", "spacer")
_STRUCTURE = ("merged", "groups", "wide", None, None)
_CELLS = ("units", "dates", None, None)


def _chores(rng: random.Random) -> set:
    chores = set(rng.sample(_CLEANUPS, rng.randint(1, 2)))
    structure = rng.choice(_STRUCTURE)
    if structure:
        chores.add(structure)
    cell = rng.choice(_CELLS)
    if cell and structure != "wide":
        chores.add(cell)
    return chores


def large_case(seed: int, k: int) -> dict:
    """Case ``k`` of the set drawn with ``seed``: a Foofah-format object."""
    rng = random.Random(f"large/{seed}/{k}")
    chores = _chores(rng)
    schema = _schema(rng, chores)
    unit = rng.choice(_UNITS)
    sizes = [rng.randint(MIN_ROWS, MAX_ROWS) for _ in range(2)]
    # the data rows are drawn to land the whole table (title, blanks, footer) inside the range
    example, output = _draw(rng, chores, schema, unit, _data_rows(sizes[0], chores))
    test, answer = _draw(rng, chores, schema, unit, _data_rows(sizes[1], chores))
    family = "large_" + "_".join(sorted(chores))
    return {"InputTable": example, "OutputTable": output, "TestingTable": test, "TestAnswer": answer,
            "NumSamples": 1, "TestName": family}


def _data_rows(total: int, chores: set) -> int:
    share = 0.8 if "blanks" in chores or "groups" in chores else 1.0
    return max(int(total * share) - 6, 10)


def large_cases(n: int = 40, seed: int = 0) -> list[dict]:
    return [large_case(seed, k) for k in range(n)]


def write_cases(out_dir: Path, n: int = 40, seed: int = 0) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, case in enumerate(large_cases(n, seed)):
        path = out_dir / f"large_{k:03d}.json"
        path.write_text(json.dumps(case, ensure_ascii=False) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--n", type=int, default=40, help="number of cases (default 40)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.n < 1:
        print("--n: must be >= 1", file=sys.stderr)
        return 2
    paths = write_cases(Path(args.out_dir), args.n, args.seed)
    print(f"wrote {len(paths)} cases to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
