"""What an output costs the parent after decoding is bounded per run: a cell limit
(``OutputLimits.max_cells``), checked by the child and by the parent before decoding."""
from __future__ import annotations

import json

from sandbox import Sandbox
from sandbox.result import OutputLimits, decode_output, precheck

MAXIMAL = "def transform(t):\n    return [['ab'] * 1000 for _ in range(838)]\n"


def test_legal_size_output_with_too_many_cells_is_refused_per_run():
    with Sandbox(workers=1) as box:
        big, small = box.run_many([(MAXIMAL, [["x"]]), ("def transform(t):\n    return t\n",
                                                       [["x"]])])
    assert big.error == "bad_output" and "cells" in big.message, big
    assert small.ok and small.output == [["x"]]  # no neighbour effect


def test_parent_refuses_too_many_cells_before_decoding():
    limits = OutputLimits()
    payload = json.dumps([["ab"] * 1000] * 838, separators=(",", ":")).encode()
    assert len(payload) < limits.max_bytes
    assert "cells" in precheck(payload, limits)
    table, why = decode_output(payload, limits)
    assert table is None and "cells" in why
    # escaped quotes inside cells are not counted as cells
    ok = json.dumps([['a"b\\'] * 100] * 100).encode()
    assert precheck(ok, limits) == ""
    assert decode_output(ok, limits)[0] == [['a"b\\'] * 100] * 100
