#!/usr/bin/env bash
# The torch tests on the oldest torch that pyproject admits (the X of "torch>=X" in the nets extra, its newest patch
# release), in a separate environment, .venv-torch-floor: the check behind that lower bound. It downloads torch's
# CUDA build from PyPI (about 2.5 GB with its NVIDIA libraries; it runs on the CPU), so it is not part of
# scripts/test.sh. Extra pytest arguments are passed on (e.g. -x, or -k NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
floor=$("$PY" -c 'import re, tomllib; n = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["nets"]; print(next(re.fullmatch(r"torch>=([\d.]+)", r).group(1) for r in n if r.startswith("torch")))')
if [ ! -x .venv-torch-floor/bin/python ]; then
  "$PY" -m venv .venv-torch-floor
fi
.venv-torch-floor/bin/python -m pip install --quiet --disable-pip-version-check "torch==$floor.*"
.venv-torch-floor/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all,test]"
.venv-torch-floor/bin/python -c 'import torch; print("torch", torch.__version__)'
OMP_NUM_THREADS=1 .venv-torch-floor/bin/python -m pytest -q tests/test_nets_layers.py tests/test_nets_models.py \
  tests/test_probes.py tests/test_training.py tests/test_data.py tests/test_sharpness.py tests/test_similarity.py \
  tests/test_ensembles.py tests/test_emn.py tests/test_red_line.py tests/test_trained_spectra.py \
  tests/test_wider_nets.py tests/test_ntk_kernel.py tests/test_one_network.py "$@"
