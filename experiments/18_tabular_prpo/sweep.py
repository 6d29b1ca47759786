"""Chapter 18 at reader size: k-shot warm starts, then GRPO on the table's order ("fixed"), GRPO on one random order per row
("shuffle"), PRPO (M = 4 orders x N = 4 samples, lambda = 1), PRPO with lambda = 0 ("prpo_lam0": the within-order term only) and
"pooled" (PRPO's 4 x 4 arrangement, plain GRPO over the row's 16), 16 rollouts per row for every arm, on scikit-learn's iris, wine
and breast-cancer tables; LogisticRegression (standardised values, and one-hot bins: the model's view) and
HistGradientBoostingClassifier (min_samples_leaf sized to the rows it is fitted on) on the same seeded stratified 70/30 splits.
One JSON line per finished (dataset, k, seed, arm); resumable (finished lines are skipped).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/18_tabular_prpo/sweep.py                      # every job, seed-major
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/18_tabular_prpo/sweep.py --datasets iris --ks 4 --seeds 0

Per (dataset, k, seed): split_table(seed), 10 quantile bins fitted on the training split, k rows per class (k_shot_rows, seed),
one SFT warm start on those k-shot rows (warm_start, seed; 60 steps) shared by the arms, then train_rl with PRPOConfig(arm,
steps=STEPS, rows_per_step=16, lr=3e-4, seed) on the WHOLE training split (--rl-rows full, the default: the rewards of rows SFT
never saw are something to learn; --rl-rows kshot is the first sweep's setting, RL on the memorised k-shot rows). Evaluation:
evaluate_orders on the test split, 8 random orders per row (seed 1234 + seed, the same orders for every arm). Arm "sft" is the
warm start itself; arm "sklearn" holds the baselines (fitted on the k-shot rows and on the whole training split).

Logs: sweep.jsonl is the first sweep (40 steps, RL on the k-shot rows, three arms); sweep_full.jsonl (the default now) is
issue 42's rerun. Cost of the default (3 tables x 4 k x 5 seeds, 5 RL arms of 60 steps): see the chapter's CPU-minute count.
The chapter (nbs/18_tabular_prpo.ipynb) reads both logs.
"""
import argparse, copy, json, time
from pathlib import Path
import numpy as np
import torch

LOG = Path(__file__).resolve().parent / "sweep_full.jsonl"
DATASETS, KS, SEEDS = ("iris", "wine", "breast_cancer"), (4, 8, 16, 32), (0, 1, 2, 3, 4)
STEPS, SFT_STEPS = 60, 60
RL_ARMS = {"fixed": dict(arm="fixed"), "shuffle": dict(arm="shuffle"), "prpo": dict(arm="prpo"),
           "prpo_lam0": dict(arm="prpo", lam=0.0), "pooled": dict(arm="pooled")}

def hgb_leaf(n_rows: int) -> int:
    "min_samples_leaf for n_rows fitting rows: the default 20, shrunk so that a split is possible (a tenth of the rows, at least 1)."
    return max(1, min(20, n_rows // 10))

def sklearn_baselines(X, B, y, tr, te, ks) -> dict:
    "Test accuracy of LogisticRegression on standardised values and on one-hot bins (the model's view) and of"
    " HistGradientBoostingClassifier (min_samples_leaf = hgb_leaf), each fitted on the k-shot rows and on the whole training split."
    from sklearn.linear_model import LogisticRegression
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler, OneHotEncoder
    out = {}
    for tag, rows in (("k", tr[ks]), ("full", tr)):
        acc = lambda m, F: float((m.fit(F[rows], y[rows]).predict(F[te]) == y[te]).mean())
        out[f"logreg_{tag}"] = acc(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X)
        out[f"logreg_bins_{tag}"] = acc(make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=2000)), B)
        out[f"hgb_{tag}"] = acc(HistGradientBoostingClassifier(min_samples_leaf=hgb_leaf(len(rows)), random_state=0), X)
        out[f"hgb_leaf_{tag}"] = hgb_leaf(len(rows))
    return out

def run_job(name: str, k: int, seed: int, arms, steps: int = STEPS, sft_steps: int = SFT_STEPS, rl_rows: str = "full"):
    "Yield one record per arm (sklearn, sft, then the RL arms) for one (dataset, k, seed)."
    from rlref.methods.prpo import (load_table, split_table, k_shot_rows, quantile_edges, bin_table, make_table_tokenizer,
                                    warm_start, evaluate_orders, train_rl, PRPOConfig)
    X, y, _ = load_table(name)
    tr, te = split_table(y, seed)
    B = bin_table(X, quantile_edges(X[tr]))
    ks = k_shot_rows(y[tr], k, seed)
    rows = tr[ks]
    tok = make_table_tokenizer()
    rl = tr if rl_rows == "full" else rows                                      # the rows RL draws its rewards from
    base = dict(dataset=name, k=k, seed=seed, n_train=len(rows), n_rl=len(rl), n_test=len(te), torch=torch.__version__)
    if "sklearn" in arms: yield base | dict(arm="sklearn", **sklearn_baselines(X, B, y, tr, te, ks))
    t0 = time.process_time()
    model = warm_start(tok, B[rows], y[rows], seed=seed, steps=sft_steps)
    sft_cpu = time.process_time() - t0
    if "sft" in arms: yield base | dict(arm="sft", sft_steps=sft_steps, cpu_s=round(sft_cpu, 1), **evaluate_orders(model, tok, B[te], y[te], seed=1234 + seed))
    for arm in [a for a in arms if a in RL_ARMS]:
        m = copy.deepcopy(model); t0 = time.process_time()
        cfg = PRPOConfig(**RL_ARMS[arm], steps=steps, rows_per_step=16, seed=seed)
        hist = train_rl(m, tok, B[rl], y[rl], cfg)
        cpu = time.process_time() - t0
        yield base | dict(arm=arm, steps=steps, sft_steps=sft_steps, cpu_s=round(cpu, 1), config=dict(rollouts=cfg.rollouts, M=cfg.M, lam=cfg.lam, lr=cfg.lr),
                          reward=[round(h["reward"], 4) for h in hist], zero_signal=[round(h["zero_signal"], 4) for h in hist],
                          zero_intra=[round(h["zero_intra"], 4) for h in hist], **evaluate_orders(m, tok, B[te], y[te], seed=1234 + seed))

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS)); ap.add_argument("--ks", type=int, nargs="+", default=list(KS))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--arms", nargs="+", default=["sklearn", "sft", *RL_ARMS])
    ap.add_argument("--rl-rows", choices=("full", "kshot"), default="full")
    ap.add_argument("--steps", type=int, default=STEPS); ap.add_argument("--log", default=str(LOG))
    ap.add_argument("--sft-steps", type=int, default=SFT_STEPS)
    a = ap.parse_args()
    torch.set_num_threads(1)
    log = Path(a.log)
    done = {(r["dataset"], r["k"], r["seed"], r["arm"]) for r in map(json.loads, log.read_text().splitlines())} if log.exists() else set()
    for seed in a.seeds:
        for name in a.datasets:
            for k in a.ks:
                arms = [x for x in a.arms if (name, k, seed, x) not in done]
                if not arms: continue
                for rec in run_job(name, k, seed, arms, steps=a.steps, sft_steps=a.sft_steps, rl_rows=a.rl_rows):
                    with log.open("a") as f: f.write(json.dumps(rec) + "\n")
                    print(rec["dataset"], rec["k"], rec["seed"], rec["arm"], {x: rec[x] for x in ("acc_random", "consistency", "cpu_s", "hgb_full") if x in rec}, flush=True)
