#!/usr/bin/env bash
# Generation throughput of the Qwen3.5-4B architecture at full size (random weights, nothing
# downloaded) on one GPU, in one prepared run of under 10 minutes: the pilot's one-prompt-at-a-time
# generate vs batched hf vs vLLM (load_format="dummy"), same Foofah prompts, 128 new tokens each.
#
#   bash benchmarks/gpu/bench_gpu.sh          # results in $OUT (or reports/device/): JSON + log
#   python benchmarks/gpu/bench_gpu.py --tiny --device cpu   # CPU smoke test of the same script
#   bash benchmarks/gpu/bench_gpu.sh --pipeline   # instead: the whole CLI pipeline on Foofah, hf vs vLLM
#                                                 # one engine vs vLLM data parallel 2 (two GPUs),
#                                                 # generations/s and tokens/s (benchmarks/gpu/pipeline_gpu.py)
#   python benchmarks/gpu/pipeline_gpu.py --dry-run   # its CPU dry run
#
# It first tries to install what it needs and is missing (vLLM, and the gated-DeltaNet kernels
# flash-linear-attention / causal-conv1d that transformers otherwise replaces with slow torch
# code), each bounded to 50-60 s (installs plus the 400 s run fit 10 minutes); what could not be installed is printed, and the transformers
# fallback warning is printed too (never filtered), so the hf rows say which kernels they ran on.
# Goal: vLLM at least 20x the pilot's way.
set -u -o pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${OUT:-reports/device}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}
MODE=bench
if [ "${1:-}" = "--pipeline" ]; then MODE=pipeline; shift; fi
VLLM_INSTALL_S=50; KERNEL_INSTALL_S=50
# the pipeline check is about vLLM: its install gets the time, the hf-only kernels less
[ "$MODE" = pipeline ] && { VLLM_INSTALL_S=120; KERNEL_INSTALL_S=30; }

{
  $PY -c "import transformers, tokenizers" 2>/dev/null || timeout 60 $PY -m pip install --quiet -e . \
    || echo "install: the toolkit's own dependencies could not be installed"
  for spec in "vllm:vllm" "fla:flash-linear-attention" "causal_conv1d:causal-conv1d"; do
    mod=${spec%%:*}; pkg=${spec#*:}
    limit=$KERNEL_INSTALL_S; [ "$mod" = vllm ] && limit=$VLLM_INSTALL_S
    if $PY -c "import $mod" 2>/dev/null; then echo "install: $pkg already present"
    elif timeout $limit $PY -m pip install --quiet "$pkg"; then echo "install: $pkg installed"
    else echo "install: $pkg NOT installed (no registry access or no wheel): its rows run without it"; fi
  done
  $PY -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-'); print('transformers', transformers.__version__)"
} 2>&1 | tee "$OUT_DIR/env.log"

if [ "$MODE" = pipeline ]; then
  # folder build (~1 min) + up to three ways of at most 120 s: with the installs, under 10 minutes
  timeout 420 $PY benchmarks/gpu/pipeline_gpu.py --out "$OUT_DIR" --run-timeout 120 "$@" 2>&1 \
    | tee "$OUT_DIR/pipeline_gpu.log"
else
  timeout 400 $PY benchmarks/gpu/bench_gpu.py --device cuda --json-out "$OUT_DIR/bench_gpu.json" "$@" 2>&1 \
    | tee "$OUT_DIR/bench_gpu.log"
fi
