"""Removing the host's paths from a worker's memory before it serves runs (used by ``zygote.main``).

A run can read any byte of its child's memory (``ctypes.string_at``), and every child is a copy of
the worker. So, once every module is loaded: ``hide_host_paths`` empties where a program looks
(``sys.argv``, ``sys.path``, the prefixes, modules' ``__file__``...); ``host_paths`` and ``needles``
list the interpreter's install folders and every folder above them, in each encoding a copy may
take; ``scrub`` overwrites every copy in the writable private mappings with as many ``x``, and
``reset_hash`` forgets the cached hash of each ``str``/``bytes`` that held one (so a guessed path
cannot be confirmed by its hash).

Not covered: read-only file mappings (the interpreter binary's compiled-in prefix). Loaded both as
``sandbox._scrub`` and as a top-level module inside the worker, so it imports only the standard
library.
"""
from __future__ import annotations

import os
import sys


def hide_host_paths() -> None:
    """Leave no path of this machine where a program looks: ``sys.argv``, ``sys.path``, the
    interpreter's prefixes, modules' ``__file__``/``__cached__``/``__spec__``/``__path__``.

    Every module is loaded by now, and the sandbox's own code was compiled under ``<sandbox>/``
    names (``_worker.BOOT``). Not covered: ``co_filename`` of the standard library's code
    objects, which still names where Python is installed.
    """
    sys.argv, sys.orig_argv, sys.path = ["transform"], [], []
    sys.path_importer_cache.clear()
    for name in ("executable", "_base_executable", "prefix", "base_prefix", "exec_prefix",
                 "base_exec_prefix", "_stdlib_dir", "pycache_prefix", "_home"):
        if hasattr(sys, name):
            setattr(sys, name, None if name in ("pycache_prefix", "_home") else "")
    for module in list(sys.modules.values()):
        for attr in ("__file__", "__cached__"):
            if hasattr(module, attr):
                try:
                    delattr(module, attr)
                except (AttributeError, TypeError):
                    pass
        if isinstance(getattr(module, "__path__", None), list):
            module.__path__ = []
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            try:
                spec.origin, spec.cached, spec.has_location = None, None, False
                if spec.submodule_search_locations is not None:
                    spec.submodule_search_locations = []
            except AttributeError:
                pass


# Standard places: naming them tells a program nothing about this machine, and scrubbing them
# would rewrite unrelated strings (``os.defpath``).
_STANDARD = frozenset({"/", "/usr", "/usr/local", "/opt", "/bin", "/sbin", "/lib", "/lib64",
                       "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/local/bin",
                       "/usr/local/lib", "/tmp", "/var/tmp"})


def host_paths(extra=()) -> list[str]:
    """The host paths this worker knows (read before ``hide_host_paths``), longest first: the
    interpreter's install folders and every parent of them. Its working directory is ``/``
    (the parent starts it there), so it never knows the parent's folders at all. Standard
    system folders are left out. Every parent too, not just the deepest path: a copy of a
    path the heap has half reused, or a shorter path of its own, still names the folders above.
    ``extra``: more folders the worker was told (where a runtime's optional packages are).
    """
    found = {p for path in extra for p in (path, os.path.realpath(path))}
    for name in ("executable", "_base_executable"):
        path = getattr(sys, name, None)
        if path:
            found.update({os.path.dirname(path), os.path.dirname(os.path.realpath(path))})
    for name in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix", "_stdlib_dir"):
        path = getattr(sys, name, None)
        if path:
            found.update({path, os.path.realpath(path)})
    for path in list(found):
        while path not in ("/", ""):
            found.add(path)
            path = os.path.dirname(path)
    found = {p for p in found if len(p) >= 4 and p not in _STANDARD and not (
        os.path.dirname(p) in _STANDARD and os.path.basename(p).startswith(("python", "bin")))}
    return sorted(found, key=lambda p: (-len(p), p))


_BYTES_DATA = sys.getsizeof(b"") - 1  # where a bytes object's data starts, from its address
# The hits whose object's hash is reset: more than a worker has (about 2,000 with the standard
# library, some 2,500 more with numpy's modules), so none is left with its old hash.
MAX_HITS = 1 << 14


def needles(paths: list[str]) -> list[tuple[bytes, bytes]]:
    """``(path bytes, filler)`` in each encoding a copy may take (made before the codecs'
    modules lose their paths): UTF-8 and UTF-32 (``wchar_t``), Latin-1/UTF-16 when not ASCII.
    Longest first. Also each long path's UTF-8 tail without its first 8 and 16 bytes: what is
    left of a freed heap copy once malloc has written its list pointers over the start."""
    variants, seen = [], set()
    for path in paths:
        for enc in ("utf-8", "latin-1", "utf-16-le", "utf-32-le"):
            if enc in ("latin-1", "utf-16-le") and path.isascii():
                continue
            try:
                data = path.encode(enc)
            except UnicodeEncodeError:
                continue
            forms = [data]
            if enc == "utf-8":
                forms += [data[k:] for k in (8, 16) if len(data) - k >= 12 and b"/" in data[k:]]
            for form in forms:
                if form not in seen:
                    seen.add(form)
                    variants.append((form, b"x" * len(form) if enc == "utf-8"
                                     else "x".encode(enc) * (len(form) // len("x".encode(enc)))))
    variants.sort(key=lambda v: -len(v[0]))
    return variants


def scrub(variants: list[tuple[bytes, bytes]], maps_fd: int) -> int:
    """Overwrite every copy of the ``needles`` in this process's writable memory; the count.

    A program can read any byte of its child's memory (``ctypes.string_at``), including
    freed heap blocks, the argument and environment strings on the stack, the C-level copies
    of the interpreter's configuration (``wchar_t``) and the dynamic linker's list of loaded
    libraries. So each path is replaced in place by as many ``x``: same length, so no
    structure moves; a live string that held one (a standard-library ``co_filename``) now
    reads ``xxxx/lib/python3.11/...``. Private writable mappings only (``/proc/self/maps``
    through ``maps_fd``, opened before the chroot); read-only file mappings (the interpreter
    binary's own constants, such as its compiled-in prefix and library search path) cannot be
    written and are not covered. Passes repeat until one finds nothing (a pass's own
    snapshots are copies too).
    """
    import ctypes
    own = [(id(v) + _BYTES_DATA, id(v) + _BYTES_DATA + len(v)) for v, _ in variants]
    total = 0
    # (address, length, region start) of every hit, for ``reset_hash``: a ctypes array made
    # before the scan, because nothing may be allocated while one runs (an allocation can
    # reuse a freed block that held a path, and the stale snapshot would then send the filler
    # over a live object)
    hits_at = (ctypes.c_uint64 * (3 * MAX_HITS))()
    n_hits = 0
    # A needle holds the shorter ones of its folder's parents (and their tails): where one of
    # those is absent from a region, it is too, and is not searched for. So a region is searched
    # for little more than the shortest needles (numpy's buffers made this seconds per worker).
    inside = [[j for j, (w, _) in enumerate(variants) if len(w) < len(v) and w in v]
              for v, _ in variants]
    present = bytearray(len(variants))
    shortest_first = range(len(variants) - 1, -1, -1)
    for _ in range(4):
        regions = []
        text = b""
        while chunk := os.pread(maps_fd, 1 << 16, len(text)):
            text += chunk
        for line in text.split(b"\n"):
            fields = line.split()
            if len(fields) >= 2 and fields[1][:2] == b"rw" and fields[1][3:4] == b"p" and \
                    not (len(fields) > 5 and fields[5] in (b"[vvar]", b"[vsyscall]")):
                start, _, end = fields[0].partition(b"-")
                regions.append((int(start, 16), int(end, 16)))
        ctypes.memset(id(text) + _BYTES_DATA, 0, len(text))  # it names every mapped library
        del text, line, fields, chunk
        hits = 0
        for start, end in regions:
            snap = ctypes.string_at(start, end - start)
            # a region of zeros holds no path: skipped whole (a BLAS library's buffer, tens of
            # MiB never written, would otherwise cost seconds of searching)
            zeros = snap.count(0) == len(snap)
            for k in shortest_first:
                present[k] = not zeros and all(present[j] for j in inside[k]) and \
                    snap.find(variants[k][0]) >= 0
            for k, (needle, filler) in enumerate(variants):
                at = snap.find(needle) if present[k] else -1
                while at >= 0:
                    addr = start + at
                    if not any(lo <= addr < hi for lo, hi in own) and \
                            ctypes.string_at(addr, len(needle)) == needle:  # still there
                        ctypes.memmove(addr, filler, len(filler))
                        hits += 1
                        if n_hits < MAX_HITS:
                            hits_at[3 * n_hits:3 * n_hits + 3] = (addr, len(filler), start)
                            n_hits += 1
                    at = snap.find(needle, at + 1)
            ctypes.memset(id(snap) + _BYTES_DATA, 0, len(snap))
            del snap
        total += hits
        if not hits:
            break
    for k in range(n_hits):
        reset_hash(hits_at[3 * k], hits_at[3 * k + 1], hits_at[3 * k + 2])
    for needle, _ in variants:  # the needles themselves, last
        ctypes.memset(id(needle) + _BYTES_DATA, 0, len(needle))
    return total


_STR_TYPE, _BYTES_TYPE = id(str).to_bytes(8, "little"), id(bytes).to_bytes(8, "little")
_ASCII_DATA = sys.getsizeof("") - 1  # where a compact ASCII str's characters start
_COMPACT_DATA = sys.getsizeof("\u0100") - 4  # ... and a compact non-ASCII one's (1-4 bytes each)


def reset_hash(addr: int, size: int, floor: int, reach: int = 1 << 16) -> bool:
    """Forget the cached hash of the ``str`` or ``bytes`` object whose characters hold
    ``addr .. addr + size`` (just overwritten by ``scrub``): the hash was computed from the
    old text, so with the fixed hash seed ``hash(s) == hash(guess)`` would confirm a guessed
    path, and ``ctypes`` can read it from any object, live or freed. Looks back up to ``reach``
    bytes (not below ``floor``, the region's start) for the nearest object header (a type
    pointer to ``str``/``bytes`` and a length that covers the hit) and sets its hash to -1 (not computed yet), so the next
    ``hash()`` computes it from the scrubbed text."""
    import ctypes
    lo = max(floor, (addr - reach) & ~7)
    window = ctypes.string_at(lo, addr - lo)
    end = len(window)
    while end >= 8:  # each 8-aligned type pointer, nearest first (found at C speed: a hit
        # each for thousands of standard-library and numpy file names)
        at = max(window.rfind(_STR_TYPE, 0, end), window.rfind(_BYTES_TYPE, 0, end))
        if at < 0:
            break
        end = at + 7  # the next search ends before this position
        if at % 8:
            continue
        kind = window[at:at + 8]
        obj = lo + at - 8
        # (no check of the reference count: a freed object's holds the allocator's list
        # pointer, and its hash can still be read from raw memory)
        length = ctypes.c_ssize_t.from_address(obj + 16).value
        if not 0 < length < 1 << 24:
            continue
        if kind == _BYTES_TYPE:
            data, width = obj + _BYTES_DATA, 1
        else:
            state = ctypes.c_uint32.from_address(obj + 32).value
            if not state & 0x20:  # not compact: the characters live elsewhere
                continue
            width = (state >> 2) & 7
            data = obj + (_ASCII_DATA if state & 0x40 else _COMPACT_DATA)
            if width not in (1, 2, 4):
                continue
        if data <= addr and addr + size <= data + length * width:
            ctypes.c_ssize_t.from_address(obj + 24).value = -1
            return True
    return False
