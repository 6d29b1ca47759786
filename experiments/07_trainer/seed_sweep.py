"""Seed sweep for chapter 07's test-size checks that depend on training (EVIDENCE.md rule 7).

A different CPU rounds differently and behaves like a different seed, so each check is recomputed with `TrainConfig.seed`
(model init, SFT, prompt/shuffle/sampler generators) set to each seed, one JSON line per (check, seed):

- demo (cell 45): the default recipe at test size (40 GRPO steps); checks reward_last10 > reward_first10.
- reinforce (cell 58): two steps of the toy REINFORCE algorithm move every parameter; margin = smallest max|change| of a tensor.
- clip (cell 60): num_iterations=2 gives a non-zero clip fraction on some step; margin = max clip_frac.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/07_trainer/seed_sweep.py --checks reinforce clip demo --seeds 0 1 2 3 4
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, tempfile, time
from pathlib import Path
import torch
from rlref.trainer import Trainer
from rlref.algorithms import Algorithm, ALGORITHMS, register_algorithm
from rlref.train.config import TrainConfig, recipe_config

def demo(seed):
    cfg = recipe_config("arith-grpo", out=str(Path(tempfile.mkdtemp()) / "grpo"), progress=False, steps=40, eval_every=40, eval_limit=300, seed=seed)
    t = Trainer.setup(cfg); s = t.fit(); h = t.history
    first10, last10 = (sum(x["reward_mean"] for x in part) / len(part) for part in (h[:10], h[-10:]))
    return dict(first10=round(first10, 4), last10=round(last10, 4), margin=round(last10 - first10, 4), sft_accuracy=s["sft_accuracy"],
                final_accuracy=s["final_accuracy"])

def reinforce(seed):
    def adv(tr, r): r.advantages = r.rewards - r.rewards.mean()
    def loss(tr, ctx): return ctx.aggregate(-ctx.mb.advantages[:, None] * ctx.logprobs, tr.cfg.loss_type), {}
    register_algorithm(Algorithm("reinforce", adv, loss, default_loss_type="seq_mean_token_sum", kl=()), replace=True)
    try:
        toy = Trainer.setup(TrainConfig(algorithm="reinforce", steps=2, sft_steps=40, sft_lr=3e-3, sft_target=None, prompts_per_step=8,
                                        samples_per_prompt=4, eval_every=0, eval_limit=20, lr=1e-3, progress=False, format_weight=0.5,
                                        task_kwargs=dict(n_train=200, n_test=20), seed=seed))
        before = {n: p.detach().clone() for n, p in toy.policy.named_parameters()}
        ms = [toy.train_step() for _ in range(2)]
        moved = {n: (before[n] - p.detach()).abs().max().item() for n, p in toy.policy.named_parameters()}
    finally: del ALGORITHMS["reinforce"]
    worst = min(moved, key=moved.get)
    return dict(margin=moved[worst], worst_param=worst, n_unchanged=sum(v == 0 for v in moved.values()), rewards=[round(m["reward_mean"], 3) for m in ms])

def clip(seed):
    ex = recipe_config("arith-grpo", steps=2, sft_steps=40, sft_lr=3e-3, sft_target=None, prompts_per_step=8, samples_per_prompt=4, eval_every=0,
                       num_iterations=2, minibatch_size=16, lr=1e-3, progress=False, format_weight=0.5, task_kwargs=dict(n_train=200, n_test=20), seed=seed)
    tr = Trainer.setup(ex); ms = [tr.train_step() for _ in range(2)]
    return dict(margin=max(m["clip_frac"] for m in ms), clip_frac=[m["clip_frac"] for m in ms])

def demo_paired(seed, n_prompts=256, n=8):
    "The demo run, its per-step reward series (slope and its z), and a paired, common-random-numbers sampled reward on fixed training prompts."
    import numpy as np
    from rlref.models import load_policy
    from rlref.rollout import sample
    out = Path(tempfile.mkdtemp()) / "grpo"
    cfg = recipe_config("arith-grpo", out=str(out), progress=False, steps=40, eval_every=40, eval_limit=300, seed=seed)
    t = Trainer.setup(cfg); s = t.fit(); y = np.array([x["reward_mean"] for x in t.history])
    X = np.arange(len(y)); b, a = np.polyfit(X, y, 1); res = y - (a + b * X)
    se_b = np.sqrt(res.var(ddof=2) / ((X - X.mean()) ** 2).sum())
    rows = t.task.train.select(range(n_prompts)); prompts = list(rows["prompt"])
    def reward(model):
        r = sample(model, t.tok, prompts, n=n, max_new_tokens=t.max_new_tokens, temperature=cfg.temperature, generator=torch.Generator().manual_seed(seed))
        c = torch.tensor(t.task.reward_fn(r.prompts, r.completions, answer=[a_ for a_ in rows["answer"] for _ in range(n)]))
        return c.view(n_prompts, n).mean(1)
    warm, _ = load_policy(out / "sft")
    d = reward(t.policy) - reward(warm.eval())
    first10, last10 = y[:10].mean(), y[-10:].mean()
    return dict(rewards=[round(float(v), 4) for v in y], first10=round(float(first10), 4), last10=round(float(last10), 4), margin=round(float(last10 - first10), 4),
                slope_per_step=float(b), slope_z=float(b / se_b), paired_gain=float(d.mean()), paired_z=float(d.mean() / (d.std() / n_prompts ** .5)),
                sft_accuracy=s["sft_accuracy"], final_accuracy=s["final_accuracy"])

def answer_prob(model, tok, rows, temperature):
    "(N,) probability that the sampler at `temperature` writes exactly each row's answer then <eos>: its expected correctness reward."
    from rlref.models import encode_pairs
    enc = encode_pairs(tok, list(rows["prompt"]), list(rows["answer"]))
    with torch.no_grad(): logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits[:, :-1].float() / temperature
    lp = torch.log_softmax(logits, -1).gather(-1, enc["input_ids"][:, 1:, None])[..., 0]  # (N, T-1)
    return (lp * enc["loss_mask"][:, 1:]).sum(1).exp()

def demo_exact(seed, n_prompts=1000):
    "The demo run; the expected training reward (exact, no sampling) on the same training and held-out prompts, warm start vs after RL."
    from rlref.models import load_policy
    out = Path(tempfile.mkdtemp()) / "grpo"
    cfg = recipe_config("arith-grpo", out=str(out), progress=False, steps=40, eval_every=40, eval_limit=300, seed=seed)
    t = Trainer.setup(cfg); s = t.fit(); y = [x["reward_mean"] for x in t.history]
    warm, _ = load_policy(out / "sft"); warm.eval(); t.policy.eval()
    res = {}
    for split, rows in [("train", t.task.train.select(range(n_prompts))), ("test", t.task.test.select(range(300)))]:
        d = answer_prob(t.policy, t.tok, rows, cfg.temperature) - answer_prob(warm, t.tok, rows, cfg.temperature)
        res[split] = dict(gain=float(d.mean()), z=float(d.mean() / (d.std() / len(d) ** .5)), frac_up=float((d > 0).float().mean()))
    first10, last10 = sum(y[:10]) / 10, sum(y[-10:]) / 10
    return dict(expected_reward_gain=res, margin=res["train"]["gain"], first10=round(first10, 4), last10=round(last10, 4),
                sft_accuracy=s["sft_accuracy"], final_accuracy=s["final_accuracy"])

CHECKS = dict(demo=demo, reinforce=reinforce, clip=clip, demo_paired=demo_paired, demo_exact=demo_exact)

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(CHECKS, "experiments/07_trainer/seed_sweep.jsonl", seeds=[0, 1, 2, 3, 4])
