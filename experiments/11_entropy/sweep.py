"""Chapter 11's reader-size runs on the testbed (chapter 07b): entropy-control arms from each seed's shipped arith2 warm start.

One JSON line per (arm, seed, setting) in experiments/11_entropy/sweep.jsonl; rows already there are skipped (resumable).
Arm `warm_start` is the seed's starting point (no training): its H0 (token-mean rollout entropy at the sampling
temperature, mean of 4 rollouts), greedy held-out hits and pass@k; every trained arm of that seed places its band with
that H0. The trained arms share recipe "testbed" (lr 3e-4, 64 prompts x 8 samples, temperature 0.7, token-mean loss)
with the --set overrides, and all log the same rollout entropy (EntropyMeter / Entrocraft) every step:

  grpo             plain GRPO
  clip_cov         + ClipCov(ratio, cov_low=1, cov_high=5)
  kl_cov           + KLCov(ratio, coef=1) (loss_terms hook)
  entrocraft       EntrocraftReleased(**paper_band(H0), ema): +-1 rewards clamped at 0 out of the band, every sample
  entrocraft_keep  Entrocraft(**paper_band(H0), ema, reject=True): this chapter's variant (group-normalised, one sign kept)
  entrocraft_raw   EntrocraftReleased(**paper_band(H0)), no EMA: the released rule, mode chosen on the raw per-step entropy
  entrocraft_zero  Entrocraft(**paper_band(H0), ema, reject=False): the variant with the other sign's advantages set to 0
                   instead of dropping its rows, so the token-mean denominator (and the number of minibatches) stays GRPO's
  raft             EntrocraftReleased with an all-zero band: RAFT++ on every step (+1 on correct samples, 0 else)

--final_n 64 adds pass@k (k up to 64) from 64 samples per held-out prompt at the end (key "passk64"); such rows are their own
key, so a rerun with it beside the logged runs reproduces them and adds the number.

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice python experiments/11_entropy/sweep.py --seeds 0 1 2 \\
        --set steps=120 --arms grpo entrocraft entrocraft_keep clip_cov kl_cov --out experiments/11_entropy/sweep.jsonl
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, sys, time
from pathlib import Path
import numpy as np
import torch
from sweep_runner import parse_overrides, run_key
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.methods.entropy import (EntropyMeter, Entrocraft, EntrocraftReleased, ClipCov, KLCov, paper_band, rollout_entropy,
                                   pass_at_k_curve, CovarianceProbe)

ARMS = ("warm_start", "grpo", "clip_cov", "kl_cov", "entrocraft", "entrocraft_keep", "entrocraft_raw", "entrocraft_zero", "raft")
KS = tuple(range(1, 17))

def attach(arm, tr, H0, a, seed):
    "The arm's hooks; returns the objects whose logs the row keeps."
    if arm == "entrocraft": EntrocraftReleased(**paper_band(H0), ema=a.ema).attach(tr); return {}
    if arm == "entrocraft_keep": Entrocraft(**paper_band(H0), ema=a.ema, reject=True).attach(tr); return {}
    if arm == "entrocraft_raw": EntrocraftReleased(**paper_band(H0), ema=0.0).attach(tr); return {}
    if arm == "entrocraft_zero": Entrocraft(**paper_band(H0), ema=a.ema, reject=False).attach(tr); return {}
    if arm == "raft": EntrocraftReleased(low=(0.0, 0.0), high=(0.0, 0.0)).attach(tr); return {}   # entropy > 0 = the top: always RAFT++
    EntropyMeter().attach(tr)
    if arm == "clip_cov": c = ClipCov(ratio=a.cov_ratio, seed=seed); c.attach(tr); return dict(clip=c)
    if arm == "kl_cov": k = KLCov(ratio=a.cov_ratio, coef=1.0); k.attach(tr); return dict(kl=k)
    return {}

def run(arm, seed, over, a, H0):
    cfg = recipe_config("testbed", seed=seed, progress=False, checkpoint_every=0, **over)
    tr = Trainer.setup(cfg)
    t0 = time.process_time()
    rec = dict(arm=arm, seed=seed, overrides=over, ema=a.ema, cov_ratio=a.cov_ratio) | (dict(final_n=a.final_n) if a.final_n > 16 else {})
    if arm == "warm_start":
        H0 = float(np.mean([rollout_entropy(tr.policy, tr.rollout(), cfg.temperature) for _ in range(4)]))   # 4 rollouts: one is noisy
        rec["H0"] = H0
    else:
        logs = attach(arm, tr, H0, a, seed)
        if a.probe and arm == "grpo": logs["probe"] = CovarianceProbe(); logs["probe"].attach(tr)   # the covariance law on the LM
        hist = []
        for _ in range(cfg.steps):
            m = tr.train_step()
            hist.append({k: (round(v, 5) if isinstance(v, float) else v) for k, v in m.items() if k in (
                "step", "rollout_entropy", "entropy_ema", "band_low", "band_high", "mode", "kept_frac", "accuracy", "eval_accuracy", "zero_std_frac")})
            if a.passk_every and tr.step % a.passk_every == 0 and tr.step < cfg.steps:   # pass@k along the run (its own sampler seed)
                hist[-1]["passk"] = pass_at_k_curve(tr.policy, tr.tok, tr.task, (1, 4, 16), n=16, limit=cfg.eval_limit,
                                                    temperature=cfg.temperature, seed=seed)
        rec |= dict(H0=H0, history=hist, clip_log=logs["clip"].log if "clip" in logs else None, kl_log=logs["kl"].log if "kl" in logs else None)
        if "probe" in logs: rec["probe_log"] = [{k: round(v, 7) for k, v in row.items()} for row in logs["probe"].log]
    hits = tr.evaluate(per_prompt=True)
    rec |= dict(hits="".join("1" if h else "0" for h in hits.tolist()), greedy=float(hits.float().mean()),
                passk=pass_at_k_curve(tr.policy, tr.tok, tr.task, KS, n=16, limit=cfg.eval_limit, temperature=cfg.temperature, seed=seed),
                cpu_seconds=round(time.process_time() - t0, 1))
    if a.final_n > 16:   # pass@k at larger k, from more samples (its own draw; rec["passk"] stays the 16-sample one)
        ks = tuple(k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= a.final_n)
        rec[f"passk{a.final_n}"] = pass_at_k_curve(tr.policy, tr.tok, tr.task, ks, n=a.final_n, limit=cfg.eval_limit,
                                                   temperature=cfg.temperature, seed=seed)
        rec["cpu_seconds"] = round(time.process_time() - t0, 1)
    return rec

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=list(ARMS))
    ap.add_argument("--set", default="", help="TrainConfig overrides of recipe 'testbed', e.g. steps=300,minibatch_size=256")
    ap.add_argument("--ema", type=float, default=0.8)
    ap.add_argument("--cov_ratio", type=float, default=1e-2)
    ap.add_argument("--out", default="experiments/11_entropy/sweep.jsonl")
    ap.add_argument("--probe", action="store_true", help="attach CovarianceProbe to the grpo arm (measured vs first-order entropy change per step)")
    ap.add_argument("--final_n", type=int, default=16, help="above 16: also pass@k from this many samples per prompt at the end")
    ap.add_argument("--passk_every", type=int, default=0, help="also log pass@1/4/16 every this many steps (0: only at the end)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    over = parse_overrides(a.set)
    key = lambda arm, seed: json.dumps([arm, run_key(seed, over), a.ema, a.cov_ratio] + ([a.final_n] if a.final_n > 16 else []))
    out = Path(a.out)
    rows = [json.loads(l) for l in out.read_text().splitlines() if l.strip()] if out.is_file() else []
    done = {key(r["arm"], r["seed"]): r for r in rows if r["overrides"] == over and r.get("final_n", 16) == a.final_n}
    arms = ["warm_start"] + [x for x in a.arms if x != "warm_start"]
    for arm in arms:                                   # arm-major: every seed of an arm before the next arm (warm starts first)
        for seed in a.seeds:
            if key(arm, seed) in done: continue
            ws = done.get(key("warm_start", seed))
            t0 = time.time()
            rec = run(arm, seed, over, a, ws["H0"] if ws else None)
            rec["seconds"] = round(time.time() - t0, 1)
            done[key(arm, seed)] = rec
            with open(out, "a") as f: f.write(json.dumps(rec) + "\n")
            print(f"{arm:16s} seed {seed}: greedy {rec['greedy']:.3f} pass@1 {rec['passk'][1]:.3f} pass@16 {rec['passk'][16]:.3f} "
                  f"H_end {rec['history'][-1]['rollout_entropy'] if 'history' in rec else rec['H0']:.3f} ({rec['seconds']} s)", flush=True)

if __name__ == "__main__": main()
