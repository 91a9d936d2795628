#!/usr/bin/env bash
# Create .venv (if missing) and install rmtnet with its test and docs extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch first, exactly pinned, so the CPU build on local disk is taken and no CUDA build is pulled in.
.venv/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test,docs]"
