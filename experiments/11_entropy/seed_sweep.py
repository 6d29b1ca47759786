"""Seed sweep of chapter 11's test-size check, the cell nbdev_test runs (cell e1c0b002), on seeds 0-4:
the margins behind the chapter's test-size checks.

From seed s's testbed warm start (arith2-s{s}), `steps` RL steps of three arms on the same prompts and samples seeds:
plain GRPO, and EntrocraftReleased with a band far below the entropy (so every step is RAFT++: +1 on correct samples, 0
else) and far above it (every step NSR: -1 on wrong samples, 0 else). Entrocraft rests on the two modes moving entropy
in opposite directions; the chapter asserts that NSR ends above RAFT++ (the paper's direction), which fails for a
controller whose modes do nothing. (At lr 1e-3 and 16 prompts the direction flipped from seed to seed: too unstable.) One JSON line per seed with the entropies and the margin.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice python experiments/11_entropy/seed_sweep.py --seeds 0 1 2 3 4 --out experiments/11_entropy/seed_sweep.jsonl

The settings are rlref.methods.entropy.MODE_CHECK (lr 5e-4, 32 prompts x 8, 16 steps, no warm-up), the notebook's.
"""
import argparse, json, time
import torch
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.methods.entropy import mode_directions, MODE_CHECK

def forced_modes(seed: int, **over) -> dict: return mode_directions(seed, **over)   # the chapter's function, one definition

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", default="experiments/11_entropy/seed_sweep.jsonl")
    ap.add_argument("--kw", default="{}", help="TrainConfig overrides as a JSON dict (for a search; the chapter uses the defaults)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for s in a.seeds:
        t0 = time.time(); rec = forced_modes(s, **json.loads(a.kw)) | dict(kw=json.loads(a.kw), seconds=round(time.time() - t0, 1))
        print(json.dumps(dict(seed=s, H0=round(rec["H0"], 4), late={k: round(v, 4) for k, v in rec["late"].items()}, margin=round(rec["margin"], 4))), flush=True)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
