#!/usr/bin/env bash
# The GPU check in one call on the lent machine (one H200; no package index; at most 10 minutes a
# command and 64 MiB carried): under 8 minutes, nothing downloaded, the toolkit run from this tree.
#
#   bash benchmarks/gpu/build_wheels.sh        # here, once: benchmarks/gpu/wheels/ (git-ignored)
#   bash benchmarks/gpu/check.sh               # there, with benchmarks/gpu/wheels carried:
#                                              #   $OUT/check.json (every figure) and $OUT/check.log
#   DRY_RUN=1 bash benchmarks/gpu/check.sh     # CPU, tiny sizes (tests/benchmarks/test_gpu_check_dry_run.py)
#
# 1. Installs what the image lacks from the carried wheel set (benchmarks/gpu/carried.txt, packed
#    by wheelpack.py): pip takes nothing from an index and leaves what is installed and good enough.
#    vLLM is not attempted: its wheel and CUDA libraries are far over what travels.
# 2. Runs benchmarks/gpu/check.py: every stage in its own process with its own time limit (a
#    stage that fails or hangs costs only its own time), the results stage by stage in check.json.
# Environment: OUT (default reports/device), PYTHON (default python3), WHEELS (the .tar.xz),
# CHECK_WORK (model folders and runs; default /tmp/ltd_gpu_check), DRY_RUN=1.
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${OUT:-reports/device}
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python3}
DRY=${DRY_RUN:-0}
ARCHIVE=${WHEELS:-benchmarks/gpu/wheels/carried.tar.xz}
WORK=${CHECK_WORK:-/tmp/ltd_gpu_check}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 PIP_BREAK_SYSTEM_PACKAGES=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if [ "$DRY" = 1 ]; then FLAGS=--dry-run; LIMIT=2400; else FLAGS=; LIMIT=450; fi  # the stages' limits add up to 420 s

START=$(date +%s)
{
  echo "check: $(date -u +%FT%TZ), dry run: $DRY, $($PY -V 2>&1), $(nproc) CPUs"
  echo "vllm: not attempted (its wheel and CUDA libraries are far over the 64 MiB that travel; docs/scaling.md)"
  NAMES=$(grep -v '^#' benchmarks/gpu/carried.txt | sed 's/[<>=!~; ].*//' | sed '/^$/d' | tr '\n' ' ')
  if [ ! -f "$ARCHIVE" ]; then
    echo "install: $ARCHIVE missing (bash benchmarks/gpu/build_wheels.sh builds it; carry benchmarks/gpu/wheels)"
  else
    rm -rf "$WORK/wheels" && mkdir -p "$WORK"
    t0=$(date +%s)
    if timeout 60 $PY benchmarks/gpu/wheelpack.py unpack "$ARCHIVE" "$WORK/wheels"; then
      if timeout 90 $PY -m pip install --quiet --no-index --find-links "$WORK/wheels" $NAMES; then
        echo "install: the carried wheels are installed (or were present) in $(( $(date +%s) - t0 ))s"
      elif timeout 90 $PY -m pip install --quiet --no-index --find-links "$WORK/wheels" --target "$WORK/site" $NAMES; then
        export PYTHONPATH=$PYTHONPATH:$WORK/site  # the image's own packages first
        echo "install: site-packages not writable; the carried wheels went to $WORK/site (on PYTHONPATH)"
      else
        echo "install: FAILED (see pip's lines above): the stages that import them fail"
      fi
    fi
  fi
  for m in trl datasets jsonschema gguf statsmodels vllm; do
    $PY -c "import $m" 2>/dev/null && echo "import $m: ok" || echo "import $m: missing"
  done
  LEFT=$(( 560 - ($(date +%s) - START) ))  # a slow install never pushes the call past the 10 minutes
  [ "$LEFT" -lt "$LIMIT" ] && [ "$DRY" != 1 ] && LIMIT=$LEFT
  timeout $LIMIT $PY benchmarks/gpu/check.py --out "$OUT_DIR" --work "$WORK" $FLAGS
  rc=$?
  echo "check.py exit $rc (0: every stage ok; 124: stopped at ${LIMIT}s)"
  echo $rc > "$WORK/check_rc"
} 2>&1 | tee "$OUT_DIR/check.log"
exit "$(cat "$WORK/check_rc" 2>/dev/null || echo 1)"
