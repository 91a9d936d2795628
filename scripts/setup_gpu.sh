#!/usr/bin/env bash
# Set up a CUDA machine: the CPU setup (scripts/setup.sh), then the CuPy wheel that matches the driver's CUDA major
# version (nvidia-smi), then a check that CuPy and torch both see the GPU. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi > /dev/null; then
  echo "setup_gpu.sh: nvidia-smi not found: this machine has no NVIDIA driver (use scripts/setup.sh for the CPU path)" >&2
  exit 1
fi
cuda=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
case "$cuda" in
  12) extra=gpu ;;
  13) extra=gpu-cuda13 ;;
  *) echo "setup_gpu.sh: the driver reports CUDA '${cuda:-?}'; rmtnet's GPU extras are for CUDA 12 and 13" >&2; exit 1 ;;
esac
bash scripts/setup.sh
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all,test,$extra]"
.venv/bin/python - <<'PY'
import cupy, torch
n = cupy.cuda.runtime.getDeviceCount()
print(f"CuPy {cupy.__version__}: {n} device(s); torch {torch.__version__}: CUDA available = {torch.cuda.is_available()}")
if not torch.cuda.is_available():
    print("note: this torch build has no CUDA (the pinned torch==2.13.0 resolved to a CPU build here); "
          "the CuPy spectra run on the GPU, torch training stays on the CPU")
PY
