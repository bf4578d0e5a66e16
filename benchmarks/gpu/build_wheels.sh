#!/usr/bin/env bash
# Build the wheel set that benchmarks/gpu/check.sh installs on the GPU machine (no package index
# there): every distribution of benchmarks/gpu/carried.txt for CPython 3.12 on manylinux x86_64,
# packed into one benchmarks/gpu/wheels/carried.tar.xz (benchmarks/gpu/wheelpack.py), its size
# printed. The folder is git-ignored: name it in the device call's carry list.
#
#   bash benchmarks/gpu/build_wheels.sh                       # for the GPU image (Python 3.12)
#   bash benchmarks/gpu/build_wheels.sh --python-version 3.11 --out DIR   # the same list for another
#                                                             # interpreter (the CPU dry run's venv)
set -eu -o pipefail
cd "$(dirname "$0")/../.."
PYVER=3.12
DEST=benchmarks/gpu/wheels
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) PYVER=$2; shift 2 ;;
    --out) DEST=$2; shift 2 ;;
    *) echo "build_wheels.sh: unknown argument $1 (--python-version X.Y, --out DIR)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
grep -v '^#' benchmarks/gpu/carried.txt | sed '/^$/d' > "$TMP/names.txt"
$PY -m pip download --quiet --no-input --no-deps --only-binary=:all: --implementation cp --python-version "$PYVER" \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 -d "$TMP/whl" -r "$TMP/names.txt"
mkdir -p "$DEST"
ls "$TMP/whl" > "$DEST/MANIFEST.txt"
$PY benchmarks/gpu/wheelpack.py pack "$TMP/whl" "$DEST/carried.tar.xz"
echo "wheel set: $(du -b "$DEST/carried.tar.xz" | cut -f1) bytes in $DEST/carried.tar.xz ($(wc -l < "$DEST/MANIFEST.txt") wheels, listed in $DEST/MANIFEST.txt)"
