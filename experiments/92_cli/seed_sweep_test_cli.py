"""Seed sweep for tests/test_cli.py's one check whose outcome depends on a model's numbers (EVIDENCE.md rule 7).

test_a_run_that_cannot_go_on_is_one_line_and_exit_1 needs an untrained model (sft_steps=0) to score 0 on all 8 groups of step 1
(4 prompts x 4 samples, one refill round, correctness only). Per seed s (TrainConfig.seed = s: init weights, task split, sampler):
does step 1 stop with "nothing to train on", and how many of 20 further rollouts of 16 samples contain any reward > 0 (an
estimate of how close the check is to failing). One JSON line per seed.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/92_cli/seed_sweep_test_cli.py --seeds 0 1 2 3 4 5 6 7
"""
import argparse, json, sys, time
from pathlib import Path
import torch
TINY = json.loads((Path(__file__).resolve().parents[2] / "tests" / "tiny_configs.json").read_text())["test_cli"]  # tests/test_cli.py's tiny recipe
from rlref.trainer import Trainer
from rlref.train.config import recipe_config

def flat(seed, extra_rollouts=20):
    cfg = recipe_config("arith-grpo", **(TINY | dict(dynamic_sampling=True, max_refill_rounds=1, format_weight=0.0, steps=2, seed=seed, progress=False)))
    tr = Trainer.setup(cfg)
    try: tr.train_step(); stopped = False
    except RuntimeError as e: stopped = "had equal rewards" in str(e)
    hits = [int((tr.rollout().rewards > 0).sum()) for _ in range(extra_rollouts)]
    return dict(stopped=stopped, nonzero_samples_in_extra_rollouts=sum(hits), extra_samples=extra_rollouts * 16, margin=int(stopped))

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5, 6, 7]); ap.add_argument("--out", default="experiments/92_cli/seed_sweep_test_cli.jsonl")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for s in a.seeds:
        t0 = time.time(); rec = dict(check="flat", seed=s) | flat(s) | dict(seconds=round(time.time() - t0, 1))
        print(json.dumps(rec), flush=True)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
