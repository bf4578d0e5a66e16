"""Byte formats between the parent, the worker process and the per-run child.

Three frames, all little-endian and length-prefixed, so no side ever has to guess where a
message ends and a reader can refuse an oversized one before reading it:

- request, parent -> worker: ``REQUEST`` header (timeout in ms, memory in MiB, code length,
  table length) followed by the UTF-8 code and the table as compact JSON;
- result, child -> worker: ``RESULT`` header (kind, error code, payload length) + payload;
- reply, worker -> parent: ``REPLY`` header (kind, error code, child wall time in us, child CPU
  time in us, payload length) + payload. The first reply of a worker is its ready message,
  whose payload is the JSON protection report.

The payload of an ``OK`` frame is the output table as UTF-8 JSON, of an ``ERR`` frame the short
message. Loaded both as ``sandbox._wire`` and as a top-level module inside the worker, so it
imports only the standard library.
"""
from __future__ import annotations

import os
import struct

ERRORS = ("syntax", "forbidden", "no_transform", "timeout", "memory", "exception",
          "bad_output", "crash")
CODE = {name: i for i, name in enumerate(ERRORS)}

OK, ERR, READY = 0, 1, 2

REQUEST = struct.Struct("<IIII")
RESULT = struct.Struct("<BBI")
REPLY = struct.Struct("<BBIII")

MAX_MESSAGE_BYTES = 1000  # error messages are cut to this before they cross a pipe


def read_exact(fd: int, n: int) -> bytes | None:
    """Read exactly ``n`` bytes from a blocking fd; ``None`` on end of file before that."""
    parts = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def cut(message: str, limit: int = 300) -> str:
    """One short line: what a model can act on, never a wall of text."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."
