"""Seed sweep for chapter 12's test-size checks that depend on training (EVIDENCE.md rule 7).

`small` (cells 32-35): the small warm start (150 SFT steps on sums below 30) and 20 GRPO steps, then held-out accuracy of the RL
model and of its rank-1 and random reconstructions. Checked: |z_full| >= 3, ratio_rank1 >= 0.5, ratio_rank1 - ratio_random >= 0.4.
The chapter fixes the warm start's model/SFT seed (0) and sets the RL seed; a different CPU changes both, so both take the seed here.

`subst` (cells 37-39): 30 SFT steps then 4 GRPO steps with rank-1 substitution every 2 steps; checked: the second singular value of
every substituted update is <= 1e-3 of the first (margin: the largest sv1/sv0 seen, against 1e-3).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python tools/seed_sweep_12_rank1.py --checks small --seeds 0 1 2 3 4
"""
import argparse, copy, json, random, tempfile, time
from pathlib import Path
import torch
from datasets import Dataset
from rlref.core import seed_everything
from rlref.models import make_char_tokenizer, make_tiny_llama, sft_warm_start, save_policy, load_policy
from rlref.tasks import Task, correctness_reward, format_reward, greedy_completions
from rlref.kvcache import paired_drop
from rlref.trainer import recipe_config, Trainer
from rlref.methods.rank1 import weight_deltas, apply_update, recovery_ratio, Rank1Substitution, CheckpointRecorder

def sums_task(n=30, n_test=300, seed=0):
    pairs = [(a, b) for a in range(n) for b in range(n)]
    random.Random(seed).shuffle(pairs)
    rows = [dict(prompt=f"{a}+{b}=", answer=str(a + b)) for a, b in pairs]
    return Task(f"sums_below_{n}", Dataset.from_list(rows[n_test:]), Dataset.from_list(rows[:n_test]), correctness_reward, format_reward, max_new_tokens=4)

def small(seed, base_seed=None):
    base_seed = seed if base_seed is None else base_seed
    task, tok = sums_task(), make_char_tokenizer()
    base = make_tiny_llama(tok, "tiny", max_len=64, seed=base_seed)
    sft_warm_start(base, tok, task.train, steps=150, lr=3e-3, warmup=50, seed=base_seed, progress=False); base.eval()
    prompts = list(task.test["prompt"])
    hits = lambda m: task.reward_fn(prompts, greedy_completions(m, tok, prompts, task.max_new_tokens), answer=list(task.test["answer"]))
    hits_base = hits(base)
    cfg = recipe_config("arith-grpo", steps=20, prompts_per_step=32, samples_per_prompt=8, temperature=0.7, lr=5e-4, warmup_steps=0, eval_every=0, progress=False)
    tr = Trainer(cfg, copy.deepcopy(base).train(), tok, task)
    for i, k in enumerate(("prompts", "shuffle", "sampler")): tr.gens[k].manual_seed(seed * 1000 + i)
    seed_everything(seed); tr.fit()
    rl = tr.policy.eval(); d = weight_deltas(base, rl)
    h = dict(full=hits(rl), rank1=hits(apply_update(base, d, "rank1", seed=seed)), random=hits(apply_update(base, d, "random", seed=seed)))
    acc = {k: sum(v) / len(v) for k, v in h.items()} | dict(base=sum(hits_base) / len(hits_base))
    z = paired_drop(hits_base, h["full"])["z"]
    ratio = {k: recovery_ratio(acc["base"], acc["full"], acc[k]) for k in ("rank1", "random")}
    return dict(base_seed=base_seed, accuracy={k: round(v, 3) for k, v in acc.items()}, z_full=round(z, 2), ratio={k: round(v, 3) for k, v in ratio.items()},
                margin_z=round(abs(z) - 3, 2), margin_rank1=round(ratio["rank1"] - 0.5, 3), margin_gap=round(ratio["rank1"] - ratio["random"] - 0.4, 3))

def subst(seed):
    sft_dir = Path(tempfile.mkdtemp()) / "sft"
    warm = Trainer.setup(recipe_config("arith-grpo", steps=0, progress=False, eval_limit=50, sft_steps=30, sft_target=None, sft_lr=3e-3, seed=seed))
    save_policy(warm.policy, warm.tok, sft_dir)
    base, tok = load_policy(sft_dir); base.eval()
    STEPS, K = 4, 2
    cfg = recipe_config("arith-grpo", model=str(sft_dir), steps=STEPS, prompts_per_step=8, samples_per_prompt=8, temperature=0.7, lr=1e-4,
                        eval_every=K, eval_limit=50, progress=False, format_weight=0.5)
    tr = Trainer.setup(cfg)
    for i, k in enumerate(("prompts", "shuffle", "sampler")): tr.gens[k].manual_seed(seed * 1000 + i)
    seed_everything(seed)
    tr.add_hook("after_step", Rank1Substitution(tr.policy, K)); rec = CheckpointRecorder(tr.policy, 1); tr.add_hook("after_step", rec)
    tr.fit()
    last = weight_deltas(base, rec.states[STEPS - STEPS % K])
    svs = [torch.linalg.svdvals(d) for d in last.values()]
    worst = max((sv[1] / sv[0]).item() for sv in svs)
    return dict(min_sv0=min(sv[0].item() for sv in svs), worst_sv1_over_sv0=worst, margin=1e-3 - worst)

CHECKS = dict(small=small, subst=subst)

if __name__ == "__main__":
    from seed_sweep_common import sweep_main
    sweep_main(CHECKS, "tools/seed_sweep_12_rank1.jsonl", seeds=[0, 1, 2, 3, 4])
