"""Run testbed settings over seeds and append one JSON line per finished run (resumable: finished runs are skipped).

    OMP_NUM_THREADS=1 python experiments/07b_testbed/sweep.py --set lr=1e-4 --set lr=3e-4 --seeds 0 1 2 --workers 2
    OMP_NUM_THREADS=1 python experiments/07b_testbed/sweep.py --set prompts_per_step=16 --seeds 0 1 2

Each --set is one setting (comma-separated TrainConfig overrides of the testbed recipe); every setting runs on every seed.
The chapter (nbs/07b_testbed.ipynb) reads experiments/07b_testbed/sweep.jsonl and draws the sweeps from it.
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, ast, json, multiprocessing as mp
from pathlib import Path

LOG = Path(__file__).resolve().parent / "sweep.jsonl"

from sweep_runner import parse_overrides as parse, run_key as key   # one --set parser for every sweep

def work(job):
    import os, torch; torch.set_num_threads(int(os.environ.get("SWEEP_THREADS", "1")))
    from rlref.testbed import testbed_run
    seed, over = job
    return testbed_run(seed=seed, **over)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[], help="k=v,k=v overrides (repeat for several settings)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--log", default=str(LOG))
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run (a different thread count rounds differently, like another CPU)")
    a = ap.parse_args()
    import os; os.environ["SWEEP_THREADS"] = str(a.threads)
    log = Path(a.log)
    done = {key(r["seed"], r["overrides"]) for r in map(json.loads, log.read_text().splitlines())} if log.exists() else set()
    jobs = [(s, parse(x)) for x in (a.set or [""]) for s in a.seeds]
    jobs = [j for j in jobs if key(*j) not in done]
    print(f"{len(jobs)} runs to do", flush=True)
    with mp.get_context("spawn").Pool(a.workers) as pool:
        for r in pool.imap_unordered(work, jobs):
            with open(log, "a") as f: f.write(json.dumps(r) + "\n")
            print(r["seed"], r["overrides"], f"{r['warm']:.3f} -> {r['final']:.3f}", f"z={r['mcnemar']['z']:.1f}", f"cpu={r['cpu_seconds']}s", flush=True)
