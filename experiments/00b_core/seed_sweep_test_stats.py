"""Seed sweep for tests/test_stats.py's one check whose outcome depends on a trained model (EVIDENCE.md rule 7).

test_evaluate_per_prompt_is_the_vector_behind_the_accuracy needs a 30-step SFT warm start whose greedy answers get the first digit
right on some but not all of n held-out sums (0 < hits < n). Per seed s (TrainConfig.seed = s): the hit count; margin =
min(hits, n - hits) - 1 (0 = holds with no room). With n = 12 seed 3 got 11 of 12 (margin 0), so the test now evaluates 60 sums.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/00b_core/seed_sweep_test_stats.py --seeds 0 1 2 3 4 5 6 7
"""
import argparse, json, sys, time
from pathlib import Path
import torch
TINY = json.loads((Path(__file__).resolve().parents[2] / "tests" / "tiny_configs.json").read_text())["test_stats"]  # tests/test_stats.py's tiny config
def tiny(out, **kw): return recipe_config("arith-grpo", **(TINY | dict(out=None if out is None else str(out)) | kw))
from rlref.trainer import Trainer
from rlref.train.config import recipe_config

def first_digit(seed, n=12):
    tr = Trainer.setup(tiny(None, seed=seed, **({} if n == 12 else dict(eval_limit=n, task_kwargs=dict(n_train=200, n_test=n)))))
    tr.task.reward_fn = lambda prompts, completions, answer, **kw: [float(c.strip()[:1] == a[:1]) for c, a in zip(completions, answer)]
    h = int(tr.evaluate(per_prompt=True).sum())
    return dict(n=n, hits=h, margin=min(h, n - h) - 1)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5, 6, 7]); ap.add_argument("--out", default="experiments/00b_core/seed_sweep_test_stats.jsonl")
    ap.add_argument("--n", type=int, default=12, help="held-out prompts evaluated (the test used 12, now 60)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for s in a.seeds:
        t0 = time.time(); rec = dict(check="first_digit_hits", seed=s) | first_digit(s, a.n) | dict(seconds=round(time.time() - t0, 1))
        print(json.dumps(rec), flush=True)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
