#!/usr/bin/env bash
# Create .venv (if missing) and install rmtnet with every extra (nets, data, cluster) and the test and docs tools.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch first, exactly pinned, so the CPU build on local disk is taken and no CUDA build is pulled in: the extras ask
# for an open range (torch>=2.4), which 2.13.0 satisfies, so the second install adds no other torch.
.venv/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all,test,docs]"
