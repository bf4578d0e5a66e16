"""Byte formats between the parent, the worker process and the per-run child.

Three frames (and two tags), all little-endian and length-prefixed, so no side ever has to guess
where a message ends and a reader can refuse an oversized one before reading it:

- request, parent -> worker: ``REQUEST`` header (timeout in ms, memory in MiB, code length,
  input length, the output kind's index in ``KINDS``, entry name length) followed by the entry
  name (ASCII; empty for ``transform``), the UTF-8 code and the input as compact JSON;
- result, child -> worker, on the child's fd 3: a ``RESULT`` header (kind, error code, payload
  length) + payload;
- tags, child -> worker, one byte each on the child's fd 4, read by the worker only once the
  child is reaped: ``TAG_READ`` once the child has read its whole request (the worker never
  holds a request: the child reads it from the request pipe after the fork), ``TAG_START`` just
  before the first line of the program runs. They let the worker, not the program, decide the
  class: only ``PRE_START`` classes count before ``TAG_START``, only ``PROGRAM`` classes after
  it (a program can write to its pipes, but cannot unwrite a tag);
- reply, worker -> parent: ``REPLY`` header (kind, error code, child wall time in us, child CPU
  time in us, payload length) + payload. The first reply of a worker is its ready message,
  whose payload is the JSON protection report. The parent may queue one more (small) request
  behind the one a worker is running; the worker reads it only once it has replied, and a
  ``STOP`` reply says it will read nothing more (what was queued never started).

The payload of an ``OK`` frame is the output as UTF-8 JSON, of an ``ERR`` frame the short
message. Loaded both as ``sandbox._wire`` and as a top-level module inside the worker, so it
imports only the standard library.
"""
from __future__ import annotations

import os
import struct

# "blocked" (a run that waited its limit without running) is last: the wire codes of the others
# stay what they were.
ERRORS = ("syntax", "forbidden", "no_transform", "timeout", "memory", "exception",
          "bad_output", "crash", "blocked")
CODE = {name: i for i, name in enumerate(ERRORS)}

OK, ERR, READY, STOP = 0, 1, 2, 3  # STOP: an ERR after which the worker exits
TAG_READ, TAG_START = 0x52, 0x53  # never a valid ``kind``, so a tag and a header cannot be mixed up

# Who may name which class: the harness before the program starts (a refused or unparsable
# program, a compile that ran out of memory, a protection that could not be applied), the
# program's own run after it (through the harness or by writing to the pipe itself), and only
# the worker (from the child's wait status and the clock) for deaths and deadlines.
PRE_START = frozenset({"syntax", "forbidden", "memory", "crash"})
PROGRAM = frozenset({"no_transform", "exception", "memory", "bad_output"})

# What an output must be: "table" (a list of lists of str), "grid" (a list of lists of int, rows
# of any length), "json" (any JSON value within the size, depth and node limits).
KINDS = ("table", "grid", "json")
ENTRY = "transform"  # the function a program defines unless the request names another

REQUEST = struct.Struct("<IIIIHH")
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


def read_into(fd: int, buf) -> bool:
    """Fill ``buf`` (a bytearray or memoryview) from a blocking fd; ``False`` on end of file.

    Reads straight into ``buf``: no intermediate ``bytes`` object is left behind in freed memory.
    """
    view, got = memoryview(buf), 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if not n:
            return False
        got += n
    return True


def write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def wipe(buf) -> None:
    """Overwrite a bytearray in place before it is freed (freed memory keeps its content)."""
    if len(buf):
        memoryview(buf)[:] = bytes(len(buf))


def cut_utf8(data, limit: int = MAX_MESSAGE_BYTES):
    """``data[:limit]`` moved back to the start of a UTF-8 character, so a cut never splits one
    (a split character would make the whole message invalid UTF-8, and lose it)."""
    if len(data) <= limit:
        return data
    end = limit
    while end > limit - 4 and end > 0 and (data[end] & 0xC0) == 0x80:  # a continuation byte
        end -= 1
    return data[:end]


def cut(message: str, limit: int = 300) -> str:
    """One short line: what a model can act on, never a wall of text."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."
