#!/usr/bin/env bash
# A short GRPO run of SmolLM2-135M-Instruct on one GPU (or --shape qwen2.5-0.5b, random weights at its 151,936 vocabulary): prints one
# JSON line with tokens/s (sampling and whole steps), peak memory and whether the held-out reward rose (see tools/gpu_check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}"
exec "$PY" tools/gpu_check.py "$@"
