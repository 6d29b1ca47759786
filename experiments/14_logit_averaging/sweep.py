"""Chapter 14's reader-size runs: GRPO with a k3 KL penalty (beta in {0, 0.01, 0.1}) against GRPO on a logit-averaged policy
(alpha in {0.25, 0.5, 0.75}, beta = 0) and the SFT warm start alone, on the format task `arith_ans` (two-digit sums answered as
<ans>sum</ans>), from each seed's format warm start (rlref.methods.logit_averaging.format_warm_start, built once into the cache).

One JSON line per (reward, arm, seed) in experiments/14_logit_averaging/sweep.jsonl; rows already there are skipped (resumable). Every arm
shares the setting below (same G, lr, steps) and is evaluated every --eval_every steps on the same 500 held-out prompts: greedy
correctness (`hits`), exact-format rate (`fmt`), KL(pi_deployed || pi_sft) of whole completions and the centred-logit gap
||z_theta - z_ref|| on the first --kl_prompts held-out prompts x --kl_n samples at the sampling temperature.

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/14_logit_averaging/sweep.py --seeds 0 1 2 --rewards correct
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import copy, json, sys, time
from pathlib import Path
import torch
from sweep_runner import run_pending, sweep_parser, parse_sweep_args
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.warm_start import TESTBED_TASK
from rlref.methods.logit_averaging import format_warm_start, logit_averaging_trainer, format_eval, drift_metrics, halves

ARMS = ("sft", "grpo_b0", "grpo_b0.01", "grpo_b0.1", "la_a0.25", "la_a0.5", "la_a0.75")
SETTING = dict(lr=2e-4, prompts_per_step=64, samples_per_prompt=8, temperature=0.7, steps=40)   # the chapter's reader size (CPU-bound)

def config(seed, arm, reward, over):
    beta = float(arm[len("grpo_b"):]) if arm.startswith("grpo_b") else 0.0
    kw = dict(warm_start=None, model=str(format_warm_start(seed)), task="arith_ans", task_kwargs=TESTBED_TASK["task_kwargs"], beta=beta,
              eval_every=0, kl_every=0, progress=False, checkpoint_every=0, reward_funcs=["ans_strict"] if reward == "strict" else None)
    return recipe_config("testbed", seed=seed, **(kw | SETTING | over))

def measure(tr, ref, a, step):
    ev = format_eval(tr.policy, tr.tok, tr.task.test, limit=tr.cfg.eval_limit, max_new_tokens=tr.max_new_tokens)
    prompts = list(tr.task.test["prompt"][:a.kl_prompts])
    d = drift_metrics(tr.policy, ref, tr.tok, prompts, n=a.kl_n, max_new_tokens=tr.max_new_tokens, temperature=tr.cfg.temperature, seed=step)
    return dict(step=step, acc=float(ev["hits"].float().mean()), fmt=float(ev["fmt"].float().mean()), **d), ev

def run(arm, seed, reward, over, a):
    cfg = config(seed, arm, reward, over)
    t0 = time.process_time()
    if arm.startswith("la_a"): tr = logit_averaging_trainer(cfg, float(arm[len("la_a"):]))
    else: tr = Trainer.setup(cfg)
    ref = halves(tr.policy)[1] or tr.ref or copy.deepcopy(tr.policy).eval().requires_grad_(False)   # the SFT policy, frozen
    fmt_rollout = {}
    tr.add_hook("after_rewards", lambda t, r: fmt_rollout.__setitem__("v", sum(t.task.format_reward_fn(r.prompts, r.completions)) / len(r)))
    tr.add_hook("after_step", lambda t, m: m | dict(rollout_format=fmt_rollout["v"]))
    row, ev = measure(tr, ref, a, 0)
    curve, hist = [row], []
    steps = 0 if arm == "sft" else cfg.steps
    for _ in range(steps):
        m = tr.train_step()
        hist.append({k: round(v, 5) if isinstance(v, float) else v for k, v in m.items()
                     if k in ("step", "reward_mean", "accuracy", "rollout_format", "entropy", "zero_std_frac", "completion_length")})
        if tr.step % a.eval_every == 0 or tr.step == steps:
            row, ev = measure(tr, ref, a, tr.step); curve.append(row)
    return dict(arm=arm, seed=seed, reward=reward, overrides=over, setting={k: getattr(cfg, k) for k in SETTING} | dict(beta=cfg.beta),
                alpha=float(arm[len("la_a"):]) if arm.startswith("la_a") else None, curve=curve, history=hist,
                hits="".join("1" if h else "0" for h in ev["hits"].tolist()), fmt="".join("1" if h else "0" for h in ev["fmt"].tolist()),
                examples=ev["completions"][:8], kl_prompts=a.kl_prompts, kl_n=a.kl_n, cpu_seconds=round(time.process_time() - t0, 1))

def main():
    ap = sweep_parser("experiments/14_logit_averaging/sweep.jsonl", "steps=40")
    ap.add_argument("--arms", nargs="+", default=list(ARMS))
    ap.add_argument("--rewards", nargs="+", default=["correct"], help="correct (correctness only) and/or strict (correctness x format)")
    ap.add_argument("--eval_every", type=int, default=10)
    ap.add_argument("--kl_prompts", type=int, default=50)
    ap.add_argument("--kl_n", type=int, default=4)
    a, over = parse_sweep_args(ap)
    def summary(rec):
        first, last = rec["curve"][0], rec["curve"][-1]
        return (f"{rec['reward']} {rec['arm']} seed {rec['seed']}: acc {first['acc']:.3f} -> {last['acc']:.3f}, fmt {first['fmt']:.3f} -> {last['fmt']:.3f}, "
                f"KL {last['kl']:.3f}, gap {last['logit_gap']:.2f}, {rec['cpu_seconds']} CPU s")
    run_pending(a.out, ("reward", "arm", "seed"), [(r, arm, s) for r in a.rewards for s in a.seeds for arm in a.arms],   # seed-major: every arm of a seed before the next seed
                lambda reward, arm, seed: run(arm, seed, reward, over, a), summary, overrides=over)

if __name__ == "__main__": main()
