"""Reader-size runs of chapter 07a (rlref vs TRL time to target on the testbed), one JSON line per finished run.

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 python experiments/07a_trl_side_by_side/sweep.py --seeds 0 1 2 --set steps=400

Settings are read from RECIPES["testbed"] when the script starts. Resumable: runs whose line in the log has the same
settings are skipped (rlref.compare.cached_runs). One process, one torch thread; seeds run in order, both sides of a
seed together. The chapter (nbs/07a_trl_side_by_side.ipynb) reads experiments/07a_trl_side_by_side/sweep.jsonl.
"""
import argparse, ast
from pathlib import Path
import pandas as pd
from rlref.compare import cached_runs, speed_rows, IMPLS

LOG = Path(__file__).resolve().parent / "sweep.jsonl"

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--impls", nargs="+", default=list(IMPLS))
    ap.add_argument("--log", default=str(LOG))
    ap.add_argument("--set", nargs="*", default=[], help="TrainConfig overrides k=v (e.g. steps=3 for a smoke test)")
    a = ap.parse_args()
    over = {k: ast.literal_eval(v) for k, v in (x.split("=", 1) for x in a.set)}
    runs = cached_runs(a.log, a.seeds, impls=tuple(a.impls), eval_every=a.eval_every, progress=True, **over)
    print(pd.DataFrame(speed_rows(runs)).round(3).to_string())
