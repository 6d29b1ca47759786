"""Seed sweep for chapter 13's test-size checks that depend on training (EVIDENCE.md rule 7).

Each seed replaces the chapter's seed 0 everywhere a test-size run uses one (the grid warm start's TrainConfig.seed, the arms'
seed and ReplayConfig.seed), one JSON line per (check, seed):

- grid (cells 41-51): 60 SFT steps on the grid world (held-out success > 0.05), 4 on-policy steps (ESS of the newest stored batch >
  ESS of the oldest under the final policy), then the uniform / PER / FreshPER arms (mean age of replayed items in the second half:
  FreshPER < PER). Margins: sft_accuracy - 0.05, ess_newest - ess_oldest, PER age - FreshPER age (sampled ages, as the chapter
  checked first; seed 0 gave 0.094, about one standard error of two 128-draw means) and the same for the expected age under each
  buffer's sampling distribution at the last step (exact given the buffer: what the chapter checks now).
- arith (cell 54): 6 steps of FreshPER replay on arithmetic; every step after the first has |replay_approx_kl| > 1e-6.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python tools/seed_sweep_13_replay.py --checks grid arith --seeds 0 1 2 3 4
"""
import argparse, json, tempfile, time
from pathlib import Path
import numpy as np, torch
from rlref.trainer import recipe_config, Trainer
from rlref.models import save_policy
from rlref.methods.replay import Replay, ReplayConfig, sequence_ess, fit_log_ess

def grid(seed, sft_steps=60):
    work = Path(tempfile.mkdtemp())
    GRID_KW = dict(task="grid", prompts_per_step=16, samples_per_prompt=4, temperature=0.7, lr=3e-4, eval_every=0, eval_limit=100, progress=False)
    warm_tr = Trainer.setup(recipe_config("arith-grpo", sft_steps=sft_steps, sft_batch_size=64, sft_lr=3e-3, sft_target=None, steps=1, seed=seed, **GRID_KW))
    save_policy(warm_tr.policy, warm_tr.tok, work / "warm")
    STEPS = 4
    def run_arm(mode, tau=None, keep=False):
        tr = Trainer.setup(recipe_config("arith-grpo", model=str(work / "warm"), steps=STEPS, seed=seed, **GRID_KW))
        rp = Replay(tr, ReplayConfig(mode=mode, tau=tau if mode == "fresh" else None, seed=seed, min_size=64, batch_size=64, beta_steps=STEPS))
        stored = []
        if keep: tr.add_hook("after_advantages", lambda t, r: stored.append((t.step, r, r.sampler_logprobs.clone())))
        for _ in range(STEPS): tr.train_step()
        return dict(ages=rp.age_log, trainer=tr, stored=stored, replay=rp)
    on = run_arm("none", keep=True)
    ess_age = [(STEPS - g, sequence_ess(on["trainer"].policy, r, lp, 0.7)) for g, r, lp in on["stored"]]
    ages_e, ess = map(np.array, zip(*ess_age))
    delta, _ = fit_log_ess(ages_e, ess)
    TAU = float(np.clip(1 / delta / 2, 1.0, 10 * STEPS))
    arms = {name: run_arm(mode, tau=TAU) for name, mode in [("uniform", "uniform"), ("PER", "per"), ("FreshPER", "fresh")]}
    mean_age = lambda name, first: float(np.mean([ag.mean() for st, ag in arms[name]["ages"] if (st <= STEPS // 2) == first]))
    ages = {n: (round(mean_age(n, True), 3), round(mean_age(n, False), 3)) for n in arms}
    def expected_age(buf):   # mean age of a replayed item under the buffer's sampling distribution at the last step: exact, no draw
        p = buf.tree.leaves[:len(buf)] / buf.tree.total
        return float((p * (buf.step - buf.born[:len(buf)])).sum())
    e_age = {n: expected_age(arms[n]["replay"].buffer) for n in ("uniform", "PER", "FreshPER")}
    return dict(sft_steps=sft_steps, sft_accuracy=warm_tr.sft_accuracy, margin_sft=round(warm_tr.sft_accuracy - 0.05, 3),
                ess=[round(float(x), 4) for x in ess], ess_newest=float(ess[ages_e.argmin()]), ess_oldest=float(ess[ages_e.argmax()]),
                margin_ess=float(ess[ages_e.argmin()] - ess[ages_e.argmax()]), tau_steps=round(TAU, 2), ages=ages,
                margin_age=round(mean_age("PER", False) - mean_age("FreshPER", False), 3),
                expected_age={k: round(v, 4) for k, v in e_age.items()}, margin_expected_age=e_age["PER"] - e_age["FreshPER"],
                replay_every_step=len(arms["FreshPER"]["ages"]) == STEPS)

def arith(seed):
    ar = Trainer.setup(recipe_config("arith-grpo", steps=6, sft_steps=40, sft_lr=3e-3, sft_target=None, prompts_per_step=8, samples_per_prompt=4,
                                     eval_every=0, lr=1e-3, temperature=0.7, progress=False, format_weight=0.5, task_kwargs=dict(n_train=300, n_test=50), seed=seed))
    Replay(ar, ReplayConfig(mode="fresh", tau=2.0, batch_size=32, min_size=32, updates=2, seed=seed))
    ams = [ar.train_step() for _ in range(6)]
    kls = [abs(m["replay_approx_kl"]) for m in ams[1:]]
    return dict(replay_every_step=all("replay_loss" in m for m in ams), min_abs_kl=min(kls), margin=min(kls) - 1e-6)

CHECKS = dict(grid=grid, arith=arith)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--checks", nargs="+", default=list(CHECKS)); ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", default="tools/seed_sweep_13_replay.jsonl")
    ap.add_argument("--sft-steps", type=int, default=60, help="grid warm-start SFT steps (the chapter's test size was 60, now 120 as at reader size)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for c in a.checks:
        for s in a.seeds:
            t0 = time.time(); rec = dict(check=c, seed=s) | (CHECKS[c](s, a.sft_steps) if c == "grid" else CHECKS[c](s)) | dict(seconds=round(time.time() - t0, 1))
            print(json.dumps(rec), flush=True)
            with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
