"""Chapter 17's reader-size runs: plain GRPO against each data-efficiency branch on the testbed, at an equal budget of generated
completion tokens (refills included), every arm on seeds 0-4, at 320k tokens (issue 42: at 160k the GRPO baseline gained under
15 held-out points on some seeds; that sweep's log is sweep.jsonl, with --budget 160000 --evals 5, the arms of ARMS_160K on seeds
0-2 and the headline four on seeds 3-4).

Arms: grpo (the testbed recipe), dynamic (DAPO dynamic sampling with refill), band (DifficultyBand p-hat in [0.2, 0.8]), replay
(rollout_replay: fraction 0.5, max age 2), oneshot1 / oneshot2 / oneshot16 (few_shot_task on the k train prompts of largest
p(1-p) under the warm start), ttrl (MajorityVoteReward from the shipped 50% warm start) and ttrl_weak (the same from a weaker
warm start: the arith2 recipe stopped at --weak_target validation accuracy, built once per seed into the cache), ttrl_strong (the same
stopped at --strong_target): the shipped warm start's majority-vote@8 accuracy is near 0.45, so the two others bracket 0.5.

Controls (CONTROLS): dynamic_short (dynamic sampling with refill="shortfall"), replay_fresh (the extra update on half of the
fresh rollout, no older rollouts), ttrl_strong_lr and oneshot1_lr (lr 1e-4), ttrl_strong_kl and oneshot1_kl (a k3 KL to the
warm start, beta 0.04).

Every arm runs until its DataMeter count reaches --budget tokens and is evaluated (greedy exact match on the testbed's 500
held-out sums) at step 0 and each time the count crosses a multiple of budget / --evals. The grpo, ttrl_weak and ttrl_strong rows also hold
the warm start's held-out pass@1 / pass@8 / majority-vote@8 from 8 samples at T = 0.7.

Each evaluation records the step, the tokens, the CPU seconds so far and the greedy completions of the first 8 held-out
prompts (rows written before issue 42 have only step, tokens and accuracy).

One JSON line per (arm, seed); rows already in the log are skipped (resumable; seed-major order). Two processes, one log each:

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/17_data_efficient_rl/sweep.py --seeds 0 1 2 3 4 \
        --arms grpo dynamic band replay ttrl_strong ttrl_strong_lr ttrl_strong_kl oneshot1
    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/17_data_efficient_rl/sweep.py --seeds 0 1 2 3 4 \
        --arms dynamic_short replay_fresh ttrl ttrl_weak oneshot1_lr oneshot1_kl oneshot16 --out experiments/17_data_efficient_rl/sweep_320k_b.jsonl
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import json, os, sys, time, traceback
from pathlib import Path
import numpy as np
import torch
from sweep_runner import run_pending, sweep_parser, parse_sweep_args
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import TrainingStopped
from rlref.warm_start import build_warm_start
from rlref.rewards import parse_int
from rlref.evaluation import greedy_completions
from rlref.methods.data_efficiency import (DataMeter, DifficultyBand, rollout_replay, few_shot_task, select_prompts, MajorityVoteReward,
                                           sampled_answers, pass_at_k_per_prompt, majority_vote)

ARMS_160K = ("grpo", "dynamic", "band", "replay", "ttrl_strong", "ttrl_weak", "oneshot1", "oneshot16", "ttrl", "oneshot2")
ARMS = ("grpo", "dynamic", "dynamic_short", "band", "replay", "replay_fresh", "ttrl_weak", "ttrl", "ttrl_strong", "ttrl_strong_lr",
        "ttrl_strong_kl", "oneshot1", "oneshot1_lr", "oneshot1_kl", "oneshot16")   # the 320k sweep, run in this order, seed-major
# issue 42's controls (not in the default list; name them with --arms): the refill sized to the shortfall, and the two arms
# that fell apart (TTRL-strong, one-shot) at a third of the learning rate or with a k3 KL to the warm start
# (base arm, TrainConfig changes); replay_fresh: the replay arm's extra update drawn from the fresh rollout only (max_age 0),
# GRPO with a second update on half of its own batch, which separates reusing old rollouts from the extra optimizer step
CONTROLS = dict(dynamic_short=("dynamic", dict(refill="shortfall")), replay_fresh=("replay", {}),
                ttrl_strong_lr=("ttrl_strong", dict(lr=1e-4)), ttrl_strong_kl=("ttrl_strong", dict(beta=0.04)),
                oneshot1_lr=("oneshot1", dict(lr=1e-4)), oneshot1_kl=("oneshot1", dict(beta=0.04)))
N_SHOWN = 8   # held-out prompts whose greedy completions every evaluation records (what "one answer for everything" reads)
SETTING = dict(lr=3e-4, prompts_per_step=64, samples_per_prompt=8, temperature=0.7)   # the testbed recipe's
KEEP = ("step", "reward_mean", "accuracy", "zero_std_frac", "zero_var_trained", "mid_frac", "trained_groups", "generated_tokens", "step_tokens",
        "refill_tokens", "refill_rounds", "groups_kept", "groups_sampled", "groups_wasted", "band_pool", "band_hit", "pseudo_label_acc", "pseudo_reward_agree", "replay_age_mean")

def other_warm_start(seed, target):
    "The arith2 recipe stopped at another validation accuracy, built once per seed into the cache (it matches this machine only)."
    d = Path(os.environ.get("RLREF_CACHE", Path.home() / ".cache" / "rlref")) / "warm_starts" / f"arith2-t{target:g}-s{seed}"
    if not (d / "warm_start.json").is_file(): build_warm_start(d, "arith2", seed, target=target, tol=0.03)
    return d

def warm_stats(tr, n=8):
    "Held-out pass@1, pass@8 and majority-vote@8 of the policy, from n samples per prompt at the run's temperature."
    ds = tr.task.test.select(range(tr.cfg.eval_limit))
    ans = sampled_answers(tr.policy, tr.tok, list(ds["prompt"]), n, tr.max_new_tokens, tr.cfg.temperature, seed=10_000 + tr.cfg.seed)
    truth = [parse_int(str(a)) for a in ds["answer"]]
    c = np.array([sum(x is not None and x == t for x in xs) for xs, t in zip(ans, truth)])
    return dict(pass1=float(pass_at_k_per_prompt(n, c, 1).mean()), pass8=float(pass_at_k_per_prompt(n, c, n).mean()),
                maj8=float(np.mean([majority_vote(xs) is not None and majority_vote(xs) == t for xs, t in zip(ans, truth)])))

def run(arm, seed, a, over):
    kw = dict(seed=seed, eval_every=0, kl_every=0, progress=False, checkpoint_every=0, steps=100_000) | SETTING
    name = arm                                    # a control runs its base arm with its changes
    if arm in CONTROLS: arm, kw = CONTROLS[arm][0], kw | CONTROLS[arm][1]
    if arm == "dynamic": kw |= dict(dynamic_sampling=True, max_refill_rounds=a.refills)
    mv = MajorityVoteReward() if arm.startswith("ttrl") else None
    if mv: kw |= dict(reward_funcs=[mv])
    if arm in ("ttrl_weak", "ttrl_strong"):
        kw |= dict(warm_start=None, model=str(other_warm_start(seed, a.weak_target if arm == "ttrl_weak" else a.strong_target)))
    t0 = time.process_time()
    tr = Trainer.setup(recipe_config("testbed", **(kw | over)))
    meter = DataMeter(tr)
    extra = {}
    if arm == "band": DifficultyBand(tr, 0.2, 0.8, max_age=a.band_age)
    if arm == "replay": rollout_replay(tr, fraction=0.5, max_age=0 if name == "replay_fresh" else 2, seed=seed)
    if arm.startswith("oneshot"):
        k = int(arm[len("oneshot"):])
        idx = select_prompts(tr.policy, tr.tok, tr.task, k, candidates=256, n=8, seed=seed)
        tr.task = few_shot_task(tr.task, k, idx)
        extra["prompts"] = list(tr.task.train["prompt"])
    if mv: mv.attach(tr)
    if arm in ("grpo", "ttrl_weak", "ttrl_strong"): extra["warm_stats"] = warm_stats(tr)
    shown = list(tr.task.test["prompt"][:N_SHOWN])
    def point(hits):   # one evaluation: held-out accuracy, CPU so far, and the greedy completions of the first prompts
        return dict(step=tr.step, tokens=meter.tokens, acc=float(hits.float().mean()), cpu=round(time.process_time() - t0, 1),
                    completions=greedy_completions(tr.policy, tr.tok, shown, max_new_tokens=tr.max_new_tokens))
    hits0 = tr.evaluate(per_prompt=True)
    curve, hist, stopped, next_eval = [point(hits0)], [], None, a.budget / a.evals
    while meter.tokens < a.budget:
        try: m = tr.train_step()
        except TrainingStopped as e: stopped = str(e); break
        hist.append({k: (round(v, 5) if isinstance(v, float) else v) for k, v in m.items() if k in KEEP})
        if meter.tokens >= next_eval or meter.tokens >= a.budget:
            hits = tr.evaluate(per_prompt=True)
            curve.append(point(hits))
            while next_eval <= meter.tokens: next_eval += a.budget / a.evals
    hits = tr.evaluate(per_prompt=True)
    if curve[-1]["step"] != tr.step: curve.append(point(hits))
    return dict(arm=name, seed=seed, overrides=over, budget=a.budget, setting=SETTING | dict(refills=a.refills, band_age=a.band_age, weak_target=a.weak_target, strong_target=a.strong_target),
                curve=curve, history=hist, stopped=stopped, hits0="".join("1" if h else "0" for h in hits0.tolist()),
                hits="".join("1" if h else "0" for h in hits.tolist()), cpu_seconds=round(time.process_time() - t0, 1), **extra)

def main():
    ap = sweep_parser("experiments/17_data_efficient_rl/sweep_320k.jsonl", "prompts_per_step=8", seeds=(0, 1, 2, 3, 4))
    ap.add_argument("--arms", nargs="+", default=list(ARMS))
    ap.add_argument("--budget", type=int, default=320_000, help="generated completion tokens per run (refills included)")
    ap.add_argument("--evals", type=int, default=10, help="held-out evaluations per run (besides step 0)")
    ap.add_argument("--refills", type=int, default=4, help="max_refill_rounds of the dynamic arm")
    ap.add_argument("--band_age", type=int, default=50, help="DifficultyBand max_age")
    ap.add_argument("--weak_target", type=float, default=0.15, help="validation exact match at which the weak warm start's SFT stops")
    ap.add_argument("--strong_target", type=float, default=0.8, help="validation exact match at which the strong warm start's SFT stops")
    a, over = parse_sweep_args(ap)
    def summary(rec):
        c = rec["curve"]
        return (f"{rec['arm']} seed {rec['seed']}: acc {c[0]['acc']:.3f} -> {c[-1]['acc']:.3f} in {c[-1]['step']} steps, {c[-1]['tokens']} tokens, "
                f"{rec['cpu_seconds']} CPU s{' STOPPED: ' + rec['stopped'] if rec['stopped'] else ''}")
    run_pending(a.out, ("arm", "seed"), [(arm, s) for s in a.seeds for arm in a.arms], lambda arm, seed: run(arm, seed, a, over), summary,
                keep_going=True, overrides=over, budget=a.budget)

if __name__ == "__main__": main()
