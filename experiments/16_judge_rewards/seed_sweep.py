"""Seed sweep for chapter 16's test-size check "the proxy grows completions, the strict panel does not": per warm-start seed w,
the chapter's short warm start (QUICK below, the notebook's) is built for w, and the check's ten runs (proxy/GRPO and strict/Dr. GRPO,
RL seeds 0-4, LENGTH_RUN below) are trained from it. Recorded per w: each RL seed's margin (the proxy arm's length growth minus the
strict arm's, in characters; the check asserts > 5 on every seed) and the smallest. The chapter runs w = 0 only.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/16_judge_rewards/seed_sweep.py --seeds 1 2 3 4
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import tempfile, time
from pathlib import Path
import numpy as np
from sweep_runner import run_pending, sweep_parser, parse_sweep_args
from rlref.methods.judges import judge_warm_start, arm_config, judge_trainer

QUICK = dict(max_steps=40, eval_every=20, eval_n=1, min_gold=1.1)            # the chapter's test-size warm start (never stops early)
LENGTH_RUN = dict(steps=8, prompts_per_step=8, samples_per_prompt=8)         # the chapter's test-size runs
RL_SEEDS, THRESHOLD = range(5), 5.0

def run(w: int) -> dict:
    t0 = time.process_time()
    ws = judge_warm_start(w, cache_dir=Path(tempfile.gettempdir()) / "rlref16_seed_sweep", **QUICK)
    growth = {}
    for s in RL_SEEDS:
        for reward, algo in (("proxy", "grpo"), ("strict", "drgrpo")):
            tr = judge_trainer(arm_config(reward, algo, s, ws, **LENGTH_RUN))
            L = [tr.train_step()["rollout_length"] for _ in range(LENGTH_RUN["steps"])]
            growth[(reward, s)] = float(np.mean(L[-2:]) - L[0])
    margins = [round(growth[("proxy", s)] - growth[("strict", s)], 2) for s in RL_SEEDS]
    return dict(check="proxy_minus_strict_length_growth", warm_start_seed=w, margins=margins, min_margin=min(margins),
                threshold=THRESHOLD, passes=min(margins) > THRESHOLD, cpu_seconds=round(time.process_time() - t0, 1))

def main():
    ap = sweep_parser("experiments/16_judge_rewards/seed_sweep.jsonl", seeds=(0, 1, 2, 3, 4))
    a, over = parse_sweep_args(ap)
    run_pending(a.out, ("warm_start_seed",), [(w,) for w in a.seeds], run,
                lambda r: f"warm start {r['warm_start_seed']}: margins {r['margins']}, min {r['min_margin']}, {r['cpu_seconds']} CPU s")

if __name__ == "__main__": main()
