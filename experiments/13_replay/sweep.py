"""Chapter 13 at reader size: replay arms on the testbed's arithmetic, one JSON line per finished (arm, seed) (resumable).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/13_replay/sweep.py                # the 200-step sweep, in priority order
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/13_replay/sweep.py --shard 0 2    # ... split over two processes
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/13_replay/sweep.py --shard 1 2
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/13_replay/sweep.py --steps 100    # the earlier 100-step sweep

The chapter reads the 200-step sweep (experiments/13_replay/sweep_200.jsonl, ORDER_200: the headline arms on seeds 0-4, the same
arms at lr 1e-4, the two-pass control, then the tau sweep {1, 4, 8} at lr 1e-4) and, for comparison, the earlier 100-step sweep
(experiments/13_replay/sweep.jsonl: headline arms, controls and the tau sweep at lr 3e-4 on seeds 0-4).

Every arm starts from the seed's shipped arith2 warm start (rlref.warm_start.warm_start_dir) with the testbed recipe (64 prompts x 8
samples per step = 512 fresh episodes, lr 3e-4), 200 (or 100) steps, held-out exact match on 500 test prompts every 25 steps. The replay arms
add K = 2 replay updates of 128 stored trajectories per step from a FIFO buffer of 4,096 (8 steps of fresh batches; evicting from
step 9), advantages = the stored GRPO group advantages (the ones the fresh update used), priority |A| + eps, alpha 0.6, beta 0.4 -> 1
over the run (beta_steps = the run's steps). Equal generated episodes in every arm; gradient rows per step: 512 on-policy, 768 replay, 1,024 in the on-policy-2ep
control (two passes over each fresh batch: more than replay gets). experiments/13_replay/sweep_pps32.jsonl is a first try at 32 prompts
x 200 steps (seed 0's on-policy arm: 0.498 -> 0.456, no gain), abandoned for the testbed's own batch. The on-policy arm also measures the importance-weight ESS of its last 12 stored batches
under the final policy (ages 1-12 in updates). `grid-onpolicy` is the grid world's on-policy arm (120-step SFT warm start, 200 steps).
The chapter (nbs/13_replay.ipynb) loads both logs.
"""
import argparse, json, tempfile, time
from pathlib import Path
import numpy as np, torch

LOG = Path(__file__).resolve().parent / "sweep.jsonl"
STEPS, PPS, G = 100, 64, 8
REPLAY = dict(capacity=4096, batch_size=128, updates=2, min_size=256, advantage="stored", alpha=0.6, beta0=0.4, beta_steps=STEPS,
              is_normalize="buffer")   # the runs before the batch normaliser; the -bw arms divide by the batch's largest weight
ARMS = {"on-policy": (None, {}), "on-policy-2ep": (None, dict(num_iterations=2)), "uniform": (dict(mode="uniform"), {}),
        "PER": (dict(mode="per", tau=None), {})} | {f"fresh-tau{t}": (dict(mode="fresh", tau=float(t)), {}) for t in (1, 2, 4, 8)}
HEAD = ("on-policy", "fresh-tau2", "PER", "uniform")            # the headline arms, each on seeds 0-2, first
SWEEP = ("on-policy-2ep", "fresh-tau2-lr1e-4", "fresh-tau1", "fresh-tau8", "fresh-tau4")  # controls for the extra optimizer steps, then the tau sweep
ARMS["fresh-tau2-lr1e-4"] = (dict(mode="fresh", tau=2.0), dict(lr=1e-4))   # 3 optimizer steps per RL step at a third of the lr
ARMS["on-policy-lr1e-4"] = (None, dict(lr=1e-4))                        # the on-policy arm at that lr
for name, (rkw_, _) in [("PER", ARMS["PER"]), ("uniform", ARMS["uniform"])] + [(f"fresh-tau{t}", ARMS[f"fresh-tau{t}"]) for t in (1, 4, 8)]:
    ARMS[f"{name}-lr1e-4"] = (rkw_, dict(lr=1e-4))                   # the replay arms at the lr where their extra steps do not destabilise
for name in ("PER", "fresh-tau2"):                                     # IS weights / the batch's largest (is_normalize="batch")
    ARMS[f"{name}-bw-lr1e-4"] = (ARMS[name][0] | dict(is_normalize="batch"), dict(lr=1e-4))   # at the lr where P1 is decided
BW = ("PER-bw-lr1e-4", "fresh-tau2-bw-lr1e-4")
ARMS["on-policy-2ep-lr1e-4"] = (None, dict(num_iterations=2, lr=1e-4))    # the two-pass control at the lr of uniform replay's claim
ARMS["on-policy-lr1e-4-ess"] = (None, dict(lr=1e-4))    # on-policy-lr1e-4 again, with the ESS probe: delta at lr 1e-4
ESS_ARMS = ("on-policy", "on-policy-lr1e-4-ess")       # arms that keep their last 12 fresh batches for the ESS fit
CONTROLS, TAU_SWEEP = SWEEP[:2] + ("on-policy-lr1e-4",), SWEEP[2:]
ORDER = ([(a, s) for a in HEAD for s in (0, 1, 2)] + [(a, s) for a in CONTROLS for s in (0, 1, 2)] + [(a, 0) for a in TAU_SWEEP]
         + [(a, s) for s in (1, 2) for a in TAU_SWEEP] + [("grid-onpolicy", 0)] + [(a, s) for s in (3, 4) for a in HEAD + SWEEP]
         + [("grid-onpolicy", 1), ("grid-onpolicy", 2)])
FIVE = (0, 1, 2, 3, 4)
LR_FAMILY = ("on-policy-lr1e-4", "fresh-tau2-lr1e-4", "PER-lr1e-4", "uniform-lr1e-4")
ORDER_200 = ([(a, s) for a in HEAD for s in FIVE] + [(a, s) for a in LR_FAMILY for s in FIVE] + [("on-policy-2ep", s) for s in FIVE]
             + [(f"fresh-tau{t}-lr1e-4", s) for t in (1, 4, 8) for s in FIVE]
             + [(a, s) for s in FIVE for a in BW] + [("on-policy-2ep-lr1e-4", s) for s in FIVE]
             + [("on-policy-lr1e-4-ess", s) for s in FIVE])   # the 200-step sweep the chapter reads; the -bw arms last
LOG_200 = LOG.with_name("sweep_200.jsonl")

def testbed_arm(arm: str, seed: int) -> dict:
    from rlref.trainer import Trainer
    from rlref.train.config import recipe_config
    from rlref.methods.replay import Replay, ReplayConfig, sequence_ess
    rkw, over = ARMS[arm]
    cfg = recipe_config("testbed", seed=seed, steps=STEPS, prompts_per_step=PPS, samples_per_prompt=G, eval_every=25, progress=False,
                        checkpoint_every=0, **over)
    tr = Trainer.setup(cfg)
    rp = Replay(tr, ReplayConfig(seed=seed, **(REPLAY | rkw))) if rkw is not None else None
    stored = []                                          # the on-policy arm's last 12 fresh batches, for the ESS against age
    def keep(t, r):
        stored.append((t.step, r, r.sampler_logprobs.clone()))
        if len(stored) > 12: stored.pop(0)
    if arm in ESS_ARMS: tr.add_hook("after_advantages", keep)
    before = tr.evaluate(per_prompt=True)
    t0, c0 = time.time(), time.process_time()
    hist = [tr.train_step() for _ in range(STEPS)]
    wall, cpu = time.time() - t0, time.process_time() - c0
    after = tr.evaluate(per_prompt=True)
    out = dict(arm=arm, seed=seed, steps=STEPS, fresh_rows=PPS * G, replay=None if rkw is None else REPLAY | rkw, overrides=over,
               curve=[(0, float(before.float().mean()))] + [(h["step"], h["eval_accuracy"]) for h in hist if h.get("eval_accuracy") is not None],
               warm_hits="".join(str(int(x)) for x in before.tolist()), final_hits="".join(str(int(x)) for x in after.tolist()),
               reward=[round(h["reward_mean"], 4) for h in hist], tokens=int(sum(h["tokens"] for h in hist)),
               gradient_rows=STEPS * PPS * G * cfg.num_iterations + (0 if rp is None else STEPS * REPLAY["updates"] * REPLAY["batch_size"]),
               wall_seconds=round(wall, 1), cpu_seconds=round(cpu, 1))
    if rp is not None:
        out |= dict(replay_age_mean=[round(h.get("replay_age_mean", float("nan")), 3) for h in hist],
                    replay_approx_kl=[round(h.get("replay_approx_kl", float("nan")), 5) for h in hist],
                    replay_clip_frac=[round(h.get("replay_clip_frac", float("nan")), 4) for h in hist],
                    replay_is_weight_mean=[float(f'{h.get("replay_is_weight_mean", float("nan")):.4g}') for h in hist],
                    replay_skipped=int(sum(h.get("replay_skipped", 0) for h in hist)),
                    age_counts=np.bincount(np.concatenate([a for _, a in rp.age_log]), minlength=9).tolist(),
                    age_counts_second_half=np.bincount(np.concatenate([a for s, a in rp.age_log if s >= STEPS // 2]), minlength=9).tolist())
    if stored:
        out["ess"] = [(STEPS - g, sequence_ess(tr.policy, r, lp, cfg.temperature)) for g, r, lp in stored]
    return out

def grid_onpolicy(seed: int) -> dict:
    from rlref.trainer import Trainer
    from rlref.train.config import recipe_config
    from rlref.models import save_policy
    from rlref.methods.replay import register_grid_task
    register_grid_task()
    work = Path(tempfile.mkdtemp())
    kw = dict(task="grid", prompts_per_step=16, samples_per_prompt=4, temperature=0.7, lr=3e-4, eval_every=50, eval_limit=300, progress=False)
    warm = Trainer.setup(recipe_config("arith-grpo", sft_steps=120, sft_batch_size=64, sft_lr=3e-3, sft_target=None, steps=1, seed=seed, **kw))
    save_policy(warm.policy, warm.tok, work / "warm")
    tr = Trainer.setup(recipe_config("arith-grpo", model=str(work / "warm"), steps=STEPS, seed=seed, **kw))
    before = tr.evaluate(per_prompt=True); t0 = time.time()
    hist = [tr.train_step() for _ in range(STEPS)]
    after = tr.evaluate(per_prompt=True)
    return dict(arm="grid-onpolicy", seed=seed, steps=STEPS, curve=[(0, float(before.float().mean()))] + [(h["step"], h["eval_accuracy"]) for h in hist if h.get("eval_accuracy") is not None],
                warm_hits="".join(str(int(x)) for x in before.tolist()), final_hits="".join(str(int(x)) for x in after.tolist()),
                reward=[round(h["reward_mean"], 4) for h in hist], wall_seconds=round(time.time() - t0, 1))

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", nargs="+", default=None); ap.add_argument("--seeds", type=int, nargs="+", default=None)
    ap.add_argument("--log", default=None, help="default: sweep_200.jsonl for --steps 200, sweep.jsonl otherwise")
    ap.add_argument("--steps", type=int, default=200, help="200: the sweep the chapter reads (ORDER_200); 100: the earlier 100-step sweep (ORDER)")
    ap.add_argument("--shard", type=int, nargs=2, default=None, metavar=("I", "N"), help="run only jobs i, i+N, ... (two processes: 0 2 and 1 2)")
    a = ap.parse_args()
    STEPS = a.steps; REPLAY["beta_steps"] = STEPS
    torch.set_num_threads(1)
    log = Path(a.log or (LOG_200 if STEPS == 200 else LOG))
    ORDER = ORDER_200 if STEPS == 200 else ORDER
    done = {(r["arm"], r["seed"]) for r in map(json.loads, log.read_text().splitlines())} if log.exists() else set()
    jobs = [j for j in ORDER if j not in done and (a.arms is None or j[0] in a.arms) and (a.seeds is None or j[1] in a.seeds)]
    if a.shard: jobs = [j for i, j in enumerate(ORDER) if i % a.shard[1] == a.shard[0] and j in jobs]
    print(f"{len(jobs)} runs to do", flush=True)
    for arm, seed in jobs:
        t0 = time.time()
        rec = grid_onpolicy(seed) if arm == "grid-onpolicy" else testbed_arm(arm, seed)
        with open(log, "a") as f: f.write(json.dumps(rec) + "\n")
        print(arm, seed, [round(c[1], 3) for c in rec["curve"]], f"{time.time() - t0:.0f}s", flush=True)
