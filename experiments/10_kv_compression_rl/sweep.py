"""Chapter 10 at reader size on the testbed: every KV-compression arm from the seed's shipped arith2 warm start.

Resumable: appends one JSON line per finished (arm, budget, seed) to experiments/10_kv_compression_rl/sweep.jsonl and skips those already there.

    OMP_NUM_THREADS=1 nice python experiments/10_kv_compression_rl/sweep.py --arms dense naive tis --budgets 7 --seeds 0 1 2

Per run: `recipe_config("testbed", seed=s)` with RL below (GRPO, 64 prompts x 8 samples, temperature 0.7), the chapter's
`SparseRolloutArm(arm, make_kv_policy(POLICY, budget, **POLICY_KW))` attached (arm `shadow_lam0`: the shadow arm with λ = 0), and the dense held-out curve every 20 steps on
the testbed's 500 held-out prompts. Recorded: the curve, per-prompt hits (dense and compressed greedy evaluation) of the warm
start and of the final model (for McNemar between arms on the same prompts), the per-step training reward, xi's KL/ESS,
rejected fraction, clip fraction, first-minibatch |log ratio|, measured KV ratio, the fraction of tokens the IS correction masked
(is_frac_masked; runs before the MIS denominator arms have no such key), and CPU seconds.
"""
import argparse, json, os, time
from pathlib import Path

LOG = Path(__file__).resolve().parent / "sweep.jsonl"
POLICY, POLICY_KW = "snapkv", dict(window=2)     # SnapKV with a 2-token observation window (the testbed's prompts are 7 tokens)
EVAL_BUDGETS = (7, 6)                             # compressed evaluation budgets (tokens)
RL = dict(lr=2e-4, steps=100, eval_every=20, warmup_steps=10)
STEP_KEYS = ("reward_mean", "xi_kl", "xi_ess", "kv_ratio", "rejected_frac", "clip_frac", "first_log_ratio_max", "distill_loss", "entropy", "is_frac_masked")

def run(arm: str, budget, seed: int) -> dict:
    import torch; torch.set_num_threads(1)
    from rlref.core import wilson_interval
    from rlref.trainer import Trainer
    from rlref.train.config import recipe_config
    from rlref.kvcache import make_kv_policy, compressed_exact_match
    from rlref.methods.sparse_rollouts import SparseRolloutArm, arm_config
    base, lam = (arm, 0.1) if arm != "shadow_lam0" else ("shadow", 0.0)   # shadow_lam0: SMD's Track 1 alone (no distillation term)
    cfg = recipe_config("testbed", seed=seed, progress=False, checkpoint_every=0, **(RL | arm_config(base)))
    tr = Trainer.setup(cfg)
    SparseRolloutArm(base, None if arm == "dense" else make_kv_policy(POLICY, budget, **POLICY_KW), lam=lam).attach(tr)
    test = tr.task.test.select(range(cfg.eval_limit))
    def both():   # dense hits, and hits with the compressed cache at every budget of the sweep (the dense arm is scored at each)
        dense = tr.evaluate(per_prompt=True).int().tolist()
        comp = {str(b): [int(h) for h in compressed_exact_match(tr.policy, tr.tok, test, tr.task.reward_fn, make_kv_policy(POLICY, b, **POLICY_KW),
                                                                max_new_tokens=tr.max_new_tokens, per_prompt=True)] for b in EVAL_BUDGETS}
        return dense, comp
    warm_dense, warm_comp = both()
    c0 = time.process_time(); tr.fit(); cpu = time.process_time() - c0
    dense, comp = both()
    n = len(dense)
    curve = [(0, sum(warm_dense) / n)] + [(h["step"], h["eval_accuracy"]) for h in tr.history if h.get("eval_accuracy") is not None]
    steps = {k: [h.get(k) for h in tr.history] for k in STEP_KEYS}
    return dict(arm=arm, budget=budget, seed=seed, policy=POLICY, policy_kw=POLICY_KW, rl=RL, n=n, curve=curve,
                warm=sum(warm_dense) / n, warm_compressed={b: sum(h) / n for b, h in warm_comp.items()}, final=sum(dense) / n,
                final_compressed={b: sum(h) / n for b, h in comp.items()},
                final_ci=wilson_interval(sum(dense), n), hits=dense, hits_compressed=comp, warm_hits=warm_dense, warm_hits_compressed=warm_comp,
                steps=steps, cpu_seconds=round(cpu, 1))

def done() -> set:
    if not LOG.is_file(): return set()
    out = set()
    for line in LOG.read_text().splitlines():
        try: r = json.loads(line); out.add((r["arm"], r["budget"], r["seed"]))
        except (json.JSONDecodeError, KeyError): pass   # a torn last line
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", nargs="+", default=["dense", "naive", "naive_sp", "tis", "mis", "mis_upper", "mis_drop", "mis_upper_drop", "sparse_rl", "shadow"])
    ap.add_argument("--budgets", type=int, nargs="+", default=list(EVAL_BUDGETS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    a = ap.parse_args()
    have = done()
    for seed in a.seeds:
        for budget in a.budgets:
            for arm in a.arms:
                b = None if arm == "dense" else budget
                if (arm, b, seed) in have: continue
                t0 = time.time(); rec = run(arm, b, seed); have.add((arm, b, seed))
                with open(LOG, "a") as f: f.write(json.dumps(rec) + "\n")
                print(arm, b, seed, round(rec["warm"], 3), "->", round(rec["final"], 3), "compressed", rec["warm_compressed"], "->",
                      rec["final_compressed"], f"{time.time() - t0:.0f}s", flush=True)
