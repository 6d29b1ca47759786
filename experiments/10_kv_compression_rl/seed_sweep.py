"""Seed sweep for chapter 10's test-size checks that depend on a trained model:
the margins behind the chapter's test-size checks.

The chapter uses the testbed's shipped arith2 warm start of seed 0 at test size. Here warm start, sampling generator and RL
seed take each seed 0-4 (a different trained model per seed, as a different machine would give), one JSON line per
(check, seed):

- mismatch (cell 14): per policy (sink, h2o, snapkv window 2), kl_k3(6 tokens) > kl_k3(8 tokens), kl_k3(6) > 1e-3,
  ess(6) < ess(full), and at the full budget kl < 1e-6 and max|log xi| < 1e-4. Margins: the smallest of kl6 - kl8,
  kl6 - 1e-3, ess_full - ess6 over policies, and the largest full-budget values.
- mis (cell 16): on SnapKV's 6-token rollouts, the fraction of tokens with xi < 0.5 exceeds the fraction with xi > 2, and the
  two-sided MIS masks more tokens than the one-sided one. Margins: below - above, masked(mis) - masked(mis_upper).
- first_step (cell 30): one step of dense, naive, naive_sp and shadow (snapkv, 7 tokens, 16 prompts x 8 samples); dense, naive,
  shadow: first_log_ratio_max < 1e-5; shadow clip_frac == 0; naive_sp: first_log_ratio_max > 1e-2 and clip_frac > 0.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/10_kv_compression_rl/seed_sweep.py --seeds 0 1 2 3 4
"""
import argparse, json, time
import numpy as np
import torch
from rlref.models import load_policy
from rlref.tasks import make_task
from rlref.rollout import sample, completion_logprobs
from rlref.kvcache import make_kv_policy
from rlref.losses import importance_weights
from rlref.warm_start import warm_start_dir, TESTBED_TASK
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.methods.sparse_rollouts import ratio_factors, mismatch_stats, SparseRolloutArm, arm_config

TEMP, POLICIES, KW = 0.7, ["sink", "h2o", "snapkv"], dict(sink={}, h2o={}, snapkv=dict(window=2))

def mismatch(seed, warm, tok, task):
    prompts = list(task.test["prompt"])[:32]; mm, lx6 = {}, None
    for name in POLICIES:
        for b in [1.0, 8, 6]:
            r = sample(warm, tok, prompts, n=4, max_new_tokens=task.max_new_tokens, temperature=TEMP, kv_policy=make_kv_policy(name, b, **KW[name]),
                       generator=torch.Generator().manual_seed(seed))
            with torch.no_grad(): old, _ = completion_logprobs(warm, r, TEMP, with_entropy=False)
            lx = ratio_factors(old, old, r.sampler_logprobs, r.completion_mask)["log_xi"]
            mm[name, b] = mismatch_stats(lx, r.completion_mask)
            if (name, b) == ("snapkv", 6): lx6 = lx[r.completion_mask.bool()]
    per = {n: dict(kl6=mm[n, 6]["kl_k3"], kl8=mm[n, 8]["kl_k3"], ess6=mm[n, 6]["ess"], ess_full=mm[n, 1.0]["ess"],
                   kl_full=mm[n, 1.0]["kl_k3"], xi_full=mm[n, 1.0]["max_abs_log_xi"]) for n in POLICIES}
    below, above = (lx6 < np.log(0.5)).float().mean().item(), (lx6 > np.log(2.0)).float().mean().item()
    one = torch.ones(1, len(lx6))
    masked = {m: importance_weights(lx6[None], torch.zeros_like(lx6)[None], one, "token_mis", clip_max=2.0, clip_min=lo).frac_masked
              for m, lo in (("mis_upper", None), ("mis", 0.5))}
    return [dict(check="mismatch", per_policy={n: {k: round(v, 5) for k, v in d.items()} for n, d in per.items()},
                 margin_kl_order=min(d["kl6"] - d["kl8"] for d in per.values()), margin_kl_floor=min(d["kl6"] - 1e-3 for d in per.values()),
                 margin_ess=min(d["ess_full"] - d["ess6"] for d in per.values()), max_kl_full=max(d["kl_full"] for d in per.values()),
                 max_xi_full=max(d["xi_full"] for d in per.values())),
            dict(check="mis", below=below, above=above, masked=masked, margin_mass=below - above, margin_masked=masked["mis"] - masked["mis_upper"])]

def first_step(seed, warm, tok, task):
    RL = dict(steps=1, prompts_per_step=16, samples_per_prompt=8, temperature=TEMP, lr=2e-4, warmup_steps=0)
    out = {}
    for arm in ("dense", "naive", "naive_sp", "shadow"):
        cfg = recipe_config("testbed", seed=seed, eval_every=0, checkpoint_every=0, progress=False, **(RL | arm_config(arm)))
        tr = Trainer.setup(cfg); SparseRolloutArm(arm, None if arm == "dense" else make_kv_policy("snapkv", 7, window=2)).attach(tr)
        m = tr.train_step()
        out[arm] = {k: m.get(k) for k in ("first_log_ratio_max", "clip_frac", "xi_kl", "kv_ratio")}
    return [dict(check="first_step", arms=out, margin_naive_sp_ratio=out["naive_sp"]["first_log_ratio_max"] - 1e-2, naive_sp_clip=out["naive_sp"]["clip_frac"],
                 max_exact_ratio=max(out[a]["first_log_ratio_max"] for a in ("dense", "naive", "shadow")), shadow_clip=out["shadow"]["clip_frac"])]

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4]); ap.add_argument("--out", default="experiments/10_kv_compression_rl/seed_sweep.jsonl")
    a = ap.parse_args()
    torch.set_num_threads(1)
    task = make_task(TESTBED_TASK["task"], **TESTBED_TASK["task_kwargs"])
    for s in a.seeds:
        t0 = time.time(); warm, tok = load_policy(warm_start_dir("arith2", s))
        for fn in (mismatch, first_step):
            for rec in fn(s, warm.eval(), tok, task):
                rec = dict(seed=s) | rec | dict(seconds=round(time.time() - t0, 1))
                print(json.dumps(rec), flush=True)
                with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
