"""Program outputs of the chunk being traced, held as JSON text in an unnamed temporary file.

A program's output may be 4 MiB of JSON (``sandbox.OutputLimits``), which decodes to tens of MB of
``str`` objects. The rollout grades each output as it arrives, then keeps it here (``put``: a
handle) until its case's record is built and written (``loaded``: the round with its outputs
decoded), so the parent holds the outputs being graded, not every output of the chunk
(``benchmarks/bench_parent_memory.py``).
"""
from __future__ import annotations

import json
import os
import tempfile


class Outputs:
    """The program outputs of one chunk while it is traced, as compact JSON text in an unnamed
    temporary file (the kernel removes it on close or when the process dies). ``put`` returns a
    handle; ``Stored.load`` decodes it again, to the same lists (JSON of lists of ``str`` round-trips
    exactly), when a prompt or a record needs it."""

    def __init__(self) -> None:
        self._file, self._end = None, 0

    def put(self, table) -> Stored | None:
        if table is None:
            return None
        data = json.dumps(table, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="ltd-outputs-", buffering=0)
        fd, at = self._file.fileno(), self._end
        view = memoryview(data)
        while view:
            view = view[os.pwrite(fd, view, at + len(data) - len(view)):]
        self._end += len(data)
        return Stored(self, at, len(data))

    def read(self, at: int, size: int) -> bytes:
        parts, got = [], 0
        while got < size:
            chunk = os.pread(self._file.fileno(), size - got, at + got)
            if not chunk:
                raise EOFError("the rollout's output file is shorter than it wrote")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    __del__ = close


class Stored:
    """One output in an ``Outputs`` file."""

    __slots__ = ("store", "at", "size")

    def __init__(self, store: Outputs, at: int, size: int) -> None:
        self.store, self.at, self.size = store, at, size

    def load(self):
        return json.loads(self.store.read(self.at, self.size))


def loaded(rnd: dict) -> dict:
    """``rnd`` with its outputs decoded (a copy; keys keep their order, so records are byte for byte
    what they were when rounds held the decoded outputs)."""
    out = dict(rnd, visible=dict(rnd["visible"]))
    holders = [(out, "test_output"), (out["visible"], "output")]
    if "visible_runs" in rnd:
        out["visible_runs"] = [dict(r) for r in rnd["visible_runs"]]
        holders += [(r, "output") for r in out["visible_runs"]]
    for holder, key in holders:
        if isinstance(holder.get(key), Stored):
            holder[key] = holder[key].load()
    return out
