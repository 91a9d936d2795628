#!/usr/bin/env bash
# Set up, then regenerate every figure of simulations/ at quick default sizes (offline), writing figures/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m rmtnet.cli run --all "$@"
