#!/usr/bin/env bash
# Generation throughput on a GPU machine, one prepared run (about 3-5 minutes on one H200):
# the one-prompt-at-a-time baseline vs the batched hf backend vs the vllm backend (when vLLM is
# installed there), on tiny random models built locally (qwen3_5 and llama; no weights fetched).
#
#   bash scripts/device/bench_gpu.sh            # results in $OUT (or reports/device/) as JSON + logs
#   DEVICE=cpu N_PROMPTS=8 MAX_NEW=8 bash scripts/device/bench_gpu.sh   # a dry run of the script on CPU
#
# Goals: hf batched well above the baseline; vLLM at least 20x the baseline.
set -u -o pipefail
OUT_DIR=${OUT:-reports/device}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
PY=${PYTHON:-python3}

$PY - <<'PY' 2>&1 | tee "$OUT_DIR/env.log"
import torch, transformers
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
print("transformers", transformers.__version__)
try:
    import vllm
    print("vllm", vllm.__version__)
except ImportError:
    print("vllm not installed: the vllm rows are skipped")
PY

VLLM_FLAG=""
if $PY -c "import vllm" 2>/dev/null; then VLLM_FLAG="--vllm"; fi

status=0
for arch in qwen3_5 llama; do
  # 64 prompts in one wave; the baseline runs them one by one
  timeout 240 $PY scripts/bench_generation.py --arch "$arch" --device "${DEVICE:-cuda}" \
      --n-prompts "${N_PROMPTS:-64}" --batch-size "${N_PROMPTS:-64}" --max-new-tokens "${MAX_NEW:-64}" --work-dir /tmp/bench_tiny \
      $VLLM_FLAG --json-out "$OUT_DIR/bench_$arch.json" 2>&1 \
    | grep -v "falling back\|Warning\|Loading weights\|Writing model" | tee "$OUT_DIR/bench_$arch.log" \
    || status=1
done
exit $status
