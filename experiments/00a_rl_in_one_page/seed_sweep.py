"""Seed sweep for chapter 00a's test-size check (EVIDENCE.md rule 7): five reinforce_steps on the first 16 training prompts
of warm start s raise the mean log-probability of their correct answers (answer_logprob) by >= 0.1 nats.
Recorded per seed: before, after, gain and margin = gain - 0.1.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/00a_rl_in_one_page/seed_sweep.py            # seeds 0-4 -> experiments/00a_rl_in_one_page/seed_sweep.jsonl
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import os, sys
from sweep_runner import sweep_main
from rlref.onramp import fixed_batch_gain

def fixed_batch(seed):
    before, after = fixed_batch_gain(seed)
    return dict(before=round(before, 4), after=round(after, 4), gain=round(after - before, 4), margin=round(after - before - 0.1, 4))

if __name__ == "__main__":
    sweep_main({"fixed_batch": fixed_batch}, os.path.join(os.path.dirname(__file__), "seed_sweep.jsonl"))
