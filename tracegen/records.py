"""Trace files on disk: schema validation, crash-safe appends, and tolerant reading.

A trace file is JSON lines, one case record per line (``schemas/trace.schema.json``). Each record
is written with a single ``write`` of one complete line followed by ``fsync``, so a crash leaves at
most one torn last line; ``read_traces`` drops it (and says so) and ``repair_torn_tail`` truncates
it before a resumed run appends.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

SCHEMA_VERSION = 4  # v4: tasks over any JSON value with several examples, ``feedback`` on every round
READABLE_VERSIONS = (1, 2, 3, 4)  # versions 1 to 3 are upgraded to 4 on read (``upgrade_record``)
_SCHEMA_PATH = Path(__file__).parent / "schemas" / "trace.schema.json"


class TraceFileError(ValueError):
    """A trace file that cannot be used (another schema version, invalid records)."""


_STRING = {"type": "string"}
_ROW = {"type": "array", "items": _STRING}


def _valid_strings(items, instance: list) -> bool:
    """True when every element of ``instance`` provably meets ``items``, a string or a row of strings
    (the tables: most of a record). Anything else is left to jsonschema."""
    if items == _STRING:
        return all(type(c) is str for c in instance)
    if items == _ROW:
        return all(type(r) is list and all(type(c) is str for c in r) for r in instance)
    return False


@lru_cache(maxsize=1)
def _validator():
    """Draft 2020-12 with one shortcut: an array of strings (or of rows of strings) that is valid as
    a whole is passed in one loop instead of one jsonschema descent per cell (which took ~10 ms a
    record). Whatever fails the shortcut goes through jsonschema's own ``items``, so errors and
    their messages are jsonschema's."""
    import jsonschema
    from jsonschema import validators

    base = jsonschema.Draft202012Validator
    items = base.VALIDATORS["items"]

    def string_items(validator, sub, instance, schema):
        if type(instance) is list and "prefixItems" not in schema and _valid_strings(sub, instance):
            return
        yield from items(validator, sub, instance, schema)

    schema = json.loads(_SCHEMA_PATH.read_text())
    return validators.extend(base, {"items": string_items})(schema)


def upgrade_record(record: dict) -> dict:
    """A record of an earlier version as version 4 (a new dict; version-4 records come back as they are).

    Version 1 held the chain of sample 0 in ``rounds`` (kept as is) and, with ``--program-samples``
    k > 1, a flat ``samples`` list of extra WRITE rounds with ``hidden.samples`` aligned. Version 2
    holds a chain per extra sample, so each v1 sample becomes a one-round chain, and
    ``sample_repairs = 0`` says those samples were never repaired (FIX on them is not in the trace).
    Versions 2 and 3 held one example of string tables (``task.input_table/output_table/test_table``)
    and the direct answer as ``direct.table``: version 4 holds ``task.examples`` (here one),
    ``task.test_input``, ``value_type`` "table", ``entry`` "transform", and ``direct.value``. Their
    rounds get no ``feedback`` (what they were shown was not recorded)."""
    version = record.get("schema_version")
    if version == 1:
        out = dict(record, schema_version=2)
        if "samples" in record:
            out["samples"] = [[r] for r in record["samples"]]
            out["sample_repairs"] = 0
            hidden = dict(record["hidden"])
            hidden["samples"] = [[h] for h in hidden.get("samples", [])]
            out["hidden"] = hidden
        record, version = out, 2
    if version not in (2, 3):
        return record
    out = {}
    for key, value in record.items():  # keys keep their places
        if key == "schema_version":
            value = SCHEMA_VERSION
        elif key == "task" and isinstance(value, dict) and "input_table" in value:
            value = {"examples": [{"input": value["input_table"], "output": value["output_table"]}],
                     "test_input": value["test_table"], "value_type": "table", "entry": "transform"}
        elif key == "direct" and isinstance(value, dict) and "table" in value:
            value = {("value" if k == "table" else k): v for k, v in value.items()}
        out[key] = value
    return out


def assign_splits(records: list[dict], split_families: dict, probe_case_ids=(), *, trace_file, manifest,
                  check: bool = True) -> list[dict]:
    """Set every record's ``split`` to the one in force (the manifest's), in place; the one place
    where traces and their split manifest meet. A probe case (``probe_case_ids``) and a family the
    manifest does not place are ``unassigned``.

    ``check``: a record whose written ``split`` differs from the manifest's raises
    ``TraceFileError`` naming ``trace_file``, the case id, both values and ``manifest``; records
    written ``unassigned`` (probe cases) are exempt. A run that re-splits its traces on purpose
    (another manifest given) passes ``check=False``: the records then take the manifest's split in
    memory, and the file keeps what was written."""
    of_family = {f: s for s, fs in split_families.items() for f in fs}
    probes = frozenset(probe_case_ids)
    for r in records:
        split = "unassigned" if r["case_id"] in probes else of_family.get(r["family"], "unassigned")
        written = r.get("split")
        if check and written != split and written != "unassigned":
            raise TraceFileError(f"{trace_file}: case {r['case_id']!r} was traced in split {written!r} but "
                                 f"{manifest} puts it in {split!r}; give the split it was traced with, or "
                                 "another manifest to re-split it on purpose")
        r["split"] = split
    return records


def validate_record(record: dict) -> None:
    """Raise ``TraceFileError`` with the first schema violation (a version 2 or 3 record is checked as
    the version-4 record it reads as: ``upgrade_record``; a version 1 record must be upgraded first)."""
    if record.get("schema_version") in (2, 3):
        record = upgrade_record(record)
    errors = sorted(_validator().iter_errors(record), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.path) or "<record>"
        raise TraceFileError(f"record {record.get('case_id', '?')!r} violates the trace schema at {where}: {e.message}")


def append_record(path: str | Path, record: dict) -> None:
    """Append one validated record as one line, flushed to disk."""
    validate_record(record)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    with open(path, "ab") as f:
        f.write(line.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def reorder_records(path: str | Path, order: list[str]) -> bool:
    """Put the lines of a trace file in the order of the case ids ``order``, byte for byte, when
    they are not (a run stopped mid-wave wrote its finished cases ahead of unfinished ones, which a
    resumed run then appended). The new file is written aside, flushed and renamed into place, so
    a crash leaves the old or the new one. A file holding a case id not in ``order`` (or one id
    twice, or a line that is not a record) is left as it is. Returns whether it was rewritten."""
    path = Path(path)
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        return False
    lines = data[:-1].split(b"\n")
    rank = {cid: i for i, cid in enumerate(order)}
    try:
        ids = [json.loads(line)["case_id"] for line in lines]
    except (ValueError, KeyError, TypeError):
        return False
    if len(set(ids)) != len(ids) or not all(cid in rank for cid in ids):
        return False
    ranks = [rank[cid] for cid in ids]
    if ranks == sorted(ranks):
        return False
    body = b"".join(line + b"\n" for _, line in sorted(zip(ranks, lines), key=lambda p: p[0]))
    tmp = path.with_name(f".{path.name}.reorder-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777)  # the file's own mode, as the umask made it
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return True


def repair_torn_tail(path: str | Path) -> int:
    """Truncate a torn last line (a crash mid-write); return the number of bytes dropped."""
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    cut = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
    return len(data) - cut


def read_traces(path: str | Path, *, validate: bool = True, warn=print) -> list[dict]:
    """Read every complete record; a torn last line is dropped with a message.

    Records of versions 1 to 3 come back upgraded to version 4. Raises ``TraceFileError`` for a record of another schema version or a corrupt line that is
    not the last one (that is not a crash artefact, and silently skipping it would lose data).
    """
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    if path.suffix == ".gz":  # a committed study's traces (scripts/slim_study.py)
        import gzip

        raw = gzip.decompress(raw)
    lines = raw.split(b"\n")
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        last = i == len(lines) - 1  # no trailing newline: possibly torn
        try:
            rec = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            if last:
                warn(f"{path}: dropping a torn last line ({len(line)} bytes) left by an interrupted run")
                continue
            raise TraceFileError(f"{path}: line {i + 1} is not valid JSON")
        if not isinstance(rec, dict):
            raise TraceFileError(f"{path}: line {i + 1} is not a JSON object")
        version = rec.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise TraceFileError(
                f"{path}: line {i + 1} has trace schema version {version!r}; this toolkit reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}"
            )
        rec = upgrade_record(rec)
        if validate:
            try:
                validate_record(rec)
            except TraceFileError as e:
                raise TraceFileError(f"{path}: line {i + 1}: {e}") from None
        records.append(rec)
    return records


# Reading a record's task and direct answer: version 4, or a version 2/3 record a caller built
# by hand (records read from disk are upgraded already; these accept both so no reader cares).

def task_examples(record: dict) -> list[tuple]:
    """(input, output) of every public example."""
    t = record["task"]
    if "input_table" in t:
        return [(t["input_table"], t["output_table"])]
    return [(e["input"], e["output"]) for e in t["examples"]]


def task_test_input(record: dict):
    t = record["task"]
    return t["test_table"] if "input_table" in t else t["test_input"]


def task_value_type(record: dict) -> str:
    return record["task"].get("value_type", "table")


def direct_value(record: dict):
    """The parsed direct answer (None when none was read)."""
    d = record.get("direct") or {}
    return d["value"] if "value" in d else d.get("table")


def case_of_record(record: dict):
    """The case a record was traced from, out of the record alone (its task and ``hidden.answer``):
    a re-analysis reads no case file. ``meta`` is left empty (nothing analysed reads it)."""
    from cases import Case, Example

    task = record["task"]
    return Case(record["case_id"], record["family"], tuple(Example(i, o) for i, o in task_examples(record)),
                task_test_input(record), record["hidden"]["answer"], value_type=task_value_type(record),
                entry=task.get("entry", "transform"))
