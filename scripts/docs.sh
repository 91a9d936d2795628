#!/usr/bin/env bash
# Set up, then build the API reference offline into docs/_build/html (warnings are errors).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html "$@"
echo "API reference: docs/_build/html/index.html"
