"""Benign model-style programs all run with the AST pre-check on, and the write prompt states
exactly the modules the sandbox provides (every refused benign program costs a repair
round and biases the study against the tool)."""
from __future__ import annotations

import pytest

from sandbox import ALLOWED_MODULES, Sandbox, allowed_modules

TABLE = [["Name", "Date", "Amount"], ["smith, john", "2024-03-05", "10"],
         ["doe, jane", "2023-12-31", "7"], ["smith, john", "2024-01-02", "3"]]

# (program, expected output on TABLE); written the way small models write them
CORPUS = [
    ('''import sys
def transform(table):
    print("debug: got", len(table), "rows", file=sys.stderr)
    sys.stderr.write("header=%r\\n" % (table[0],))
    print("to stdout too")
    return [row[:1] for row in table]
''', [["Name"], ["smith, john"], ["doe, jane"], ["smith, john"]]),
    ('''from dataclasses import dataclass, field
from typing import List

@dataclass
class Person:
    last: str
    first: str
    tags: List[str] = field(default_factory=list)

def transform(table):
    out = [["First", "Last"]]
    for row in table[1:]:
        last, first = row[0].split(", ")
        p = Person(last.title(), first.title())
        out.append([p.first, p.last])
    return out
''', [["First", "Last"], ["John", "Smith"], ["Jane", "Doe"], ["John", "Smith"]]),
    ('''import difflib
def transform(table):
    words = [r[0] for r in table[1:]]
    best = difflib.get_close_matches("smith, jon", words, n=1)
    ratio = difflib.SequenceMatcher(None, "abcd", "abce").ratio()
    return [[best[0], f"{ratio:.2f}"]]
''', [["smith, john", "0.75"]]),
    ('''from typing import Dict, List, Optional, Tuple
def transform(table: List[List[str]]) -> List[List[str]]:
    totals: Dict[str, int] = {}
    for name, _date, amount in table[1:]:
        totals[name] = totals.get(name, 0) + int(amount)
    pairs: List[Tuple[str, int]] = sorted(totals.items())
    best: Optional[str] = None
    return [[k, str(v)] for k, v in pairs]
''', [["doe, jane", "7"], ["smith, john", "13"]]),
    ('''import itertools
import operator
def transform(table):
    rows = sorted(table[1:], key=operator.itemgetter(0))
    return [[k, str(len(list(g)))] for k, g in itertools.groupby(rows, key=operator.itemgetter(0))]
''', [["doe, jane", "1"], ["smith, john", "2"]]),
    ('''import functools
@functools.lru_cache(maxsize=None)
def norm(s):
    return s.upper()
def transform(table):
    total = functools.reduce(lambda a, r: a + int(r[2]), table[1:], 0)
    return [[norm(r[0]) for r in table[1:]], [str(total)]]
''', [["SMITH, JOHN", "DOE, JANE", "SMITH, JOHN"], ["20"]]),
    ('''from collections import Counter, OrderedDict, defaultdict, namedtuple
Row = namedtuple("Row", "name date amount")
def transform(table):
    by = defaultdict(list)
    for r in map(Row._make, table[1:]):
        by[r.name].append(r.date)
    c = Counter(r[0] for r in table[1:])
    od = OrderedDict(sorted(by.items()))
    return [[k, ";".join(v), str(c[k])] for k, v in od.items()]
''', [["doe, jane", "2023-12-31", "1"], ["smith, john", "2024-03-05;2024-01-02", "2"]]),
    ('''import string
def transform(table):
    keep = set(string.ascii_letters + string.digits)
    return [["".join(ch for ch in r[0] if ch in keep), string.capwords(r[0])] for r in table[1:2]]
''', [["smithjohn", "Smith, John"]]),
    ('''import unicodedata
def strip_accents(s):
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))
def transform(table):
    return [[strip_accents("Crème Brûlée"), unicodedata.name("é")]]
''', [["Creme Brulee", "LATIN SMALL LETTER E WITH ACUTE"]]),
    ('''import re, math, json
from datetime import datetime
def transform(table):
    out = []
    for name, date, amount in table[1:]:
        d = datetime.strptime(date, "%Y-%m-%d")
        out.append([re.sub(r"\\s+", " ", name), d.strftime("%d/%m/%Y"), str(math.sqrt(int(amount)) > 3)])
    return json.loads(json.dumps(out))
''', [["smith, john", "05/03/2024", "True"], ["doe, jane", "31/12/2023", "False"],
      ["smith, john", "02/01/2024", "False"]]),
    ('''import os.path
from urllib.parse import urlparse
import html, base64, struct, zlib, textwrap, pprint, statistics, decimal, csv, io
def transform(table):
    buf = io.StringIO()
    csv.writer(buf).writerow(table[0])
    return [[os.path.splitext("a/b.txt")[1], urlparse("https://x.org/p?q=1").netloc,
             html.unescape("&lt;b&gt;"), base64.b64encode(b"hi").decode(),
             str(struct.calcsize("<I")), str(zlib.crc32(b"x")), textwrap.shorten("a b c d", 7),
             pprint.pformat([1]), str(statistics.median([1, 2, 3])),
             str(decimal.Decimal("1.10") + decimal.Decimal("2.205")), buf.getvalue().strip()]]
''', [[".txt", "x.org", "<b>", "aGk=", "4", "2363233923", "a b c d", "[1]", "2", "3.305",
       "Name,Date,Amount"]]),
    ('''def transform(table):
    """No imports at all."""
    header, *rows = table
    return [header] + sorted(rows, key=lambda r: r[1])
''', [TABLE[0], TABLE[2], TABLE[3], TABLE[1]]),
]


@pytest.fixture(scope="module")
def sb():
    with Sandbox(workers=2) as box:  # the pre-check is on by default
        yield box


def test_benign_corpus_runs_with_the_precheck_on(sb):
    results = sb.run_many([(code, TABLE) for code, _ in CORPUS], timeout_s=10.0)
    for (code, expected), r in zip(CORPUS, results):
        assert r.ok, (r.error, r.message, code)
        assert r.output == expected, code


def test_every_allowed_module_imports_in_a_run(sb):
    names = allowed_modules()
    code = "".join(f"import {n}\n" for n in names) + "def transform(table):\n    return [[]]\n"
    r = sb.run(code, [], timeout_s=10.0)
    assert r.ok, (r.error, r.message)
    assert "sys" in names and "dataclasses" in names and "difflib" in names


@pytest.mark.parametrize("module", ["socket", "subprocess", "ctypes", "urllib.request", "urllib"])
def test_modules_that_only_give_trouble_are_refused_early(sb, module):
    r = sb.run(f"import {module}\ndef transform(table):\n    return table\n", [["a"]])
    assert r.error == "forbidden" and module in r.message and "listed in the task" in r.message


def test_write_prompt_states_exactly_the_allowed_modules():
    from tracegen.backends.base import Task
    from tracegen.prompts import write_messages
    text = write_messages(Task.from_tables("f/c", [["a"]], [["b"]], [["c"]]))[1]["content"]
    stated = text.split("standard-library modules: ", 1)[1].split(";", 1)[0]
    assert stated.split(", ") == sorted(ALLOWED_MODULES)
