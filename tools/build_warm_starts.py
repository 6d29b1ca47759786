"""Regenerate the shipped testbed warm starts (rlref/warm_starts/<name>-s<seed>) and print their SHA-256 for rlref.warm_start.WARM_STARTS.

    OMP_NUM_THREADS=1 python tools/build_warm_starts.py arith2 0 1 2 3 4

A different CPU (or thread count) trains different weights: that is why the package ships these files.
"""
import json, sys
from pathlib import Path
from rlref.warm_start import build_warm_start

name, seeds = sys.argv[1], [int(s) for s in sys.argv[2:]]
root = Path(__file__).resolve().parent.parent / "rlref" / "warm_starts"
for seed in seeds:
    rec = build_warm_start(root / f"{name}-s{seed}", name, seed)
    print(json.dumps(rec), flush=True)
