"""Chapter 33's reader-size runs: RL post-training of chapter 30's flow model (Flow-GRPO, then FDFO, from chapter 32) on each arm of
rlref.flow.hacking.ARMS (the "aesthetic" and "consistency" proxies, their ensemble, and each with + lam * r_art), seeds 0-4.
The seed sets the artifact detector (its curated set and weights) and the RL run; the base flow, the proxy classifier and the
realism metrics are fixed (seed 0). Every --eval_every epochs the generator is scored on fixed noise by rlref.flow.hacking.hacking_eval
(proxies, r_art, nearest-neighbour distance in PCA space, the discriminator's P(real), diversity); the first and last samples of
30 fixed images are kept for the sample grids.

One JSON line per (method, arm, seed) in experiments/33_reward_hacking/sweep.jsonl; rows already there are skipped (resumable; method-major, then arm).

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/33_reward_hacking/sweep.py --seeds 0 1 2 3 4   # the chapter reads seeds 0-4 (about 8 CPU s per run)
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import copy, json, sys, time
from dataclasses import asdict
from pathlib import Path
import torch
from sweep_runner import run_pending, sweep_parser, parse_sweep_args, rounded_history, start_end
from rlref.flow.model import pretrained_flow, sample_flow
from rlref.flow.rl import FlowRLConfig, train_flow_rl
from rlref.flow.hacking import ARMS, hacking_kit, hacking_eval, arm_reward

def grid_images(model):
    "30 fixed samples (3 per class) from fixed noise, rounded, for the sample grids."
    with torch.no_grad():
        x = sample_flow(model, torch.arange(10).repeat_interleave(3), noise=torch.randn(30, 64, generator=torch.Generator().manual_seed(7)))
    return [[round(v, 2) for v in row] for row in x.clamp(-1, 1).tolist()]

def main():
    ap = sweep_parser("experiments/33_reward_hacking/sweep.jsonl", "epochs=40,lr=1e-4")
    ap.add_argument("--methods", nargs="+", default=["flow_grpo", "fdfo"])
    ap.add_argument("--arms", nargs="+", default=list(ARMS))
    ap.add_argument("--epochs", type=int, default=80)
    ap.add_argument("--eval_every", type=int, default=10)
    a, over = parse_sweep_args(ap)
    base = pretrained_flow(steps=4000, cache_dir="nbs/_artifacts")
    kits = {}
    def run_one(method, arm, seed):
        if seed not in kits: kits[seed] = hacking_kit(seed)
        kit = kits[seed]
        cfg = FlowRLConfig(**(dict(method=method, epochs=a.epochs, seed=seed, eval_every=a.eval_every) | over))
        t0 = time.process_time(); model = copy.deepcopy(base)
        hist = train_flow_rl(model, arm_reward(arm, kit), cfg, hacking_eval(kit))
        return dict(method=method, arm=arm, seed=seed, epochs=a.epochs, overrides=over, weights=ARMS[arm][0], lam=ARMS[arm][1],
                    config=asdict(cfg), history=rounded_history(hist),
                    start_images=grid_images(base), end_images=grid_images(model), cpu_seconds=round(time.process_time() - t0, 1))
    summary = lambda rec: (f"{rec['method']} {rec['arm']} seed {rec['seed']}: {start_end(rec['history'], ('aesthetic', 'consistency', 'nn_dist', 'p_real'))}, "
                           f"{rec['cpu_seconds']} CPU s")
    run_pending(a.out, ("method", "arm", "seed"), [(m, arm, s) for m in a.methods for arm in a.arms for s in a.seeds], run_one, summary,
                overrides=over, epochs=a.epochs)

if __name__ == "__main__": main()
