#!/usr/bin/env bash
# A short bf16 GRPO run on one GPU: prints tokens/s and peak memory (see tools/gpu_check.py for the options).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}"
exec "$PY" tools/gpu_check.py "$@"
