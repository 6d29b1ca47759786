"""Seed sweep for chapter 13's test-size check that depends on training: how far the assertion is from failing, per seed.

- small (cell "A small run"): uniform / PER / FreshPER (tau 1) replay on the testbed from the seed's shipped arith2 warm start,
  8 prompts x 4 samples, K = 2 replay updates of 16 rows, capacity 96, 6 steps. Margins: PER's expected replay age at the last step
  minus FreshPER's, minus the threshold 0.2; the smallest |replay approx KL| of the FreshPER arm minus 1e-4; and the uniform arm's
  expected age, which must be exactly 1.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/13_replay/seed_sweep.py --checks small --seeds 0 1 2 3 4

Lines with check "grid", "grid_sampled_only" and "arith" in the .jsonl are not read by the chapter.
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import numpy as np
from sweep_runner import sweep_main
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.methods.replay import Replay, ReplayConfig

def small(seed, steps=6):
    def arm(mode, tau=None):
        tr = Trainer.setup(recipe_config("testbed", seed=seed, steps=steps, prompts_per_step=8, samples_per_prompt=4, eval_every=0,
                                         checkpoint_every=0, progress=False))
        rp = Replay(tr, ReplayConfig(mode=mode, tau=tau, capacity=96, batch_size=16, min_size=32, updates=2, advantage="stored",
                                     seed=seed, beta_steps=steps, is_normalize="buffer"))   # the recorded sweep's weights
        return rp, [tr.train_step() for _ in range(steps)]
    def expected_age(buf):
        p = buf.tree.leaves[:len(buf)] / buf.tree.total
        return float((p * (buf.step - buf.born[:len(buf)])).sum())
    arms = {n: arm(m, t) for n, m, t in [("uniform", "uniform", None), ("PER", "per", None), ("FreshPER", "fresh", 1.0)]}
    e = {n: expected_age(rp.buffer) for n, (rp, _) in arms.items()}
    kl = min(abs(m["replay_approx_kl"]) for m in arms["FreshPER"][1])
    return dict(expected_age={k: round(v, 4) for k, v in e.items()}, gap=e["PER"] - e["FreshPER"], margin=e["PER"] - e["FreshPER"] - 0.2,
                min_abs_kl=kl, margin_kl=kl - 1e-4, uniform_is_1=abs(e["uniform"] - 1) < 1e-9)

if __name__ == "__main__":
    sweep_main(dict(small=small), "experiments/13_replay/seed_sweep.jsonl")
