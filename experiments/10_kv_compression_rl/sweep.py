"""Chapter 10 at reader size: every KV-compression arm from the seed's shipped warm start, on one of two variants.

- `--variant testbed` (the default): the testbed's 7-token sums (arith2 warm start), budgets in tokens (7, 6), log sweep.jsonl.
- `--variant ctx`: the long-context variant, the same sums after 0-24 random letters and '|' (32-token prompts, warm start
  arith2ctx), budgets as fractions of the context (0.25, 0.5), log sweep_ctx.jsonl. Its arm `premise` trains nothing: the
  warm start's held-out accuracy dense and with each compressor (sink, h2o, snapkv) at budgets 12.5%-75%, and the KL of
  xi of SnapKV's sampled tokens at each budget (128 prompts x 4 samples), what the papers' "nearly lossless" premise reads.
- `--variant long`: the same with 32-48 letters before every sum (warm start arith2long), so that a 25% budget holds more
  tokens than the sum and the BOS; log sweep_long.jsonl.
- `--variant drop`: the 32-48 letters again, on a warm start trained with filler letters hidden at random (arith2drop,
  `filler_key_dropout`), so that it has learned to do without evicted filler keys; log sweep_drop.jsonl.

Resumable: appends one JSON line per finished (arm, budget, seed) to the variant's log and skips those already there.

    OMP_NUM_THREADS=1 nice python experiments/10_kv_compression_rl/sweep.py --arms dense naive tis --budgets 7 --seeds 0 1 2
    OMP_NUM_THREADS=1 nice python experiments/10_kv_compression_rl/sweep.py --variant ctx --arms premise dense naive --seeds 0

Per run: `recipe_config("testbed", seed=s)` with RL below (GRPO, 64 prompts x 8 samples, temperature 0.7), the chapter's
`SparseRolloutArm(arm, make_kv_policy(POLICY, budget, **POLICY_KW))` attached (arm `shadow_lam0`: the shadow arm with λ = 0; `sparse_rl_band`: Sparse-RL with the released token band [0.5, 1.5]), and the dense held-out curve every 20 steps on
the testbed's 500 held-out prompts. Recorded: the curve, per-prompt hits (dense and compressed greedy evaluation) of the warm
start and of the final model (for McNemar between arms on the same prompts), the per-step training reward, xi's KL/ESS,
rejected fraction, clip fraction, first-minibatch |log ratio|, measured KV ratio, the fraction of tokens the IS correction masked
(is_frac_masked; runs before the MIS denominator arms have no such key), and CPU seconds.
"""
import argparse, json, os, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOG = HERE / "sweep.jsonl"
POLICY, POLICY_KW = "snapkv", dict(window=2)     # SnapKV with a 2-token observation window (the testbed's prompts are 7 tokens)
EVAL_BUDGETS = (7, 6)                             # compressed evaluation budgets (tokens)
VARIANTS = dict(testbed=dict(log=LOG, warm_start=None, budgets=EVAL_BUDGETS),
                ctx=dict(log=HERE / "sweep_ctx.jsonl", warm_start="arith2ctx", budgets=(0.25, 0.5)),
                long=dict(log=HERE / "sweep_long.jsonl", warm_start="arith2long", budgets=(0.25, 0.5)),
                drop=dict(log=HERE / "sweep_drop.jsonl", warm_start="arith2drop", budgets=(0.25, 0.5)))
PREMISE_BUDGETS, PREMISE_POLICIES = (0.125, 0.25, 0.5, 0.75), dict(sink={}, h2o={}, snapkv=POLICY_KW)
BAND = (0.5, 1.5)                                 # Sparse-RL's released token band (arm sparse_rl_band)
RL = dict(lr=2e-4, steps=100, eval_every=20, warmup_steps=10)
STEP_KEYS = ("reward_mean", "xi_kl", "xi_ess", "kv_ratio", "rejected_frac", "masked_frac", "clip_frac", "first_log_ratio_max", "distill_loss", "entropy", "is_frac_masked")

def config(seed: int, variant: str, **overrides):
    "The run's TrainConfig: the testbed recipe, on the variant's warm start and task."
    from rlref.train.config import recipe_config
    from rlref.warm_start import WARM_STARTS
    ws = VARIANTS[variant]["warm_start"]
    on = {} if ws is None else dict(warm_start=ws, task_kwargs=WARM_STARTS[ws]["task_kwargs"])
    return recipe_config("testbed", seed=seed, progress=False, checkpoint_every=0, **(on | overrides))

def premise(seed: int, variant: str) -> dict:
    "The warm start's held-out accuracy dense and compressed (every policy and budget), and the KL of SnapKV's xi per budget."
    import torch; torch.set_num_threads(1)
    from rlref.trainer import Trainer
    from rlref.kvcache import make_kv_policy, compressed_exact_match
    from rlref.rollout import sample, completion_logprobs
    from rlref.methods.sparse_rollouts import ratio_factors, mismatch_stats
    c0 = time.process_time()
    tr = Trainer.setup(config(seed, variant, steps=1))
    test = tr.task.test.select(range(tr.cfg.eval_limit))
    acc = lambda kv: compressed_exact_match(tr.policy.eval(), tr.tok, test, tr.task.reward_fn, kv, max_new_tokens=tr.max_new_tokens)
    compressed = {name: {str(b): acc(make_kv_policy(name, b, **kw)) for b in PREMISE_BUDGETS} for name, kw in PREMISE_POLICIES.items()}
    prompts, kl = list(test["prompt"])[:128], {}
    for b in (1.0,) + PREMISE_BUDGETS:
        r = sample(tr.policy, tr.tok, prompts, n=4, max_new_tokens=tr.max_new_tokens, temperature=tr.cfg.temperature,
                   kv_policy=make_kv_policy(POLICY, b, **POLICY_KW), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad(): old, _ = completion_logprobs(tr.policy, r, tr.cfg.temperature, with_entropy=False)
        lx = ratio_factors(old, old, r.sampler_logprobs, r.completion_mask)["log_xi"]
        st = r.extras.get("stats") or {}
        kl[str(b)] = dict(mismatch_stats(lx, r.completion_mask), kv_ratio=st["kv_bytes"] / st["dense_kv_bytes"] if st else 1.0)
    return dict(arm="premise", budget=None, seed=seed, variant=variant, n=len(test), dense=acc(None), compressed=compressed,
                snapkv_xi=kl, prompt_tokens=len(tr.tok(test[0]["prompt"]).input_ids), cpu_seconds=round(time.process_time() - c0, 1))

def run(arm: str, budget, seed: int, variant: str = "testbed") -> dict:
    import torch; torch.set_num_threads(1)
    from rlref.core import wilson_interval
    from rlref.trainer import Trainer
    from rlref.kvcache import make_kv_policy, compressed_exact_match
    from rlref.methods.sparse_rollouts import SparseRolloutArm, arm_config
    base = dict(shadow_lam0="shadow", sparse_rl_band="sparse_rl").get(arm, arm)
    lam = 0.0 if arm == "shadow_lam0" else 0.1   # shadow_lam0: SMD's Track 1 alone (no distillation term)
    band = BAND if arm == "sparse_rl_band" else None
    cfg = config(seed, variant, **(RL | arm_config(base)))
    tr = Trainer.setup(cfg)
    SparseRolloutArm(base, None if arm == "dense" else make_kv_policy(POLICY, budget, **POLICY_KW), lam=lam, band=band).attach(tr)
    eval_budgets = VARIANTS[variant]["budgets"]
    test = tr.task.test.select(range(cfg.eval_limit))
    def both():   # dense hits, and hits with the compressed cache at every budget of the sweep (the dense arm is scored at each)
        dense = tr.evaluate(per_prompt=True).int().tolist()
        comp = {str(b): [int(h) for h in compressed_exact_match(tr.policy, tr.tok, test, tr.task.reward_fn, make_kv_policy(POLICY, b, **POLICY_KW),
                                                                max_new_tokens=tr.max_new_tokens, per_prompt=True)] for b in eval_budgets}
        return dense, comp
    warm_dense, warm_comp = both()
    c0 = time.process_time(); tr.fit(); cpu = time.process_time() - c0
    dense, comp = both()
    n = len(dense)
    curve = [(0, sum(warm_dense) / n)] + [(h["step"], h["eval_accuracy"]) for h in tr.history if h.get("eval_accuracy") is not None]
    steps = {k: [h.get(k) for h in tr.history] for k in STEP_KEYS}
    return dict(arm=arm, budget=budget, seed=seed, variant=variant, policy=POLICY, policy_kw=POLICY_KW, rl=RL, n=n, curve=curve,
                warm=sum(warm_dense) / n, warm_compressed={b: sum(h) / n for b, h in warm_comp.items()}, final=sum(dense) / n,
                final_compressed={b: sum(h) / n for b, h in comp.items()},
                final_ci=wilson_interval(sum(dense), n), hits=dense, hits_compressed=comp, warm_hits=warm_dense, warm_hits_compressed=warm_comp,
                steps=steps, cpu_seconds=round(cpu, 1))

def done(log) -> set:
    if not log.is_file(): return set()
    out = set()
    for line in log.read_text().splitlines():
        try: r = json.loads(line); out.add((r["arm"], r["budget"], r["seed"]))
        except (json.JSONDecodeError, KeyError): pass   # a torn last line
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", nargs="+", default=["dense", "naive", "naive_sp", "tis", "mis", "mis_upper", "mis_drop", "mis_upper_drop", "sparse_rl", "shadow"],
                    help="also: shadow_lam0, sparse_rl_band, premise (ctx: the warm start's accuracy per compressor and budget)")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="testbed")
    ap.add_argument("--budgets", type=float, nargs="+", default=None, help="tokens (testbed) or fractions (ctx); default: the variant's")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--log", default=None, help="another log file (a second process writes its own; the chapter reads both)")
    a = ap.parse_args()
    var = VARIANTS[a.variant] | ({} if a.log is None else dict(log=Path(a.log)))
    budgets = [int(b) if b >= 1 else b for b in (a.budgets or var["budgets"])]
    have = done(var["log"])
    for seed in a.seeds:
        for budget in budgets:
            for arm in a.arms:
                b = None if arm in ("dense", "premise") else budget
                if (arm, b, seed) in have: continue
                t0 = time.time()
                if arm == "premise":
                    rec = premise(seed, a.variant); have.add((arm, b, seed))
                    with open(var["log"], "a") as f: f.write(json.dumps(rec) + "\n")
                    print("premise", seed, rec["dense"], rec["compressed"], f"{time.time() - t0:.0f}s", flush=True); continue
                rec = run(arm, b, seed, a.variant); have.add((arm, b, seed))
                with open(var["log"], "a") as f: f.write(json.dumps(rec) + "\n")
                print(arm, b, seed, round(rec["warm"], 3), "->", round(rec["final"], 3), "compressed", rec["warm_compressed"], "->",
                      rec["final_compressed"], f"{time.time() - t0:.0f}s", flush=True)
