"""Recorded outputs from anywhere: the import file format (DESIGN.md "Import (contract)"), read and
checked whole before anything is traced, and a trace record written back in it (``export_case``).

One case per line::

    {"case_id": str, "family": str,
     "examples": [{"input": V, "output": V}, ...],      # >= 1 public examples
     "test": {"input": V, "output": V | null},          # the hidden answer; null: traced, not scored
     "entry": "transform",                              # optional: the function programs define
     "runtime": {"modules": ["numpy"], "globals": {"np": "numpy"}, "input": "array"},
                                                        # optional: the sandbox runtime (every line the same)
     "direct":   [ATTEMPT, ...],                        # optional: direct answers; the first is DIRECT's
     "programs": [[ATTEMPT, ...], ...]}                 # optional: samples; each a chain: write, then repairs

    ATTEMPT = {"text": str} | {"answer": V} | {"code": str}, and optionally "model", "prompt",
              "tokens": {"prompt", "completion"}, "logprobs": {"mean", "min", "tokens"},
              "finish_reason", "gen_ms"

A bad line raises ``ImportFileError`` whose one line names the file, the line number and the key
(``examples[1].output``); every line is read and checked before the first record is written, so a
refused file leaves nothing behind. The reader imports nothing of the rollout: a line becomes an
``ImportedCase`` (the task and its attempts as given), and ``tracegen.backends.imported`` answers
the rollout's requests from it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOP_KEYS = ("case_id", "family", "examples", "test", "entry", "runtime", "direct", "programs")
REQUIRED = ("case_id", "family", "examples", "test")
ANSWER_KEYS = ("text", "answer", "code")  # exactly one per attempt
EXTRA_KEYS = ("model", "prompt", "tokens", "logprobs", "finish_reason", "gen_ms")
MAX_BAD_SHOWN = 1  # one line: the first bad line, and how many more there are


class ImportFileError(ValueError):
    """A file that cannot be imported: one line naming the file, the line and the key."""


class _Bad(Exception):
    def __init__(self, key: str, problem: str):
        super().__init__(problem)
        self.key, self.problem = key, problem


@dataclass(frozen=True)
class Attempt:
    """One recorded model output: ``kind`` is which of ``ANSWER_KEYS`` it gives, ``value`` that
    value (raw text to parse, an answer, or a program), ``meta`` its optional keys as given."""

    kind: str
    value: Any
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ImportedCase:
    """One line of an import file: the task (public examples, the new input, the hidden answer)
    and its recorded attempts; ``line``: its line number in the file (1-based)."""

    case_id: str
    family: str
    examples: tuple  # ((input, output), ...)
    test_input: Any
    test_answer: Any  # None: traced, not scored
    entry: str
    direct: tuple[Attempt, ...]
    programs: tuple[tuple[Attempt, ...], ...]
    line: int
    runtime: dict | None = None  # the sandbox runtime the line asks for (``sandbox.Runtime.as_json``)

    @property
    def attempts(self) -> int:
        return len(self.direct) + sum(len(ch) for ch in self.programs)

    def case(self):
        """The ``cases.Case`` traced for this line: its value type read off the outputs (every
        example's and the answer: ``cases.values.task_value_type``)."""
        from cases import Case, Example
        from cases.values import task_value_type

        kind = task_value_type([o for _, o in self.examples] + [self.test_answer])
        return Case(self.case_id, self.family, tuple(Example(i, o) for i, o in self.examples), self.test_input,
                    self.test_answer, value_type=kind, entry=self.entry)


@dataclass(frozen=True)
class ImportFile:
    path: str
    cases: tuple[ImportedCase, ...]

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def max_samples(self) -> int:
        """The most program chains any case holds (the import's ``--program-samples`` K)."""
        return max((len(c.programs) for c in self.cases), default=0)

    @property
    def longest_chain(self) -> int:
        return max((len(ch) for c in self.cases for ch in c.programs), default=0)

    @property
    def runtime(self) -> dict | None:
        """The sandbox runtime every line asks for (``read_import_file`` refuses a mix), or None."""
        return self.cases[0].runtime if self.cases else None


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _loads(text: str):
    return json.loads(text, parse_constant=_reject_constant)


def _typename(v) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(v), type(v).__name__)


def _want(cond: bool, key: str, problem: str) -> None:
    if not cond:
        raise _Bad(key, problem)


def _object(v, key: str, keys: tuple, required: tuple = ()) -> dict:
    _want(isinstance(v, dict), key, f"must be an object, got {_typename(v)}")
    unknown = [k for k in v if k not in keys]
    if unknown:
        raise _Bad(f"{key}.{unknown[0]}" if key else unknown[0], f"unknown key (known: {', '.join(keys)})")
    for k in required:
        _want(k in v, f"{key}.{k}" if key else k, "missing")
    return v


def _count(v, key: str) -> int:
    _want(type(v) is int and v >= 0, key, f"must be a whole number >= 0, got {v!r}")
    return v


def _number(v, key: str) -> float:
    _want(type(v) in (int, float) and math.isfinite(v), key, f"must be a finite number, got {v!r}")
    return float(v)


def _prompt(v, key: str):
    if isinstance(v, str):
        return v
    _want(isinstance(v, list) and v, key, "must be a string or a non-empty list of chat messages")
    for i, m in enumerate(v):
        _object(m, f"{key}[{i}]", ("role", "content"), ("role", "content"))
        _want(isinstance(m["role"], str), f"{key}[{i}].role", "must be a string")
        _want(isinstance(m["content"], str), f"{key}[{i}].content", "must be a string")
    return v


def _attempt(v, key: str, allowed: tuple) -> Attempt:
    _object(v, key, ANSWER_KEYS + EXTRA_KEYS)
    given = [k for k in ANSWER_KEYS if k in v]
    _want(len(given) == 1, key, f"needs exactly one of {', '.join(allowed)}"
          + (f" (got {', '.join(given)})" if given else ""))
    kind = given[0]
    _want(kind in allowed, f"{key}.{kind}", f"not allowed here: give {' or '.join(allowed)}"
          + (" (a direct answer is not a program)" if kind == "code" else " (a program chain holds programs)"))
    if kind in ("text", "code"):
        _want(isinstance(v[kind], str), f"{key}.{kind}", f"must be a string, got {_typename(v[kind])}")
    meta = {}
    if "model" in v:
        _want(isinstance(v["model"], str) and v["model"], f"{key}.model", "must be a non-empty string")
        meta["model"] = v["model"]
    if "prompt" in v:
        meta["prompt"] = _prompt(v["prompt"], f"{key}.prompt")
    if "tokens" in v:
        t = _object(v["tokens"], f"{key}.tokens", ("prompt", "completion"))
        meta["tokens"] = {k: _count(t[k], f"{key}.tokens.{k}") for k in ("prompt", "completion") if k in t}
    if "logprobs" in v:
        lp = _object(v["logprobs"], f"{key}.logprobs", ("mean", "min", "tokens"))
        meta["logprobs"] = {k: (_count if k == "tokens" else _number)(x, f"{key}.logprobs.{k}")
                            for k, x in lp.items()}
    if "finish_reason" in v:
        _want(isinstance(v["finish_reason"], str) and v["finish_reason"], f"{key}.finish_reason",
              "must be a non-empty string")
        meta["finish_reason"] = v["finish_reason"]
    if "gen_ms" in v:
        _want(_number(v["gen_ms"], f"{key}.gen_ms") >= 0, f"{key}.gen_ms", "must be >= 0")
        meta["gen_ms"] = float(v["gen_ms"])
    return Attempt(kind, v[kind], meta)


def _case(obj, line: int) -> ImportedCase:
    _object(obj, "", TOP_KEYS, REQUIRED)
    for k in ("case_id", "family"):
        _want(isinstance(obj[k], str) and obj[k].strip() != "", k, f"must be a non-empty string, got {obj[k]!r}")
    ex = obj["examples"]
    _want(isinstance(ex, list) and ex, "examples", "must be a non-empty list of {\"input\", \"output\"} objects")
    examples = tuple((_object(e, f"examples[{i}]", ("input", "output"), ("input", "output"))["input"], e["output"])
                     for i, e in enumerate(ex))
    test = _object(obj["test"], "test", ("input", "output"), ("input", "output"))
    entry = obj.get("entry", "transform")
    _want(isinstance(entry, str) and entry.isidentifier(), "entry", f"must be a Python function name, got {entry!r}")
    runtime = None
    if "runtime" in obj:
        from sandbox.runtime import Runtime

        try:
            runtime = Runtime.from_json(obj["runtime"]).as_json()
        except ValueError as e:
            raise _Bad("runtime", str(e)) from None
    direct = obj.get("direct", [])
    _want(isinstance(direct, list), "direct", f"must be a list of attempts, got {_typename(direct)}")
    direct = tuple(_attempt(a, f"direct[{i}]", ("text", "answer")) for i, a in enumerate(direct))
    programs = obj.get("programs", [])
    _want(isinstance(programs, list), "programs", f"must be a list of chains, got {_typename(programs)}")
    chains = []
    for j, ch in enumerate(programs):
        _want(isinstance(ch, list) and ch, f"programs[{j}]",
              "must be a non-empty list of attempts (a chain: its first program, then its repairs)")
        chains.append(tuple(_attempt(a, f"programs[{j}][{i}]", ("text", "code")) for i, a in enumerate(ch)))
    _want(bool(direct or chains), "direct", "the case holds no attempt (give direct answers, programs or both)")
    return ImportedCase(obj["case_id"], obj["family"], examples, test["input"], test["output"], entry, direct,
                        tuple(chains), line, runtime)


def read_import_file(path: str | Path) -> ImportFile:
    """Every line of ``path`` read and checked; ``ImportFileError`` (one line: the file, the first
    bad line's number and key, and how many more lines are bad) when any line is bad."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ImportFileError(f"{path}: cannot read ({e.strerror or e})") from None
    cases, bad, seen = [], [], {}
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            try:
                obj = _loads(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise _Bad("", f"not UTF-8 text (bad byte at column {e.start + 1})") from None
            except ValueError as e:
                raise _Bad("", f"not a JSON value ({e})") from None
            case = _case(obj, n)
            if case.case_id in seen:
                raise _Bad("case_id", f"{case.case_id!r} repeats line {seen[case.case_id]}")
            seen[case.case_id] = n
            # one sandbox runs the whole file: a line whose runtime differs from the first's is bad
            if cases and case.runtime != cases[0].runtime:
                raise _Bad("runtime", f"differs from line {cases[0].line}'s (one sandbox runtime per file: give "
                                      "every line the same one, or none)")
            cases.append(case)
        except _Bad as b:
            bad.append((n, b))
        except RecursionError:
            bad.append((n, _Bad("", "nested too deeply")))
    if bad:
        n, b = bad[0]
        where = f"key `{b.key}`: " if b.key else ""
        more = f" ({len(bad) - 1} more bad line{'s' * (len(bad) > 2)} after it)" if len(bad) > 1 else ""
        raise ImportFileError(f"{path}: line {n}: {where}{b.problem}{more}; nothing was imported")
    if not cases:
        raise ImportFileError(f"{path}: holds no case (one JSON object per line); nothing was imported")
    return ImportFile(str(path), tuple(cases))


# ---- a trace record in the import format (``live-tool-dagger export``) -------------------------

GIVEN = "given"  # the parse status of an answer or program recorded as already parsed (the rollout's)
NOT_RECORDED = "not_recorded"  # the finish reason of a direct answer the source never gave
UNKNOWN_MODEL = "unknown"  # an imported record's model when its file names none


def _export_attempt(part: dict, kind: str, model: str | None) -> dict:
    """One direct answer or program round of a record as an ATTEMPT: its raw text (parsed again on
    import, as it was when traced), or the value when it was recorded as already parsed; its own
    model, else ``model`` (the record's, when no attempt of it names its own)."""
    if part["parse"]["status"] == GIVEN:
        out = {"answer": _direct_value(part)} if kind == "direct" else {"code": part["code"]}
    else:
        out = {"text": part["raw"]}
    if part.get("model") or model:
        out["model"] = part.get("model") or model
    if "prompt" in part:
        out["prompt"] = part["prompt"]
    if "prompt" not in part and part.get("feedback"):  # a repair: what it was shown, read back as its feedback
        out["prompt"] = part["feedback"]
    out["tokens"] = {"prompt": int(part.get("prompt_tokens") or 0),
                     "completion": int(part.get("completion_tokens") or 0)}
    lp = part.get("logprobs")
    if isinstance(lp, dict) and all(isinstance(lp.get(k), (int, float)) for k in ("mean", "min")):
        out["logprobs"] = {k: lp[k] for k in ("mean", "min", "tokens") if k in lp}
    if part.get("finish_reason"):
        out["finish_reason"] = part["finish_reason"]
    if "gen_ms" in part:
        out["gen_ms"] = part["gen_ms"]
    return out


def _direct_value(direct: dict):
    return direct["value"] if "value" in direct else direct.get("table")


def export_case(record: dict, runtime: dict | None = None) -> dict:
    """A trace record (as ``read_traces`` gives it) as one line of an import file; ``runtime``: the
    sandbox runtime its run traced with (its run config's ``rollout.sandbox_runtime``)."""
    task = record["task"]
    if "examples" in task:
        examples = [{"input": e["input"], "output": e["output"]} for e in task["examples"]]
        test_input, entry = task["test_input"], task.get("entry", "transform")
    else:  # a record from before tasks carried several examples
        examples = [{"input": task["input_table"], "output": task["output_table"]}]
        test_input, entry = task["test_table"], "transform"
    out = {"case_id": record["case_id"], "family": record["family"], "examples": examples,
           "test": {"input": test_input, "output": record["hidden"]["answer"]}}
    if entry != "transform":
        out["entry"] = entry
    if runtime:
        out["runtime"] = runtime
    direct = record["direct"]
    chains = [ch for ch in [record["rounds"], *record.get("samples", [])] if ch]
    # a live backend's record names its model once; an imported one per attempt (or not at all)
    named = any("model" in p for p in [direct, *(r for ch in chains for r in ch)])
    model = None if named or record["model"] == UNKNOWN_MODEL else record["model"]
    if direct.get("finish_reason") != NOT_RECORDED:
        out["direct"] = [_export_attempt(direct, "direct", model)]
    if chains:
        out["programs"] = [[_export_attempt(r, "program", model) for r in ch] for ch in chains]
    return out
