"""Seed sweep for tests/test_algorithms.py's checks whose outcome depends on a model's numbers (EVIDENCE.md rule 7).

Per seed s: torch.manual_seed(s) and TrainConfig.seed = s (the tests' _setup uses 0), one JSON line per (check, seed):
- added_algorithm: a toy REINFORCE on random rewards (generator seed s) moves every parameter in 2 steps; margin = smallest max|change|
- dapo: the arith-dapo recipe from a 60-step warm start keeps all 8 groups on each of 2 steps (with refills) and moves every
  parameter; margin = min groups_kept - 8 (0 = holds) and the refill rounds used against max_refill_rounds
- top_k_replay: with top_k=3, top_p=0.9 the untruncated learner log-probs differ from the sampler's by > 1e-2; margin = max gap - 1e-2

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/07_trainer/seed_sweep_test_algorithms.py --seeds 0 1 2 3 4 5 6 7
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, sys, time
from pathlib import Path
import torch
SMALL = json.loads((Path(__file__).resolve().parents[2] / "tests" / "tiny_configs.json").read_text())["test_algorithms"]  # tests/test_algorithms.py's tiny config
def _params(tr): return {n: p.detach().clone() for n, p in tr.policy.named_parameters() if p.requires_grad}
from rlref.rollout import completion_logprobs
from rlref.trainer import Trainer
from rlref.algorithms import ALGORITHMS, Algorithm, register_algorithm
from rlref.train.config import TrainConfig, recipe_config

def _setup(seed, recipe="arith-grpo", **kw):
    torch.manual_seed(seed)
    return Trainer.setup(recipe_config(recipe, **(SMALL | dict(seed=seed) | kw)))

def added_algorithm(seed):
    def adv(tr, r): r.advantages = r.rewards - r.rewards.mean()
    def loss(tr, ctx): return ctx.aggregate(-ctx.mb.advantages[:, None] * ctx.logprobs, tr.cfg.loss_type), {}
    register_algorithm(Algorithm("toy_reinforce", adv, loss, default_loss_type="seq_mean_token_sum", kl=()), replace=True)
    try:
        torch.manual_seed(seed); tr = Trainer.setup(TrainConfig(algorithm="toy_reinforce", **(SMALL | dict(seed=seed))))
        g = torch.Generator().manual_seed(seed)
        tr.add_hook("after_rewards", lambda t, r: setattr(r, "rewards", torch.rand(len(r), generator=g)) or r)
        before = _params(tr); [tr.train_step() for _ in range(2)]
        moved = {n: (before[n] - p).abs().max().item() for n, p in _params(tr).items()}
    finally: del ALGORITHMS["toy_reinforce"]
    return dict(margin=min(moved.values()), n_unchanged=sum(v == 0 for v in moved.values()))

def dapo(seed):
    tr = _setup(seed, "arith-dapo", sft_steps=60, sft_lr=3e-3, sft_target=0.5, prompts_per_step=8)
    before = _params(tr); ms = [tr.train_step() for _ in range(2)]
    moved = {n: (before[n] - p).abs().max().item() for n, p in _params(tr).items()}
    return dict(groups_kept=[m["groups_kept"] for m in ms], refill_rounds=[m.get("refill_rounds") for m in ms], max_refill_rounds=tr.cfg.max_refill_rounds,
                margin=min(m["groups_kept"] for m in ms) - tr.cfg.prompts_per_step, min_param_change=min(moved.values()), skipped=tr.skipped_steps)

def top_k_replay(seed):
    tr = _setup(seed, top_k=3, top_p=0.9); r = tr.rollout()
    exact = (tr.logprobs(tr.policy, r) - r.sampler_logprobs).abs().max().item()
    full = completion_logprobs(tr.policy, r, tr.cfg.temperature, with_entropy=False)[0]
    gap = (full - r.sampler_logprobs).abs().max().item()
    return dict(replay_error=exact, gap=gap, margin=gap - 1e-2)

CHECKS = dict(added_algorithm=added_algorithm, dapo=dapo, top_k_replay=top_k_replay)

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(CHECKS, "experiments/07_trainer/seed_sweep_test_algorithms.jsonl", seeds=[0, 1, 2, 3, 4, 5, 6, 7])
