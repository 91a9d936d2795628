#!/usr/bin/env bash
# Set up, then run the default test suite (slow and GPU cases are excluded; add -m slow to run those).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -q "$@"
