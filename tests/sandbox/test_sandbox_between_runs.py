"""What a run leaves for the next one and for the trace writer, each attacked by a hostile program
with the AST pre-check ON: every program reaches ``os``, ``sys`` and ``fcntl`` through
``random._os``, which the pre-check lets through.

1. a lone surrogate in an output or message must never reach (and crash) the trace writer, also
   when the run is resumed with the same program;
2. nothing of an earlier run (request, table, output, message) is reachable from a later child:
   not through frames, not through the objects the garbage collector knows, not in raw heap memory;
3. descriptors 0-2 carry no kernel state from one run to the next (``F_SETSIG``, ``F_SETFL``,
   OFD locks).

Plus the minor ones: error classes a program cannot forge, no host paths, stale folders cleaned.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

import sandbox
from sandbox import Sandbox

PRELUDE = '''
import random
os = random._os
sys = os.sys
fcntl = sys.modules["fcntl"]
def attempt(fn, *args):
    try:
        return "ok:" + str(fn(*args))
    except BaseException as exc:
        return "err:" + type(exc).__name__
'''


@pytest.fixture(scope="module")
def sb():
    with Sandbox(workers=2) as box:  # the pre-check stays on
        yield box


def run(sb, body, table=(("a",),), timeout_s=5.0):
    return sb.run(PRELUDE + body, [list(r) for r in table], timeout_s=timeout_s, memory_mb=256)


# ----------------------------------------------------------------------------- 1: lone surrogates

REPLACE_ENCODER = PRELUDE + '''
json = sys.modules["json"]
def transform(table):
    json.encoder.encode_basestring = lambda s: '"\\\\udc80"'
    return [["x"]]
'''
OWN_FRAME = PRELUDE + '''
def transform(table):
    payload = b'[["\\\\udc80"]]'
    frame = bytes([0, 0]) + len(payload).to_bytes(4, "little") + payload
    os.write(3, frame)
    os._exit(0)
'''
SURROGATE_MESSAGE = '''
def transform(table):
    raise ValueError("bad \\udc80 cell")
'''


def test_surrogate_outputs_are_bad_output(sb):
    for code in (REPLACE_ENCODER, OWN_FRAME):
        r = sb.run(code, [["a"]], timeout_s=5.0)
        assert not r.ok and r.error == "bad_output", (r.error, r.message)
        r.message.encode("utf-8")  # the message itself is valid
    r = sb.run(SURROGATE_MESSAGE, [["a"]], timeout_s=5.0)
    assert r.error == "exception" and "ValueError" in r.message
    r.message.encode("utf-8")


class _Hostile:
    """A deterministic backend (as a replaying or cached backend is): the same program every time."""

    name = "hostile"
    model_name = "hostile"

    def __init__(self, programs):
        self.programs = programs

    def generate(self, requests):
        from tracegen.backends.base import Completion
        out = []
        for req in requests:
            text = ('```json\n[["x"]]\n```' if req.kind == "direct"
                    else "```python\n" + self.programs[req.task.case_id] + "\n```")
            out.append(Completion(text, 1, 1, 0.0))
        return out


def _case(cid):
    from cases import Case
    return Case.from_tables(cid, "fam", [["a"]], [["A"]], [["b"]], [["B"]])


def test_surrogate_program_through_rollout_and_resume(tmp_path):
    from tracegen.records import read_traces
    from tracegen.rollout import RolloutConfig, rollout

    cfg = RolloutConfig(max_repairs=1, exec_timeout_s=5.0, wave_size=2, progress=False)
    programs = {"fam/c_1": REPLACE_ENCODER, "fam/c_2": OWN_FRAME, "fam/c_3": SURROGATE_MESSAGE,
                "fam/c_4": "def transform(table):\n    return [[c.upper() for c in r] for r in table]"}
    cases = [_case(c) for c in programs]
    path = tmp_path / "fresh_traces.jsonl"
    backend = _Hostile(programs)
    with Sandbox(workers=2) as box:
        counts = rollout(cases[:2], {}, backend, box, path, cfg)
        assert counts["traced"] == 2
        # --resume: the same deterministic backend replays the same programs for what is left
        done = frozenset(r["case_id"] for r in read_traces(path))
        counts = rollout(cases, {}, backend, box, path, cfg, done_ids=done)
        assert counts == {**counts, "traced": 2, "skipped": 2}
    records = read_traces(path)  # validates every record
    assert [r["case_id"] for r in records] == list(programs)
    for rec in records[:2]:
        assert rec["rounds"][0]["visible"]["error"] == "bad_output"
        assert rec["rounds"][0]["test_output"] is None
    assert records[2]["rounds"][0]["visible"]["error"] == "exception"
    assert records[3]["rounds"][0]["visible_pass"]
    path.read_bytes().decode("utf-8")  # strict


# ----------------------------------------------------------------------------- 2: earlier runs

HEAD, TAIL = "QXJ", "earlier-run-9f2c1e"  # the marker is HEAD + TAIL; no later program holds both

SCANNER = PRELUDE + '''
gc = sys.modules["gc"]
ctypes = sys.modules["ctypes"]
HS, TS = "QXJ", "earlier-run-9f2c1e"
HB, TB = HS.encode(), TS.encode()

def has(data, head, tail):
    i = data.find(head)
    while i >= 0:
        if data[i + len(head):i + len(head) + len(tail)] == tail:
            return True
        i = data.find(head, i + 1)
    return False

def check(x):
    if isinstance(x, str):
        return has(x, HS, TS)
    if isinstance(x, (bytes, bytearray)):
        return has(bytes(x), HB, TB)
    if isinstance(x, memoryview):
        try:
            return has(x.tobytes(), HB, TB)
        except Exception:
            return False
    return False

F = lambda obj, name: getattr(obj, "f_" + name)  # the pre-check reads names, not strings

def transform(table):
    frames = 0
    f = sys._getframe()
    while f is not None:
        for v in list(F(f, "locals").values()) + list(F(f, "globals").values()):
            if check(v) or has(repr(v), HS, TS):
                frames += 1
        f = F(f, "back")
    objects = 0
    seen = 0
    gc.unfreeze()  # the worker froze its objects; frozen ones are left out of get_objects()
    for o in gc.get_objects():
        for r in gc.get_referents(o):
            seen += 1
            if check(r):
                objects += 1
    libc = ctypes.CDLL(None)
    libc.sbrk.restype = ctypes.c_void_p
    libc.sbrk.argtypes = [ctypes.c_ssize_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    mapped = lambda a: libc.madvise(a, 4096, 0) == 0
    pages = set()
    top = libc.sbrk(0) & ~4095
    a = top - 4096
    while mapped(a) and top - a < (256 << 20):  # the malloc heap: contiguous, read-write
        pages.add(a)
        a -= 4096
    heap_pages = len(pages)
    for o in gc.get_objects():  # the pages of every live object (pymalloc pools among them)
        pages.add(id(o) & ~4095)
        for r in gc.get_referents(o):
            pages.add(id(r) & ~4095)
    heap = 0
    for p in sorted(pages):
        if mapped(p) and has(ctypes.string_at(p, 4096), HB, TB):
            heap += 1
    return [[str(frames), str(objects), str(heap), str(heap_pages), str(len(pages)), str(seen)]]
'''


def test_no_earlier_run_is_reachable_from_a_later_child():
    marker = HEAD + TAIL
    pad = "p" * 700  # big enough to live in the malloc heap, not only in small-object pools
    table = [[marker, pad], [pad + marker, "x"]]
    earlier = [  # in its code, its table, its error message, its output
        (f"SECRET = {marker!r} + 'x' * 900\ndef transform(table):\n    return table[:1]\n", [["y"]]),
        (f"def transform(table):\n    raise KeyError({marker!r} * 3)\n", table),
        ("def transform(table):\n    return [r + [r[0] + '!'] for r in table]\n", table),
    ]
    with Sandbox(workers=1) as box:
        results = box.run_many(earlier, timeout_s=5.0)
        assert results[1].error == "exception" and marker in results[1].message
        assert results[2].ok and marker in results[2].output[0][2]
        r = box.run(SCANNER, [["z"]], timeout_s=20.0)
    assert r.ok, (r.error, r.message)
    frames, objects, heap, heap_pages, pages, seen = map(int, r.output[0])
    assert heap_pages > 16 and pages > 200 and seen > 10_000  # the scan really looked
    assert (frames, objects, heap) == (0, 0, 0)


# ----------------------------------------------------------------------------- 3: descriptors 0-2

F_SETSIG, F_GETSIG = 10, 11
F_OFD_SETLK = 37


def test_f_setsig_does_not_persist(sb):
    r = run(sb, f'''
def transform(table):
    return [[attempt(fcntl.fcntl, 0, {F_SETSIG}, 42), attempt(fcntl.fcntl, 1, {F_SETSIG}, 42),
             attempt(fcntl.fcntl, 2, {F_SETSIG}, 42)]]
''')
    assert r.ok
    for _ in range(6):  # both workers, several runs
        later = run(sb, f'''
def transform(table):
    return [[attempt(fcntl.fcntl, fd, {F_GETSIG}) for fd in (0, 1, 2)]]
''')
        assert later.ok and later.output == [["ok:0", "ok:0", "ok:0"]], later.output


def test_nonblocking_flag_does_not_persist(sb):
    r = run(sb, '''
def transform(table):
    return [[attempt(os.set_blocking, fd, False) for fd in (0, 1, 2)]
            + [attempt(fcntl.fcntl, fd, fcntl.F_SETFL, os.O_NONBLOCK) for fd in (0, 1, 2)]]
''')
    assert r.ok
    for _ in range(6):
        later = run(sb, '''
def transform(table):
    return [[str(os.get_blocking(fd)) for fd in (0, 1, 2)]]
''')
        assert later.ok and later.output == [["True", "True", "True"]], later.output


def _ofd_locks() -> int:
    try:
        return Path("/proc/locks").read_text().count("OFDLCK")
    except OSError:
        return 0


def test_ofd_locks_on_fd0_do_not_outlive_the_run(sb):
    before = _ofd_locks()
    r = run(sb, f'''
def transform(table):
    out = []
    for fd in (0, 1, 2):
        for start in range(20):  # struct flock: F_WRLCK, SEEK_SET, start, one byte, pid 0
            lock = (bytes([1, 0, 0, 0, 0, 0, 0, 0]) + start.to_bytes(8, "little")
                    + (1).to_bytes(8, "little") + bytes(8))
            out.append(attempt(fcntl.fcntl, fd, {F_OFD_SETLK}, lock)[:3])
    return [out]
''')
    assert r.ok, r.message
    assert _ofd_locks() == before


# ----------------------------------------------------------------------------- minor holes

def _frame(kind, code, payload):
    return f"bytes([{kind}, {code}]) + len({payload!r}).to_bytes(4, 'little') + {payload!r}"


@pytest.mark.parametrize("claim", ["crash", "timeout", "syntax", "forbidden"])
def test_program_cannot_choose_an_infrastructure_or_precheck_class(sb, claim):
    code = sandbox.ERRORS.index(claim)
    r = run(sb, f'''
def transform(table):
    os.write(3, {_frame(1, code, b"the sandbox worker died during the run and was restarted")})
    os._exit(0)
''')
    assert r.error not in ("crash", "timeout", "syntax", "forbidden"), (r.error, r.message)
    r = run(sb, f'''
os.write(3, {_frame(1, code, b"fake")})
os._exit(0)
def transform(table):
    return table
''')
    assert r.error not in ("crash", "timeout", "syntax", "forbidden"), (r.error, r.message)


def test_no_host_paths_visible(sb):
    r = run(sb, '''
def transform(table):
    seen = [str(sys.argv), str(getattr(sys, "orig_argv", "")), str(sys.path), sys.executable,
            str(sys.prefix), str(sys.exec_prefix)]
    for name, m in list(sys.modules.items()):
        seen += [str(getattr(m, "__file__", "")), str(getattr(m, "__cached__", "")),
                 str(getattr(getattr(m, "__spec__", None), "origin", ""))]
    F = lambda obj, name: getattr(obj, "f_" + name)
    f = sys._getframe()
    while f is not None:
        seen.append(F(f, "code").co_filename)
        seen += [str(v) for v in F(f, "globals").values() if isinstance(v, str)]
        f = F(f, "back")
    return [seen]
''')
    assert r.ok, r.message
    text = json.dumps(r.output)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(sandbox.__file__)))
    assert repo not in text
    assert sb._tmp not in text and os.path.basename(sb._tmp) not in text


def test_stale_folders_of_dead_parents_are_removed(tmp_path, monkeypatch):
    """A folder is stale when the lock its owner held for its life can be taken (round 4: by
    lock, not by pid, so it holds across pid namespaces too)."""
    import fcntl
    import subprocess
    import sys
    import tempfile
    from sandbox._leases import stale_folders
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # a real parent killed with SIGKILL leaves its folder behind
    child = subprocess.run([sys.executable, "-c", "import os, signal, tempfile; tempfile.tempdir = "
                            f"{str(tmp_path)!r}; from sandbox import Sandbox; sb = Sandbox(workers=1); "
                            "os.kill(os.getpid(), signal.SIGKILL)"],
                           env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=120)
    assert child.returncode == -9
    left = [p.name for p in tmp_path.iterdir() if p.is_dir()]  # (and the CPU lease files)
    assert len(left) == 1 and left[0].startswith("sandbox-")
    alive = tmp_path / "sandbox-live"
    alive.mkdir()  # no lock file: its owner cannot be known, so it is left alone
    held = tmp_path / "sandbox-held"
    held.mkdir()
    fd = os.open(held / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live owner's lock
    dead = tmp_path / "sandbox-dead"
    dead.mkdir()
    (dead / "lock").touch()  # nobody holds it: stale
    try:
        assert sorted(p.name for p in stale_folders(str(tmp_path))) == sorted([left[0], dead.name])
        with Sandbox(workers=1) as box:
            names = {p.name for p in tmp_path.iterdir()}
            assert left[0] not in names and dead.name not in names
            assert {"sandbox-live", "sandbox-held", os.path.basename(box._tmp)} <= names
    finally:
        os.close(fd)
