"""No run's result may depend on another run, and no sandbox may break another:

R1. no output is refused for its batch's sake: legal big outputs never cost a neighbour its
    correct answer (the per-call output budget is gone; budgets are per run);
R2. stalls are judged by progress: a finished big reply is never reported ``timeout`` because
    the parent was away (a consumer sleeping inside ``iter_many``, a thread holding the GIL);
R3. no state crosses runs: what a child can observe (pids, heap statistics, allocation counts,
    addresses) is the same as a worker's first run and after any other run, and other
    processes' CPU clocks (negative clock ids) are refused;
R4. a sandbox folder is stale only when its owner's lock can be taken: a toolkit in another pid
    namespace sharing the temporary directory leaves live folders alone;
R5. no host information in a child: not the temporary directory (nor its parent ``TMPDIR``), not
    half-overwritten heap copies of it, not host pids from procfs, not cached hashes of
    scrubbed paths;
R6. messages are built without calling program code (``OSError.filename``, ``SyntaxError.msg``,
    ``UnicodeError.reason``, ``ImportError.msg`` set to objects with a ``__str__``);
and a property test: a fixed set of benign programs gets identical results alone, after each
hostile program, and shuffled into one batch with them.

Hostile programs run with the AST pre-check off (it would refuse ``ctypes``, ``__code__``): the
kernel-level and harness-level limits are what is tested.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

import sandbox
from sandbox import Sandbox

from test_sandbox_host_paths_and_batch_cost import SCAN, _needle_variants, _regions, _serving_pid

PRELUDE = '''
import random
os = random._os
sys = os.sys
ctypes = sys.modules["ctypes"]
'''
ECHO = "def transform(table):\n    return table\n"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(sandbox.__file__)))


# ----------------------------------------------------------------------------- R1: budgets

BIG41 = 'def transform(t):\n    return [["x" * 100000]] * 41\n'  # 4,100,165 bytes: legal
MID = 'def transform(t):\n    return [[t[0][0] * 100000] * 3]\n'  # 300 KB, right for its table


def test_big_legal_outputs_never_cost_a_neighbour_its_answer():
    items = [(BIG41, [["a"]])] * 5 + [(MID, [[c]]) for c in "bcd"]
    with Sandbox(workers=1) as box:  # one worker: the bigs certainly come first
        results = box.run_many(items, timeout_s=10)
    assert [r.error for r in results] == [None] * 8, [(r.error, r.message) for r in results]
    assert all(r.output == [["x" * 100000]] * 41 for r in results[:5])
    assert [r.output for r in results[5:]] == [[[c * 100000] * 3] for c in "bcd"]


# ----------------------------------------------------------------------------- R2: stalls

MB = 'def transform(t):\n    return [[t[0][0] * 100000] * 40]\n'  # 4 MB


def test_a_consumer_asleep_in_iter_many_does_not_turn_finished_replies_into_timeouts():
    items = [(MB, [[c]]) for c in "abcdef"]
    got = {}
    with Sandbox(workers=3) as box:
        box.run(ECHO, [["a"]])
        for i, r in box.iter_many(items, timeout_s=0.3):
            got[i] = r
            if len(got) == 1:
                time.sleep(3.6)  # past every run's deadline + grace: the others wait in pipes
        restarts = box.restarts
    wrong = {i: (r.error, r.message) for i, r in got.items()
             if r.output != [[items[i][1][0][0] * 100000] * 40]}
    assert not wrong and restarts == 0, (wrong, restarts)


def test_a_thread_holding_the_gil_does_not_turn_finished_replies_into_timeouts():
    import ctypes
    import threading
    hold = ctypes.PyDLL(None).usleep  # a C call that keeps the GIL (PyDLL does not release it)
    hold.argtypes = [ctypes.c_uint]
    items = [(MB, [[c]]) for c in "abcdef"]
    with Sandbox(workers=3) as box:
        box.run(ECHO, [["a"]])
        timer = threading.Timer(0.2, hold, (3_600_000,))
        timer.start()
        results = box.run_many(items, timeout_s=0.3)
        timer.join()
        restarts = box.restarts
    wrong = {i: (r.error, r.message) for i, r in enumerate(results)
             if r.output != [[items[i][1][0][0] * 100000] * 40]}
    assert not wrong and restarts == 0, (wrong, restarts)


# ----------------------------------------------------------------------------- R3: state

# Everything a run can see of its process's history: pids, heap statistics (glibc's and
# Python's), the garbage collector's counters, where the next object lands, its peak RSS.
OBSERVE = PRELUDE + '''
gc = sys.modules["gc"]
resource = sys.modules["resource"]
class MI(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
def transform(t):
    f = ctypes.CDLL(None).mallinfo2
    f.restype = MI
    m = f()
    return [[str(os.getpid()), str(os.getppid()), str(gc.get_count()), str(sys.getallocatedblocks()),
             str(id(object())), str(id(bytearray(5000))), str(m.arena), str(m.uordblks),
             str(m.fordblks), str(m.hblkhd), str(m.ordblks)]]
'''
# Writes a value into everything it can reach: a big output, CPU time, heap.
ENCODE = '''
def transform(t):
    n = int(t[0][0])
    junk = [str(i) * 7 for i in range(n)]
    return [["y" * min(n, 90000)] for _ in range(min(n // 1000 + 1, 22))]
'''


def test_what_a_child_observes_is_the_same_whatever_ran_before():
    with Sandbox(workers=1, ast_check=False) as box:
        first = box.run(OBSERVE, [["a"]])
        assert first.ok, first
        seen = [("first", first.output)]
        for n in ("2000000", "10", "300000"):  # a value encoded in one batch ...
            assert box.run(ENCODE, [[n]], timeout_s=10).ok
            seen.append((f"after {n}", box.run(OBSERVE, [["a"]]).output))  # ... read in the next
        mixed = box.run_many([(ENCODE, [["400000"]]), (OBSERVE, [["a"]]), (BIG41, [["a"]]),
                              (OBSERVE, [["a"]])], timeout_s=1.5)
        seen += [("in a batch", mixed[1].output), ("after 4 MB", mixed[3].output)]
    differ = [(name, out) for name, out in seen if out != first.output]
    assert not differ, (first.output, differ)


CLOCKS = PRELUDE + '''
import time
def transform(t):
    out = []
    for call in (lambda c: time.clock_gettime(c), lambda c: time.clock_getres(c)):
        for clock in ((~1 << 3) | 2, (~1 << 3) | 0, -1, -6):  # the worker's CPU clocks, ...
            try:
                out.append("read " + repr(call(clock)))
            except OSError as exc:
                out.append(f"refused {exc.errno}")
    ts = (ctypes.c_long * 2)(0, 1000)
    out.append(f"nanosleep {ctypes.CDLL(None).clock_nanosleep((~1 << 3) | 2, 0, ts, None)}")
    out.append(f"own {time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID) < 5}")
    return [out]
'''


def test_negative_clock_ids_are_refused():
    with Sandbox(workers=1, ast_check=False) as box:
        r = box.run(CLOCKS, [["a"]], timeout_s=5)
    assert r.ok, r
    *refused, sleep, own = r.output[0]
    assert refused == ["refused 22"] * 8, refused
    assert sleep == "nanosleep 22" and own == "own True", (sleep, own)


# ----------------------------------------------------------------------------- R4: folders

HOLD = '''
import sys, tempfile
tempfile.tempdir = sys.argv[1]
from sandbox import Sandbox
with Sandbox(workers=1) as sb:
    ok = sb.run("def transform(t):\\n    return t\\n", [["a"]]).ok
    print(ok, sb._tmp, flush=True)
    sys.stdin.readline()  # hold it until told
    print(sb.run("def transform(t):\\n    return t\\n", [["b"]]).ok, flush=True)
'''


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare(1) for a pid namespace of its own")
def test_a_toolkit_in_another_pid_namespace_and_this_one_leave_each_other_alone(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with Sandbox(workers=1) as box:
        mine = box._tmp
        other = subprocess.Popen(
            ["unshare", "-p", "-f", "--mount-proc", sys.executable, "-c", HOLD, str(tmp_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": REPO})
        try:
            ok, theirs = other.stdout.readline().split()
            assert ok == "True"
            assert os.path.isdir(mine), "a sandbox in another pid namespace removed our folder"
            assert box.run(ECHO, [["a"]]).ok
            with Sandbox(workers=1) as third:  # starts here while theirs lives
                assert third.run(ECHO, [["a"]]).ok
            assert os.path.isdir(theirs), "this sandbox removed the other namespace's folder"
            other.stdin.write("\n")
            other.stdin.flush()
            assert other.stdout.readline().strip() == "True"
        finally:
            other.stdin.close()
            other.wait(60)
    assert other.returncode == 0


# ----------------------------------------------------------------------------- R5: host info

def test_no_temp_dir_tails_or_host_pids_in_a_childs_memory(tmp_path, monkeypatch):
    deep = tmp_path / "tmpdir-of-the-host"
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with Sandbox(workers=1, ast_check=False) as box:
        serving = _serving_pid(box)
        needles = {"tmpdir": str(deep), "tmpdir_name": deep.name, "folder": box._tmp,
                   "folder_name": os.path.basename(box._tmp),
                   "folder_tail": box._tmp[16:], "tmpdir_tail": str(deep)[16:],
                   "owner_pid": f"sandbox-{os.getpid()}-",
                   "status_pid": f"Pid:\t{serving}\n", "status_nspid": f"NSpid:\t{serving}\t",
                   "control_argv": "sandbox worker: zygote.py",
                   "control_heap": "transform_program"}
        labels, variants = _needle_variants(needles)
        regions = _regions(serving)
        table = [labels, variants] + [regions[i:i + 500] for i in range(0, len(regions), 500)]
        r = box.run(SCAN, table, timeout_s=60, memory_mb=1024)
    assert r.ok, r
    found = {tuple(row) for row in r.output[:-1]}
    assert int(r.output[-1][1]) > 4 << 20
    assert {"control_argv", "control_heap"} <= {n.split(":")[0] for n, _ in found}, found
    leaks = sorted(f"{name} in {where}" for name, where in found
                   if not name.startswith("control_"))
    assert not leaks, leaks


# Every compact ASCII str object in the child's memory (live or freed: ctypes reads both) whose
# text holds a run of the scrub's "x": its hash field must be "not computed" (-1) or the hash of
# what it holds now, never one cached from the path it held (which ``hash(guess)`` would match).
HASHES = PRELUDE + '''
import re
madvise = ctypes.pythonapi.madvise
madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
STR = id(str).to_bytes(8, "little")
def transform(t):
    guess = bytes(b ^ 0x5A for b in bytes.fromhex(t[0][0])).decode()
    f = re.compile.__code__.co_filename
    regions = [c.split("-") for row in t[1:] for c in row]
    objects = stale = 0
    examples = []
    for start, end, kind in [(int(s, 16), int(e, 16), k) for s, e, k in regions]:
        if kind == "stack" or madvise(start, end - start, 0) != 0:
            continue
        data = ctypes.string_at(start, end - start)
        at = data.find(STR)
        while at >= 0:
            if at >= 8 and at % 8 == 0:
                length = int.from_bytes(data[at + 8:at + 16], "little", signed=True)
                state = int.from_bytes(data[at + 24:at + 28], "little")
                if 12 <= length < 4096 and state & 0x60 == 0x60 and at + 40 + length <= len(data):
                    text = data[at + 40:at + 40 + length]
                    if b"xxxxxxxxxxxx" in text:
                        objects += 1
                        h = int.from_bytes(data[at + 16:at + 24], "little", signed=True)
                        if h != -1 and h != hash(text.decode("latin-1")):
                            stale += 1
                            examples.append(text[-30:].decode("latin-1"))
            at = data.find(STR, at + 1)
    return [[str(hash(f) == hash(guess)), str(hash(f) == hash("".join(list(f)))), f[-14:]],
            [str(objects), str(stale)], examples[:5]]
'''


def test_scrubbed_strings_do_not_keep_the_hash_of_the_path_they_held():
    path = re.compile.__code__.co_filename  # the same code object's file name as the child's
    with Sandbox(workers=1, ast_check=False) as box:
        regions = _regions(_serving_pid(box))
        table = [[bytes(b ^ 0x5A for b in path.encode()).hex()]] + \
            [regions[i:i + 500] for i in range(0, len(regions), 500)]
        r = box.run(HASHES, table, timeout_s=60, memory_mb=1024)
    assert r.ok, r
    (confirms, consistent, tail), (objects, stale), examples = r.output
    assert tail == path[-14:] == "re/__init__.py"  # the same file's code
    assert int(objects) > 20  # the scan found the scrubbed strings
    assert (confirms, consistent, stale) == ("False", "True", "0"), r.output


# ----------------------------------------------------------------------------- R6: messages

EVIL = '''
class Evil:
    def __str__(self):
        return "PWNED"
    __repr__ = __str__
def transform(t):
    kind = t[0][0]
    if kind == "oserror":
        e = OSError(2, "No such file")
        e.filename = Evil()
    elif kind == "oserror2":
        e = OSError(2, "No such file", "f.txt")
        e.filename2 = Evil()
    elif kind == "syntax":
        e = SyntaxError("bad")
        e.msg = Evil()
    elif kind == "unicode":
        e = UnicodeDecodeError("utf-8", b"\\xff", 0, 1, "invalid start byte")
        e.reason = Evil()
    elif kind == "unicode_enc":
        e = UnicodeDecodeError("utf-8", b"\\xff", 0, 1, "invalid start byte")
        e.encoding = Evil()
    elif kind == "import":
        e = ImportError("no")
        e.msg = Evil()
    elif kind == "keyerror":
        e = KeyError(Evil())
    else:
        e = OSError(2, "No such file", "f.txt")
    raise e
'''


def test_messages_are_built_without_calling_program_code():
    kinds = ["oserror", "oserror2", "syntax", "unicode", "unicode_enc", "import", "keyerror"]
    with Sandbox(workers=1) as box:
        results = box.run_many([(EVIL, [[k]]) for k in kinds + ["plain"]], timeout_s=5)
        plain_key = box.run("def transform(t):\n    return {}['k']\n", [["a"]])
    called = {k: r.message for k, r in zip(kinds, results) if "PWNED" in r.message}
    assert not called, called
    assert all(r.error == "exception" for r in results), [r.message for r in results]
    assert results[-1].message == "FileNotFoundError: [Errno 2] No such file: 'f.txt' (line 30)", \
        results[-1].message
    assert plain_key.message == "KeyError: 'k' (line 2)", plain_key.message


# ----------------------------------------------------------------------------- property

BENIGN = [
    ("def transform(t):\n    return [[c.upper() for c in r] for r in t]\n", [["a", "b"]]),
    ("def transform(t):\n    return [[r[0] + '-' + r[1]] for r in t]\n", [["a", "b"], ["c", "d"]]),
    ("def transform(t):\n    return t[5]\n", [["a"]]),
    ("def transform(t):\n    return 7\n", [["a"]]),
    ("import datetime\ndef transform(t):\n    d = datetime.datetime.strptime(t[0][0], '%Y-%m-%d')"
     "\n    return [[d.strftime('%d/%m/%Y')]]\n", [["2024-03-05"]]),
    ("def transform(t):\n    return [[t[0][0] * 100000]]\n", [["z"]]),  # 100 KB: over 64 KiB
    # a program whose answer reads its process's state: it must not depend on the history
    ("import os, sys, random\ndef transform(t):\n    return [[str(os.getpid()), str(os.getppid()),"
     " str(sys.getallocatedblocks()), str(sys.getrefcount(None)), str(random.random()),"
     " str(hash('abc')), ','.join({'x', 'y', 'z', 'w'}),"
     # small ints: a worker told its own number (a CPU to pin to) would hold one more of it
     " ','.join(str(sys.getrefcount(i)) for i in range(4))]]\n", [["a"]]),
    ("import json\ndef transform(t):\n    raise ValueError(json.dumps(t))\n", [["q"]]),
]
HOSTILE = [
    BIG41,
    'def transform(t):\n    return [["ab"] * 1000] * 500\n',  # 2.5 MB, object-dense
    "def transform(t):\n    while True:\n        pass\n",
    "import time\ndef transform(t):\n    time.sleep(30)\n",
    "def transform(t):\n    x = ['a' * 1000000 for _ in range(10000)]\n    return []\n",
    PRELUDE + "def transform(t):\n    os._exit(3)\n",
    PRELUDE + "def transform(t):\n    ctypes.string_at(0)\n",
    PRELUDE + '''
def transform(t):
    os.write(3, bytes([1, 3]) + (5).to_bytes(4, "little") + b"hello")
    os._exit(0)
''',
    ENCODE.replace("int(t[0][0])", "3000000"),
    EVIL,
]


def _key(r):
    return (r.ok, r.output, r.error, r.message)


def _property(box, shuffles: int):
    alone = [_key(box.run(code, table, timeout_s=1.0)) for code, table in BENIGN]
    bad = [i for i, (code, table) in enumerate(BENIGN) if _key(box.run(code, table)) != alone[i]]
    assert not bad, ("a benign program is not even repeatable", bad)
    problems = []
    for h, hostile in enumerate(HOSTILE):
        box.run(hostile, [["oserror"]], timeout_s=1.0, memory_mb=256)
        after = [_key(r) for r in box.run_many(BENIGN, timeout_s=1.0)]
        problems += [(f"after hostile {h}", i, after[i], alone[i])
                     for i in range(len(BENIGN)) if after[i] != alone[i]]
    for seed in range(shuffles):
        items = [("b", i, item) for i, item in enumerate(BENIGN)] + \
                [("h", i, (code, [["oserror"]])) for i, code in enumerate(HOSTILE)]
        random.Random(seed).shuffle(items)
        results = box.run_many([item for _, _, item in items], timeout_s=1.0, memory_mb=256)
        problems += [(f"shuffle {seed}", i, _key(r), alone[i])
                     for (kind, i, _), r in zip(items, results)
                     if kind == "b" and _key(r) != alone[i]]
    assert not problems, problems


def test_property_benign_results_do_not_depend_on_what_else_runs():
    with Sandbox(workers=2, ast_check=False) as box:
        _property(box, shuffles=1)


@pytest.mark.slow
def test_property_benign_results_do_not_depend_on_what_else_runs_many_shuffles():
    with Sandbox(workers=2, ast_check=False) as box:
        _property(box, shuffles=6)
