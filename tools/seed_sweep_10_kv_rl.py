"""Seed sweep for chapter 10's test-size checks that depend on a trained model (EVIDENCE.md rule 7).

The chapter trains chapter 04's recall model for 60 SFT steps at test size (`recall_warm_start`, seed 0). Here the task stays
fixed (seed 0, as on any machine) and the model/SFT seed, the sampling generator and the RL seed take each seed, one JSON line
per (check, seed):

- mismatch (cell 14): per policy, kl_k3(25%) > kl_k3(75%), kl_k3(25%) > 1e-3, ess(25%) < ess(100%), and at 100% kl < 1e-6 and
  max|log xi| < 1e-4. Margins: the smallest of kl25 - kl75, kl25 - 1e-3, ess100 - ess25 over policies, and the largest full-budget values.
- first_step (cells 29, 35, 38): one step of the dense, naive and shadow arms (snapkv 25%); naive: first_log_ratio_max > 1e-2
  and clip_frac > 0; dense/shadow: first_log_ratio_max < 1e-5; shadow clip_frac == 0; kv ratio <= 0.3.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python tools/seed_sweep_10_kv_rl.py --seeds 0 1 2 3 4
"""
import argparse, json, tempfile, time
from pathlib import Path
import torch
from rlref.core import seed_everything
from rlref.models import make_char_tokenizer, make_tiny_llama, sft_warm_start, save_policy
from rlref.tasks import make_task
from rlref.rollout import sample, completion_logprobs
from rlref.kvcache import make_kv_policy
from rlref.trainer import recipe_config, Trainer
from rlref.methods.sparse_rollouts import ratio_factors, mismatch_stats, SparseRolloutArm, arm_config

RECALL = dict(n_pairs=6, n_train=5000, n_test=256)
TEMP, POLICIES = 0.7, ["sink", "h2o", "snapkv"]

def warm_start(seed):
    task = make_task("recall", **RECALL, seed=0)
    tok = make_char_tokenizer(); seed_everything(seed)
    model = make_tiny_llama(tok, "tiny", max_len=64, seed=seed)
    sft_warm_start(model, tok, task.train, steps=60, batch_size=64, lr=3e-3, seed=seed, progress=False, log_every=60)
    return model.eval(), tok, task

def mismatch(seed, warm, tok, task):
    prompts = list(task.test["prompt"])[:16]; mm = {}
    for name in POLICIES:
        for b in [1.0, 0.75, 0.25]:
            r = sample(warm, tok, prompts, n=4, max_new_tokens=task.max_new_tokens, temperature=TEMP, kv_policy=make_kv_policy(name, b),
                       generator=torch.Generator().manual_seed(seed))
            with torch.no_grad(): old, _ = completion_logprobs(warm, r, TEMP, with_entropy=False)
            mm[name, b] = mismatch_stats(ratio_factors(old, old, r.sampler_logprobs, r.completion_mask)["log_xi"], r.completion_mask)
    per = {n: dict(kl25=mm[n, 0.25]["kl_k3"], kl75=mm[n, 0.75]["kl_k3"], ess25=mm[n, 0.25]["ess"], ess100=mm[n, 1.0]["ess"],
                   kl100=mm[n, 1.0]["kl_k3"], xi100=mm[n, 1.0]["max_abs_log_xi"]) for n in POLICIES}
    return dict(per_policy={n: {k: round(v, 5) for k, v in d.items()} for n, d in per.items()},
                margin_kl_order=min(d["kl25"] - d["kl75"] for d in per.values()), margin_kl_floor=min(d["kl25"] - 1e-3 for d in per.values()),
                margin_ess=min(d["ess100"] - d["ess25"] for d in per.values()), max_kl100=max(d["kl100"] for d in per.values()),
                max_xi100=max(d["xi100"] for d in per.values()))

def first_step(seed, warm, tok, task):
    warm_dir = save_policy(warm, tok, Path(tempfile.mkdtemp()) / "warm")
    RL = dict(steps=1, prompts_per_step=8, samples_per_prompt=8, temperature=TEMP, lr=1e-4, warmup_steps=0)
    out = {}
    for arm, lam in [("dense", 0.1), ("naive", 0.1), ("shadow", 0.1), ("shadow", 1.0)]:
        cfg = recipe_config("arith-grpo", task="recall", task_kwargs=RECALL, model=str(warm_dir), seed=seed, eval_every=0, checkpoint_every=0,
                            progress=False, **(RL | arm_config(arm)))
        tr = Trainer.setup(cfg); SparseRolloutArm(arm, None if arm == "dense" else make_kv_policy("snapkv", 0.25), lam=lam).attach(tr)
        m = tr.train_step()
        out[f"{arm}@{lam}"] = {k: m.get(k) for k in ("first_log_ratio_max", "clip_frac", "xi_kl", "kv_ratio")}
    return dict(arms=out, margin_naive_ratio=out["naive@0.1"]["first_log_ratio_max"] - 1e-2, naive_clip=out["naive@0.1"]["clip_frac"],
                max_exact_ratio=max(out[a]["first_log_ratio_max"] for a in ("dense@0.1", "shadow@0.1", "shadow@1.0")),
                shadow_clip=max(out[a]["clip_frac"] for a in ("shadow@0.1", "shadow@1.0")),
                max_kv=max(out[a]["kv_ratio"] for a in ("naive@0.1", "shadow@0.1")))

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4]); ap.add_argument("--out", default="tools/seed_sweep_10_kv_rl.jsonl")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for s in a.seeds:
        t0 = time.time(); warm, tok, task = warm_start(s)
        for c, fn in [("mismatch", mismatch), ("first_step", first_step)]:
            rec = dict(check=c, seed=s) | fn(s, warm, tok, task) | dict(seconds=round(time.time() - t0, 1))
            print(json.dumps(rec), flush=True)
            with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
