"""Chapter 15 at reader size: GRPO vs GRPO+PIPO on the testbed's arithmetic with noisy rewards; one JSON line per finished
(flip, arm, seed), resumable.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/15_policy_improvement/sweep.py                     # every job, in priority order
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/15_policy_improvement/sweep.py --flips 0.2 --seeds 0 1

Every run starts from the seed's shipped arith2 warm start with the testbed recipe (64 prompts x 8 samples per step, lr 3e-4), each
binary reward flipped with probability `flip` (rlref.methods.pipo.FlipRewards, its own generator seeded by the run's seed). PIPO arms:
K = 8, min_steps = 8, paper anchor, loss_scale_neg 0 or 0.1, 100 steps. Two control arms (flip 0.2) repeat the
loss_scale_neg 0.1 arm with PPO's two-sided clip in the verification loss (clip="ppo"), and with C = 0 (zero_coef: the extra AdamW
step moves the weights by momentum and weight decay only); a third runs plain GRPO at lr 6e-4 (twice the recipe's).
Last, GRPO and PIPO (loss_scale_neg 0.1) both at lr 1.5e-4 (flip 0.2, seeds 0-4): the closed loop at half the step size. The GRPO arm runs 140 steps, so that it can be read at
PIPO's CPU time as well as at its step. After every step (and before the first) the policy is scored greedily on the testbed's 500
held-out rows (test[:500]): the per-step change of that accuracy is the "true improvement" prediction (a) correlates xi_t with.
`train_cpu` is the process CPU time of each train_step (rollout, rewards, both updates), without the evaluation. Sized to the CPU
this session had (2 shared cores, mostly taken by higher-priority sweeps): a first plan of 150/200 steps scored on 1,000 rows every
step was stopped before any run finished.
The chapter (nbs/15_policy_improvement.ipynb) loads experiments/15_policy_improvement/sweep.jsonl.

`--design stable` (issue 42) is the rerun in the paper's structure, logged to sweep_stable.jsonl: every optimizer step sees a
minibatch of 128 of the rollout's 512 rows (4 base updates per rollout, so PIPO's verification step is 1 of 5), a k3 KL to the
warm start in the loss (beta 0.001, the paper's), 200 steps, flip 0.2. Arms are named `<arm>@<lr>`: first an lr probe
(GRPO at 2.5e-5, 5e-5 and 1e-4, seeds 0-1) to find an lr L at which GRPO at 2L does not collapse, then at that L, 5 seeds:
GRPO, PIPO (loss_scale_neg 0.1 and 0), the three controls (PPO's clip, C = 0, GRPO at 2L), PIPO with the released anchor,
and PPO with and without PIPO's gate phi(xi). L is chosen from the probe and passed as --lr; the arms it runs carry it.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/15_policy_improvement/sweep.py --design stable --probe
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/15_policy_improvement/sweep.py --design stable --lr 5e-5
"""
import argparse, json, time
from pathlib import Path
import torch

LOG = Path(__file__).resolve().parent / "sweep.jsonl"
PPS, G, EVAL_N = 64, 8, 500
ARMS = {"grpo": (None, 140), "pipo-lsn0.1": (dict(loss_scale_neg=0.1), 100), "pipo-lsn0": (dict(loss_scale_neg=0.0), 100),
        # controls for the collapse of the PIPO arms: the same steps with PPO's two-sided clip, and the same steps with C = 0
        "ctrl-ppoclip": (dict(loss_scale_neg=0.1, clip="ppo"), 100), "ctrl-zerocoef": (dict(loss_scale_neg=0.1, zero_coef=True), 100),
        # and plain GRPO at twice the learning rate: is a second step along the same direction enough to collapse?
        "ctrl-grpo-lr6e-4": (None, 100),
        # half the lr for both, since PIPO takes two optimizer steps per batch: the closed loop at a step size it does not break
        "grpo-lr1.5e-4": (None, 100), "pipo-lsn0.1-lr1.5e-4": (dict(loss_scale_neg=0.1), 100)}
ARM_CFG = {"ctrl-grpo-lr6e-4": dict(lr=6e-4), "grpo-lr1.5e-4": dict(lr=1.5e-4), "pipo-lsn0.1-lr1.5e-4": dict(lr=1.5e-4)}
MAIN, CONTROLS = ("grpo", "pipo-lsn0.1", "pipo-lsn0"), ("ctrl-ppoclip", "ctrl-zerocoef", "ctrl-grpo-lr6e-4")
HALF_LR = ("grpo-lr1.5e-4", "pipo-lsn0.1-lr1.5e-4")
PIPO = dict(K=8, min_steps=8, anchor="paper")
KEEP = ("pipo_xi", "pipo_mu_his", "pipo_sigma_his", "pipo_updated", "pipo_scale", "pipo_grad_norm", "pipo_clip_frac", "pipo_approx_kl",
        "pipo_seconds", "grad_norm")
# flip 0.2: the main arms on seeds 0-4, then the controls on seeds 0-2 (then 3-4); then flip 0 (main arms, seeds 0-2, then 3-4)
ORDER = ([(0.2, a, s) for s in range(5) for a in MAIN] + [(0.2, a, s) for seeds in ((0, 1, 2), (3, 4)) for s in seeds for a in CONTROLS]
         + [(0.0, a, s) for seeds in ((0, 1, 2), (3, 4)) for s in seeds for a in MAIN] + [(0.2, a, s) for s in range(5) for a in HALF_LR])

# the stable design: the paper's structure (4 minibatch updates per rollout, k3 KL 0.001), 200 steps, arms `<arm>@<lr>`
LOG_STABLE = Path(__file__).resolve().parent / "sweep_stable.jsonl"
STABLE_BASE, STABLE_STEPS, PROBE_LRS = dict(minibatch_size=128, beta=0.001), 200, (2.5e-5, 5e-5, 1e-4)
STABLE_ARMS = {"grpo": (None, {}), "pipo-lsn0.1": (dict(loss_scale_neg=0.1), {}), "pipo-lsn0": (dict(loss_scale_neg=0.0), {}),
               "ctrl-ppoclip": (dict(loss_scale_neg=0.1, clip="ppo"), {}),
               "ctrl-zerocoef": (dict(loss_scale_neg=0.1, zero_coef=True), {}),
               "pipo-released": (dict(loss_scale_neg=0.1, anchor="released"), {}),
               "ppo": (None, dict(algorithm="ppo")), "ppo-gate": (dict(variant="ppo_gate"), dict(algorithm="ppo"))}

def stable_order(lr: float | None, probe: bool) -> list[tuple]:
    "The stable design's jobs (flip, arm@lr, seed): the probe, or at lr L the headline arms on 5 seeds first, then the rest."
    if probe: return [(0.2, f"grpo@{x:g}", s) for s in (0, 1) for x in PROBE_LRS]
    if lr is None: raise SystemExit("--design stable needs --lr L (chosen from the probe) or --probe")
    head = ("grpo", "pipo-lsn0.1", f"grpo@{2 * lr:g}")
    rest = ("pipo-lsn0", "ctrl-ppoclip", "ctrl-zerocoef", "pipo-released", "ppo", "ppo-gate")
    at = lambda a: a if "@" in a else f"{a}@{lr:g}"
    return [(0.2, at(a), s) for group in (head, rest) for s in range(5) for a in group]

def arm_settings(arm: str) -> tuple:
    "(PIPO kwargs or None, TrainConfig overrides, steps) of a v1 arm or a stable `<arm>@<lr>` arm."
    if "@" not in arm: return ARMS[arm][0], ARM_CFG.get(arm, {}), ARMS[arm][1]
    name, lr = arm.split("@")
    pkw, over = STABLE_ARMS[name]
    return pkw, STABLE_BASE | over | dict(lr=float(lr)), STABLE_STEPS

def run(flip: float, arm: str, seed: int, steps: int | None = None) -> dict:
    from rlref.trainer import Trainer
    from rlref.train.config import recipe_config
    from rlref.methods.pipo import PIPO as Plugin, PIPOConfig, FlipRewards
    pkw, over, n = arm_settings(arm); n = steps or n
    cfg = recipe_config("testbed", seed=seed, steps=n, eval_every=0, kl_every=0, eval_limit=EVAL_N, progress=False, checkpoint_every=0,
                        **over)
    tr = Trainer.setup(cfg)
    fl = FlipRewards(flip, seed=seed); tr.add_hook("after_rewards", fl)
    pp = Plugin(tr, PIPOConfig(**(PIPO | pkw))) if pkw is not None else None
    hits = tr.evaluate(per_prompt=True)
    rec = dict(flip=flip, arm=arm, seed=seed, steps=n, pipo=None if pkw is None else PIPO | pkw, eval_n=len(hits), config=over,
               acc=[round(float(hits.float().mean()), 4)], acc500=[round(float(hits[:500].float().mean()), 4)], warm_hits500="".join("01"[int(x)] for x in hits[:500]),
               mu=[], train_acc=[], train_cpu=[], **{k: [] for k in KEEP})
    t0, e_cpu = time.time(), 0.0
    for step in range(1, n + 1):
        c0 = time.process_time(); m = tr.train_step(); rec["train_cpu"].append(round(time.process_time() - c0, 4))
        rec["mu"].append(round(m["reward_mean"], 5)); rec["train_acc"].append(round(m["accuracy"], 5))
        for k in KEEP: rec[k].append(None if m.get(k) is None else round(float(m[k]), 5))
        c0 = time.process_time(); hits = tr.evaluate(per_prompt=True); e_cpu += time.process_time() - c0
        rec["acc"].append(round(float(hits.float().mean()), 4)); rec["acc500"].append(round(float(hits[:500].float().mean()), 4))
        if step == 100: rec["hits500_100"] = "".join("01"[int(x)] for x in hits[:500])
    rec |= dict(final_hits500="".join("01"[int(x)] for x in hits[:500]), flipped=fl.flipped, rewards_seen=fl.seen,
                eval_cpu=round(e_cpu, 1), wall_seconds=round(time.time() - t0, 1), torch=torch.__version__)
    return rec

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--flips", type=float, nargs="+", default=None); ap.add_argument("--arms", nargs="+", default=None)
    ap.add_argument("--seeds", type=int, nargs="+", default=None); ap.add_argument("--log", default=str(LOG))
    ap.add_argument("--steps", type=int, default=None, help="a smoke test only (the chapter reads 100/140-step runs)")
    ap.add_argument("--design", choices=("v1", "stable"), default="v1")
    ap.add_argument("--lr", type=float, default=None, help="the stable design's lr L (from the probe)")
    ap.add_argument("--probe", action="store_true", help="the stable design's lr probe only")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.design == "stable":
        ORDER = stable_order(a.lr, a.probe)
        if a.log == str(LOG): a.log = str(LOG_STABLE)
    log = Path(a.log)
    done = {(r["flip"], r["arm"], r["seed"]) for r in map(json.loads, log.read_text().splitlines())} if log.exists() else set()
    jobs = [j for j in ORDER if j not in done and (a.flips is None or j[0] in a.flips) and (a.arms is None or j[1] in a.arms)
            and (a.seeds is None or j[2] in a.seeds)]
    print(f"{len(jobs)} runs to do", flush=True)
    for flip, arm, seed in jobs:
        t0 = time.time()
        rec = run(flip, arm, seed, a.steps)
        with open(log, "a") as f: f.write(json.dumps(rec) + "\n")
        print(flip, arm, seed, rec["acc"][0], "->", rec["acc"][-1], f"train cpu {sum(rec['train_cpu']):.0f}s eval cpu {rec['eval_cpu']}s wall {time.time() - t0:.0f}s", flush=True)
