"""Seed sweep behind tests/test_gpu_check.py (EVIDENCE.md rule 7): `tools/gpu_check.sh --allow-cpu --seed s` (SmolLM2-135M-Instruct,
the reduced CPU size) for each seed; the check is that the held-out greedy accuracy on the fixed 40 test prompts rises, so the
margin is after - before (the test needs > 0). One JSON line per seed: the script's own JSON plus the margin.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice python experiments/91_gpu_path/seed_sweep_gpu_check.py --seeds 0 1 2
"""
import argparse, json, os, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOG = Path(__file__).resolve().parent / "seed_sweep_gpu_check.jsonl"

def run(seed: int) -> dict:
    env = os.environ | dict(OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHON=sys.executable)
    p = subprocess.run(["bash", "tools/gpu_check.sh", "--allow-cpu", "--seed", str(seed)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1800)
    if p.returncode: raise SystemExit(p.stderr[-3000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return dict(check="gpu_check --allow-cpu reward rises", margin=out["reward_margin"]) | out

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2]); ap.add_argument("--out", default=str(LOG))
    a = ap.parse_args()
    for s in a.seeds:
        t0 = time.time(); rec = dict(seed=s) | run(s) | dict(wall_seconds=round(time.time() - t0, 1))
        print(json.dumps(rec), flush=True)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
