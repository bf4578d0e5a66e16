"""``madvise(MADV_MERGEABLE)`` is refused (issue 34): with KSM on, pages merged across runs would be
a timing channel between them (a write to a merged page takes a copy-on-write fault). The hostile
program calls the system call itself through ``libc.syscall`` (the AST check off, ``ctypes``
reached through ``random._os``); every other advice still works."""
from __future__ import annotations

import pytest

from sandbox import Sandbox

PROGRAM = '''
import random
os = random._os
ctypes = os.sys.modules["ctypes"]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def transform(t):
    buf = ctypes.create_string_buffer(3 * 4096)
    page = (ctypes.addressof(buf) + 4095) & ~4095
    out = []
    for advice in (12, 13, 4, 0):  # MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_DONTNEED, MADV_NORMAL
        rc = libc.syscall(28, ctypes.c_void_p(page), ctypes.c_size_t(4096), ctypes.c_int(advice))
        out.append([str(advice), str(rc), str(ctypes.get_errno() if rc else 0)])
    return out
'''


@pytest.fixture(scope="module")
def sb():
    with Sandbox(workers=1, ast_check=False, start_timeout_s=1800) as box:
        yield box


def test_madvise_mergeable_is_refused_and_other_advice_is_not(sb):
    if not sb.protections()["seccomp"]:
        pytest.skip("no seccomp filter on this machine")
    r = sb.run(PROGRAM, [["a"]], timeout_s=5)
    assert r.ok, r
    mergeable, unmergeable, *others = r.output
    assert mergeable == ["12", "-1", "1"]  # EPERM
    assert others == [["4", "0", "0"], ["0", "0", "0"]]
    assert unmergeable[2] != "1"  # not the filter's: 0, or EINVAL on a kernel without KSM
