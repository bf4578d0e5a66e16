"""Carry a folder of wheels in as few bytes as possible, and turn it back into installable wheels.

The GPU machine reaches no package index and takes at most 64 MiB with the project, and pyarrow
(needed by ``datasets``, needed by ``trl``) alone is a 55 MB wheel. So ``pack`` writes the wheels'
*contents* into one ``.tar.xz`` (xz over the whole set compresses far better than each wheel's
zip), leaving out what no import of this toolkit reaches (``DROP``: pyarrow's Flight and S3
modules, C headers and Cython sources, tests), each left-out file also struck from the wheel's
RECORD. ``unpack`` zips each wheel's files back under its own name, so ``pip install --no-index
--find-links DIR`` installs them as usual.

    python benchmarks/gpu/wheelpack.py pack DOWNLOADED_DIR benchmarks/gpu/wheels/carried.tar.xz
    python benchmarks/gpu/wheelpack.py unpack benchmarks/gpu/wheels/carried.tar.xz /tmp/wheels
"""
from __future__ import annotations

import argparse
import fnmatch
import io
import lzma
import sys
import tarfile
import zipfile
from pathlib import Path

# distribution (as a wheel's file name starts) -> glob patterns of its files that are never imported here
DROP = {
    "pyarrow": ("pyarrow/include/*", "pyarrow/tests/*", "pyarrow/src/*", "pyarrow/*flight*", "pyarrow/*_s3*",
                "pyarrow/*.pyx", "pyarrow/*.pxd", "pyarrow/*.h", "pyarrow/*.cc"),
    "pandas": ("pandas/tests/*",),
}


def _dropped(wheel: str, member: str) -> bool:
    dist = wheel.split("-", 1)[0].lower()
    return any(fnmatch.fnmatch(member, p) for p in DROP.get(dist, ()))


def pack(src: Path, dest: Path) -> dict:
    """Every ``*.whl`` in ``src`` into ``dest`` (.tar.xz); returns what was packed and left out."""
    wheels = sorted(src.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"{src}: no wheels to pack")
    dest.parent.mkdir(parents=True, exist_ok=True)
    left_out = 0
    tmp = dest.with_name(dest.name + ".part")  # nothing half-written under the real name
    with lzma.open(tmp, "wb", preset=6) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for whl in wheels:
            with zipfile.ZipFile(whl) as z:
                names = [n for n in z.namelist() if not n.endswith("/")]
                gone = {n for n in names if _dropped(whl.name, n)}
                left_out += sum(z.getinfo(n).file_size for n in gone)
                for n in names:
                    if n in gone:
                        continue
                    data = z.read(n)
                    if n.endswith(".dist-info/RECORD") and gone:
                        data = b"".join(line for line in data.splitlines(keepends=True)
                                        if line.split(b",", 1)[0].decode() not in gone)
                    info = tarfile.TarInfo(f"{whl.name}/{n}")
                    info.size, info.mode = len(data), (z.getinfo(n).external_attr >> 16) or 0o644
                    tar.addfile(info, io.BytesIO(data))
    tmp.replace(dest)
    return {"wheels": [w.name for w in wheels], "wheel_bytes": sum(w.stat().st_size for w in wheels),
            "packed_bytes": dest.stat().st_size, "left_out_bytes": left_out}


def unpack(archive: Path, dest: Path) -> list[str]:
    """The wheels of ``archive`` rebuilt in ``dest``; returns their file names."""
    dest.mkdir(parents=True, exist_ok=True)
    open_zips: dict[str, zipfile.ZipFile] = {}
    try:
        with tarfile.open(archive, mode="r:xz") as tar:
            for info in tar:
                wheel, _, member = info.name.partition("/")
                if not info.isfile() or not wheel.endswith(".whl") or ".." in member.split("/"):
                    continue
                z = open_zips.get(wheel)
                if z is None:
                    z = open_zips[wheel] = zipfile.ZipFile(dest / wheel, "w", zipfile.ZIP_DEFLATED, compresslevel=1)
                zi = zipfile.ZipInfo(member, date_time=(2020, 1, 1, 0, 0, 0))
                zi.external_attr, zi.compress_type = (info.mode & 0o777) << 16, zipfile.ZIP_DEFLATED
                z.writestr(zi, tar.extractfile(info).read())
    finally:
        for z in open_zips.values():
            z.close()
    return sorted(open_zips)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="a folder of wheels -> one .tar.xz", allow_abbrev=False)
    p.add_argument("src", type=Path)
    p.add_argument("dest", type=Path)
    u = sub.add_parser("unpack", help="a .tar.xz from pack -> installable wheels in a folder", allow_abbrev=False)
    u.add_argument("archive", type=Path)
    u.add_argument("dest", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        r = pack(args.src, args.dest)
        print(f"packed {len(r['wheels'])} wheels ({r['wheel_bytes'] / 2**20:.1f} MiB as wheels, "
              f"{r['left_out_bytes'] / 2**20:.1f} MiB of never-imported files left out) into {args.dest}: "
              f"{r['packed_bytes'] / 2**20:.1f} MiB")
    else:
        if not args.archive.is_file():
            print(f"{args.archive}: no such file (build it with benchmarks/gpu/build_wheels.sh)", file=sys.stderr)
            return 2
        names = unpack(args.archive, args.dest)
        print(f"unpacked {len(names)} wheels into {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
