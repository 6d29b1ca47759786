"""Reader-size runs of chapter 00a (RL in one page): REINFORCE with a group baseline from the testbed's warm starts,
one JSON line per finished (seed, setting); a seed already in the log is skipped, so a killed run resumes by rerunning.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/00a_rl_in_one_page/sweep.py            # seeds 0 1 2, the chapter's setting
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/00a_rl_in_one_page/sweep.py --seeds 3 4 --set lr=3e-4
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, os, sys
import torch
from sweep_runner import parse_overrides, run_key
from rlref.onramp import onramp_run

ap = argparse.ArgumentParser()
ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
ap.add_argument("--set", default="", help="onramp_run overrides, e.g. 'lr=3e-4,steps=150'")
ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "sweep.jsonl"))
a = ap.parse_args()
torch.set_num_threads(1)
over = parse_overrides(a.set)
done = set()
if os.path.exists(a.out):
    for l in open(a.out):
        if l.strip():
            r = json.loads(l); done.add(run_key(r["seed"], r["overrides"]))
for s in a.seeds:
    if run_key(s, over) in done: print(f"seed {s} {over}: already in {a.out}"); continue
    r = onramp_run(seed=s, progress=False, **over) | dict(overrides=over, threads=torch.get_num_threads(), torch=torch.__version__)
    print(json.dumps({k: r[k] for k in ("seed", "warm", "final", "gain", "cpu_seconds")}), flush=True)
    with open(a.out, "a") as f: f.write(json.dumps(r) + "\n")
