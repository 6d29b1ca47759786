"""Seed sweep for chapter 93's test-size checks that depend on a randomly initialised model (EVIDENCE.md rule 7).
Per seed s the benches' seed (chapter: 0; init weights and sampling) takes s:
- rollout (cell 8): peak KV ratio <= 0.3 for sink/h2o/snapkv at a 25% budget; margin 0.3 - max ratio
- grpo-step (cell 18): mean completion length of random weights > 6 of 8 tokens on both sides; margin min length - 6

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/93_bench/seed_sweep.py --seeds 0 1 2 3 4
"""
import argparse, json, time
import torch
from rlref.bench import BENCHES

def run(s):
    small = BENCHES["rollout"](n_prompts=4, n=2, max_new_tokens=4, repeats=1, seed=s)
    tiny = BENCHES["grpo-step"](steps=2, prompts_per_step=8, max_new_tokens=8, seed=s)
    kv = max(small["kv_peak_ratio"][k] for k in ["sink", "h2o", "snapkv"])
    lens = (tiny["rlref_mean_completion_len"], tiny["trl_mean_completion_len"])
    return dict(max_kv_ratio=kv, margin_kv=0.3 - kv, completion_len=lens, margin_len=min(lens) - 6)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4]); ap.add_argument("--out", default="experiments/93_bench/seed_sweep.jsonl")
    a = ap.parse_args()
    for s in a.seeds:
        t0 = time.time(); rec = dict(check="all", seed=s) | run(s) | dict(seconds=round(time.time() - t0, 1))
        print(json.dumps(rec), flush=True)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
