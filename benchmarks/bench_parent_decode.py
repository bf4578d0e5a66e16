"""The parent's CPU per result, for the costliest bytes a program can write (issue 43, item 3).

    python benchmarks/bench_parent_decode.py            # best of 5 per payload
    python benchmarks/bench_parent_decode.py --repeat 9 --old 30cc273

Every payload is what a run can hand the parent: a legal output at the limits, or a frame the
program forged on its result pipe (any bytes up to ``max_bytes``). For each kind it times
``result.decode_output`` (the pre-check, the decode and the shape check, which is all the parent
does with an output) as process CPU time, best of ``--repeat``, and prints the worst case it
found with the load average. With ``--old REF`` the ``decode_output`` of that commit is timed
beside it on the table payloads (its kinds did not exist). Goal: the worst case within the
figure docs/sandbox.md names.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from refs import ROOT, import_old

sys.path.insert(0, str(ROOT))

from sandbox.result import OutputLimits, decode_output  # noqa: E402

MiB = 1 << 20


def _j(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def payloads(limits: OutputLimits) -> list[tuple[str, str, bytes]]:
    """(kind, name, payload): legal outputs at the limits and forged frames up to max_bytes."""
    n = limits.max_bytes
    cells = limits.max_cells
    return [
        ("table", "legal 100k cells of 35 chars with an astral char", _j([["x" * 34 + "\U0001F600"] * 100] * (cells // 100))),
        ("table", "legal quotes/brackets/escapes (issue 43)", _j([['"[' * 22 + "\x01"] * 100] * 500)),
        ("table", "legal 2.4k cells of 280 escaped chars", _j([["\x01" * 280] * 100] * 24)),
        ("table", "forged [[\" + 2M escaped quotes", b'[["' + b'\\"' * ((n - 8) // 2) + b'"]]'),
        ("table", "forged 1.4M empty rows", b"[" + b"[]," * ((n - 4) // 3) + b"[]]"),
        ("table", "forged one 4 MiB cell of [", b'[["' + b"[" * (n - 8) + b'"]]'),
        ("table", "forged 838k two-char cells", _j([["ab"] * 1000] * 838)),
        ("table", "forged 800k ints", b"[[" + b"1000," * ((n - 8) // 5) + b"1]]"),
        ("table", "forged 200k strings of , and [", b"[[" + b'",[,[,[,[,[,[,[,[,[",' * ((n - 8) // 21) + b'""]]'),
        ("grid", "legal 100k ints of 30 digits", _j([[10 ** 29] * 100] * (cells // 100))),
        ("grid", "forged 800k ints", b"[[" + b"1000," * ((n - 8) // 5) + b"1]]"),
        ("grid", "forged 1k ints of 4,300 digits", b"[[" + b",".join([b"9" * 4300] * (n // 4302 - 1)) + b"]]"),
        ("json", "legal 100k short strings", _j(["ab"] * (cells - 1))),
        ("json", "legal 50k-key object", _j({f"k{i}": i for i in range(cells // 2 - 1)})),
        ("json", "legal 1k ints of 4,300 digits", b"[" + b",".join([b"9" * 4300] * (n // 4302 - 1)) + b"]"),
        ("json", "forged 1.4M empty lists", b"[" + b"[]," * ((n - 4) // 3) + b"[]]"),
        ("json", "forged 1M empty objects", b"[" + b"{}," * ((n - 4) // 3) + b"{}]"),
        ("json", "forged 2M zeros", b"[" + b"0," * ((n - 4) // 2) + b"0]"),
        ("json", "forged 800k floats", b"[" + b"1.5," * ((n - 4) // 4) + b"1]"),
        ("json", "forged 2M nested lists", b"[" * (n // 2) + b"]" * (n // 2)),
        ("json", "forged 4 MiB string of escapes", b'"' + b"\\u00e9" * ((n - 2) // 6) + b'"'),
        ("json", "forged 2M escaped quotes", b'"' + b'\\"' * ((n - 2) // 2) + b'"'),
        ("json", "forged 200k strings of ,:[{", b"[" + b'",:[{,:[{,:[{,:[{",' * ((n - 4) // 19) + b'""]'),
    ]


def cpu_ms(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1000


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timings per payload (the best counts)")
    parser.add_argument("--old", default=None, help="also time this commit's decode_output on the table payloads")
    args = parser.parse_args(argv)
    limits = OutputLimits()
    old = None
    if args.old:
        import importlib
        import tempfile

        import_old(args.old, "sandbox", Path(tempfile.mkdtemp(prefix="bench-decode-")), "sandbox_old")
        old = importlib.import_module("sandbox_old.result").decode_output
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    worst = (0.0, "")
    for kind, name, payload in payloads(limits):
        assert len(payload) <= limits.max_bytes, (name, len(payload))
        value, why = decode_output(payload, limits, kind)
        ms = cpu_ms(lambda: decode_output(payload, limits, kind), args.repeat)
        line = f"{kind:5s} {name:50s} {len(payload) / MiB:4.1f} MiB {ms:7.1f} ms  {'ok' if not why else why[:50]}"
        if old is not None and kind == "table":
            line += f"   (old {cpu_ms(lambda: old(payload, limits), args.repeat):.1f} ms)"
        print(line)
        worst = max(worst, (ms, f"{kind}: {name}"))
    print(f"worst case: {worst[0]:.1f} ms of parent CPU ({worst[1]}); load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
