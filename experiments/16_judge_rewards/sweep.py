"""Chapter 16's reader-size runs: GRPO (seq-mean, group std) and Dr. GRPO (token sum / constant, no std) on the judge task
(`judge_expr`: a target integer, an optional filler, then an expression), from each seed's judge warm start
(rlref.methods.judges.judge_warm_start, built once into the cache), under several reward designs (rlref.methods.judges.make_reward):
the hackable proxy, the strict panel (three criterion judges with flip rate 0.1, AND), a single noisy judge of gold quality (flip 0.1),
and, with --rewards, the noise grid and_p0 / and_p0.2 / majority_p0.1 / majority_p0.2 and the learned judge rm / rm_strict
(its train and held-out accuracy is stored with the run).

One JSON line per (reward, algo, seed) in --out; rows already there are skipped (resumable; arm-major, the headline
pairs first). Every step records the rollout's gold success, proxy score and the mean lengths of gold and non-gold
samples; every --eval_every steps the held-out targets (split 'test', listed as `targets`) are sampled --eval_n times
each, and each evaluation keeps `hits`, every held-out target's gold count out of eval_n in that order (so arms can be
paired per target as well as per seed). The last rollout's first completions are kept as a gallery, and the warm
start's own record (SFT steps, validation gold) as `warm_start`.

The 200-step sweep (the defaults: --steps 200 --eval_every 40, log sweep_200.jsonl; --arms runs reward/algo pairs in
the order given, instead of --rewards x --algos):

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/16_judge_rewards/sweep.py \\
        --seeds 0 1 2 3 4 --arms strict/drgrpo mean_p0.1/drgrpo strict/grpo proxy/grpo proxy/drgrpo and_p0/drgrpo \\
        and_p0.2/drgrpo majority_p0/drgrpo majority_p0.1/drgrpo majority_p0.2/drgrpo

The first, 40-step sweep (sweep.jsonl; its rows predate `hits`, `targets` and `warm_start`):

    ... sweep.py --seeds 0 1 2 --steps 40 --eval_every 20 --out experiments/16_judge_rewards/sweep.jsonl
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import json, sys, time
from pathlib import Path
import torch
from sweep_runner import run_pending, sweep_parser, parse_sweep_args
from rlref.methods.judges import judge_warm_start, arm_config, judge_trainer, sampled_eval, held_out, completion_stats, train_reward_model

REWARDS, ALGOS = ("proxy", "strict", "single"), ("grpo", "drgrpo")
ORDER = [("proxy", "grpo"), ("strict", "drgrpo"), ("strict", "grpo"), ("proxy", "drgrpo"), ("single", "drgrpo"),
         ("single", "grpo")]   # the headline pairs first

def run(reward, algo, seed, over, a):
    ws = judge_warm_start(seed)
    cfg = arm_config(reward, algo, seed, ws, **({"steps": a.steps} | over))
    t0 = time.process_time()
    tr = judge_trainer(cfg)
    test = held_out(tr.task, "test")
    def ev(step):
        e = sampled_eval(tr.policy, tr.tok, test, n=a.eval_n, temperature=cfg.temperature,
                         max_new_tokens=tr.max_new_tokens, seed=step, per_row=True)
        return dict(step=step, **{k: v for k, v in e.items() if k != "examples"})
    curve, hist = [ev(0)], []
    for _ in range(cfg.steps):
        m = tr.train_step()
        hist.append({k: round(v, 5) if isinstance(v, float) else v for k, v in m.items()
                     if k in ("step", "reward_mean", "accuracy", "entropy", "zero_std_frac", "completion_length") or k.startswith("rollout_")})
        if tr.step % a.eval_every == 0 or tr.step == cfg.steps: curve.append(ev(tr.step))
    g = torch.Generator().manual_seed(seed)
    from rlref.rollout import sample
    r = sample(tr.policy, tr.tok, list(test["prompt"][:a.gallery]), n=1, max_new_tokens=tr.max_new_tokens, temperature=cfg.temperature, generator=g)
    s = completion_stats(r.completions, list(test["target"][:a.gallery]))
    gallery = [dict(prompt=p, completion=c, gold=s["gold"][i], proxy=round(s["proxy"][i], 3)) for i, (p, c) in enumerate(zip(r.prompts, r.completions))]
    rm = dict(rm_report=train_reward_model(judge_warm_start(seed), seed).report) if reward.startswith("rm") else {}   # the learned judge's accuracy (cached)
    wsrec = json.loads((ws / "warm_start.json").read_text())
    setting = {k: getattr(cfg, k) for k in ("lr", "prompts_per_step", "samples_per_prompt", "temperature", "steps",
                                            "loss_type", "scale_rewards")}
    return rm | dict(reward=reward, algo=algo, seed=seed, overrides=over, setting=setting, targets=list(test["target"]),
                     warm_start={k: wsrec.get(k) for k in ("sft_steps", "val", "cpu_seconds")},
                     curve=curve, history=hist, gallery=gallery, cpu_seconds=round(time.process_time() - t0, 1))

def main():
    ap = sweep_parser("experiments/16_judge_rewards/sweep_200.jsonl", "lr=1e-4")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--arms", nargs="+", default=None,
                    help="reward/algo pairs, run in this order (instead of --rewards x --algos)")
    ap.add_argument("--rewards", nargs="+", default=list(REWARDS))
    ap.add_argument("--algos", nargs="+", default=list(ALGOS))
    ap.add_argument("--eval_every", type=int, default=40)
    ap.add_argument("--eval_n", type=int, default=8)
    ap.add_argument("--gallery", type=int, default=12)
    a, over = parse_sweep_args(ap)
    arms = [(r, g) for r, g in ORDER if r in a.rewards and g in a.algos] + [(r, g) for r in a.rewards for g in a.algos
                                                                             if (r, g) not in ORDER]
    if a.arms: arms = [tuple(x.split("/")) for x in a.arms]
    def summary(rec):
        h0, h1 = rec["history"][0], rec["history"][-1]
        return (f"{rec['reward']} {rec['algo']} seed {rec['seed']}: gold {h0['rollout_gold']:.3f} -> {h1['rollout_gold']:.3f}, proxy {h0['rollout_proxy']:.3f} -> {h1['rollout_proxy']:.3f}, "
                f"length {h0['rollout_length']:.1f} -> {h1['rollout_length']:.1f}, {rec['cpu_seconds']} CPU s")
    run_pending(a.out, ("reward", "algo", "seed"), [(r, g, s) for r, g in arms for s in a.seeds],   # arm-major, headline pairs first: an interrupted sweep leaves whole arms
                lambda reward, algo, seed: run(reward, algo, seed, over, a), summary, overrides=over)

if __name__ == "__main__": main()
