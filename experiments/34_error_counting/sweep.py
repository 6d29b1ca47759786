"""Chapter 34's reader-size runs: GRPO (G = 8) on the factorised try-on policy with each arm's reward (rlref.methods.error_counting.ARMS:
explicit enumeration, implicit score emission, implicit + group calibration, rubric from a reference rendering, the oracle -E*, and the two
harsh-judge implicit arms), from a uniform policy, for --steps steps of 16 prompts x 8 renderings.

One JSON line per (arm, seed) in experiments/34_error_counting/sweep.jsonl; rows already there (same setting) are skipped (resumable). Each row holds
the curve (expected true error mass by axis on 256 held-out prompts, placement/shading entropy, and per-window means of the within-group
Spearman of reward with -E*), 8 renderings for each of 3 held-out prompts at the end, and the CPU seconds.

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/34_error_counting/sweep.py --seeds 0 1 2 3 4
"""
import argparse, json, time
from pathlib import Path
import torch
from rlref.methods.error_counting import ARMS, train_arm, split_prompts, prompt_features

SETTING = dict(steps=300, prompts_per_step=16, group_size=8, lr=0.05, record_every=5)

def run(arm, seed, setting):
    t0 = time.process_time()
    out = train_arm(arm, seed, **setting)
    _, evalp = split_prompts()
    shown = evalp[:3]
    x = prompt_features(shown.repeat_interleave(8, 0))
    samples = out["policy"].sample(x, torch.Generator().manual_seed(1000 + seed)).view(3, 8, 7)
    return dict(arm=arm, seed=seed, setting=setting, curve=out["curve"], shown_prompts=shown.tolist(), samples=samples.tolist(),
                cpu_seconds=round(time.process_time() - t0, 2))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--arms", nargs="+", default=list(ARMS))
    ap.add_argument("--steps", type=int, default=SETTING["steps"])
    ap.add_argument("--out", default="experiments/34_error_counting/sweep.jsonl")
    a = ap.parse_args()
    torch.set_num_threads(1)
    setting = SETTING | dict(steps=a.steps)
    out = Path(a.out)
    rows = [json.loads(l) for l in out.read_text().splitlines() if l.strip()] if out.is_file() else []
    done = {(r["arm"], r["seed"]) for r in rows if r["setting"] == setting}
    for seed in a.seeds:                                   # seed-major: every arm of a seed before the next seed
        for arm in a.arms:
            if (arm, seed) in done: continue
            rec = run(arm, seed, setting)
            with out.open("a") as f: f.write(json.dumps(rec) + "\n")
            c = rec["curve"]
            print(f"{arm} seed {seed}: E* {c[0]['E']:.2f} -> {c[-1]['E']:.3f}, H_placement {c[-1]['H_placement']:.2f}, "
                  f"spearman {sum(r['spearman'] for r in c[:-1]) / (len(c) - 1):.2f}, {rec['cpu_seconds']} CPU s", flush=True)

if __name__ == "__main__": main()
