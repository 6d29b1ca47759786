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

def run(flip: float, arm: str, seed: int, steps: int | None = None) -> dict:
    from rlref.trainer import Trainer
    from rlref.train.config import recipe_config
    from rlref.methods.pipo import PIPO as Plugin, PIPOConfig, FlipRewards
    pkw, n = ARMS[arm]; n = steps or n
    cfg = recipe_config("testbed", seed=seed, steps=n, eval_every=0, kl_every=0, eval_limit=EVAL_N, progress=False, checkpoint_every=0,
                        **ARM_CFG.get(arm, {}))
    tr = Trainer.setup(cfg)
    fl = FlipRewards(flip, seed=seed); tr.add_hook("after_rewards", fl)
    pp = Plugin(tr, PIPOConfig(**PIPO, **pkw)) if pkw is not None else None
    hits = tr.evaluate(per_prompt=True)
    rec = dict(flip=flip, arm=arm, seed=seed, steps=n, pipo=None if pkw is None else PIPO | pkw, eval_n=len(hits),
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
    a = ap.parse_args()
    torch.set_num_threads(1)
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
