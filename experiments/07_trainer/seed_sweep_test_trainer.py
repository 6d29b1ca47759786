"""Seed sweep for tests/test_trainer.py's checks whose outcome depends on the sampled stream (EVIDENCE.md rule 7).

Per seed s: torch.manual_seed(s) and TrainConfig.seed = s (model init, task split, SFT, generators), one JSON line per (check, seed):
- every_algorithm: steps until every trainable parameter has moved (the test allows 12); margin = 12 - steps, per recipe
- loss_terms: lm_head norm without the L2 term minus with it, against 1e-3

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/07_trainer/seed_sweep_test_trainer.py --seeds 0 1 2 3 4
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, sys, time
from pathlib import Path
import torch
SMALL = json.loads((Path(__file__).resolve().parents[2] / "tests" / "tiny_configs.json").read_text())["test_trainer"]  # tests/test_trainer.py's tiny config
def _trained_params(trainer):
    mods = [trainer.policy] + ([trainer.critic] if trainer.critic is not None else [])
    return {f"{i}.{n}": p.detach().clone() for i, m in enumerate(mods) for n, p in m.named_parameters() if p.requires_grad}
from rlref.trainer import Trainer
from rlref.train.config import recipe_config

RECIPES = [("arith-grpo", {}), ("arith-dr_grpo", {}), ("arith-grpo-seqmean", {}), ("arith-grpo", dict(loss_type="bnpo", eps_high=0.28, beta=0.04)),
           ("arith-rloo", dict(kl_coef=0.01)), ("arith-reinforce_pp", {}), ("arith-ppo", dict(minibatch_size=8, kl_coef=0.01)),
           ("arith-online_dpo", dict(prompts_per_step=8, samples_per_prompt=2)), ("arith-grpo-lora", {})]

def every_algorithm(seed):
    out = {}
    for recipe, extra in RECIPES:
        torch.manual_seed(seed)
        cfg = recipe_config(recipe, **(SMALL | extra | dict(steps=12, seed=seed)))
        tr = Trainer.setup(cfg); before = _trained_params(tr); n, unchanged = 0, list(before)
        while unchanged and n < cfg.steps:
            tr.train_step(); n += 1
            after = _trained_params(tr); unchanged = [k for k in before if torch.equal(before[k], after[k])]
        out[recipe + ("+" + ",".join(extra) if extra else "")] = n if not unchanged else None
    return dict(steps_needed=out, margin=min(12 - v if v is not None else -1 for v in out.values()))

def loss_terms(seed):
    cfg = recipe_config("arith-grpo", **(SMALL | dict(sft_steps=0, steps=2, eval_every=0, kl_every=0, seed=seed)))
    norms = {}
    for with_term in (False, True):
        torch.manual_seed(seed); tr = Trainer.setup(cfg)
        if with_term: tr.add_hook("loss_terms", lambda t, ctx: {"head_l2": 10.0 * t.policy.lm_head.weight.square().sum()})
        for _ in range(cfg.steps): tr.train_step()
        norms[with_term] = tr.policy.lm_head.weight.norm().item()
    return dict(norms=norms, margin=norms[False] - norms[True] - 1e-3)

CHECKS = dict(every_algorithm=every_algorithm, loss_terms=loss_terms)

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(CHECKS, "experiments/07_trainer/seed_sweep_test_trainer.jsonl", seeds=[0, 1, 2, 3, 4])
