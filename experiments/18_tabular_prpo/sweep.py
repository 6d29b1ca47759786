"""Chapter 18 at reader size: k-shot warm starts, then GRPO on the table's order ("fixed"), GRPO on one random order per row
("shuffle") and PRPO (M = 4 orders x N = 4 samples, lambda = 1), 16 rollouts per row for every arm, on scikit-learn's iris, wine
and breast-cancer tables; LogisticRegression and HistGradientBoostingClassifier on the same seeded stratified 70/30 splits.
One JSON line per finished (dataset, k, seed, arm); resumable (finished lines are skipped).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/18_tabular_prpo/sweep.py                      # every job, seed-major
    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/18_tabular_prpo/sweep.py --datasets iris --ks 4 --seeds 0

Per (dataset, k, seed): split_table(seed), 10 quantile bins fitted on the training split, k rows per class (k_shot_rows, seed),
one SFT warm start (warm_start, seed; 60 steps) shared by the three arms, then train_rl with PRPOConfig(arm, steps=STEPS,
rows_per_step=16, lr=3e-4, seed). Evaluation: evaluate_orders on the test split, 8 random orders per row (seed 1234 + seed, the
same orders for every arm). Arm "sft" is the warm start itself; arm "sklearn" holds the four baselines (fitted on the k-shot
rows and on the whole training split). The chapter (nbs/18_tabular_prpo.ipynb) reads experiments/18_tabular_prpo/sweep.jsonl.
"""
import argparse, copy, json, time
from pathlib import Path
import numpy as np
import torch

LOG = Path(__file__).resolve().parent / "sweep.jsonl"
DATASETS, KS, SEEDS = ("iris", "wine", "breast_cancer"), (4, 8, 16, 32), (0, 1, 2, 3, 4)
STEPS, SFT_STEPS = 40, 60

def sklearn_baselines(X, y, tr, te, ks) -> dict:
    "LogisticRegression (standardised) and HistGradientBoostingClassifier test accuracy, fitted on the k-shot rows and on the whole training split."
    from sklearn.linear_model import LogisticRegression
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    out = {}
    for tag, rows in (("k", tr[ks]), ("full", tr)):
        lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X[rows], y[rows])
        hgb = HistGradientBoostingClassifier(random_state=0).fit(X[rows], y[rows])
        out[f"logreg_{tag}"] = float((lr.predict(X[te]) == y[te]).mean()); out[f"hgb_{tag}"] = float((hgb.predict(X[te]) == y[te]).mean())
    return out

def run_job(name: str, k: int, seed: int, arms, steps: int = STEPS, sft_steps: int = SFT_STEPS):
    "Yield one record per arm (sklearn, sft, then the RL arms) for one (dataset, k, seed)."
    from rlref.methods.prpo import (load_table, split_table, k_shot_rows, quantile_edges, bin_table, make_table_tokenizer,
                                    warm_start, evaluate_orders, train_rl, PRPOConfig)
    X, y, _ = load_table(name)
    tr, te = split_table(y, seed)
    B = bin_table(X, quantile_edges(X[tr]))
    ks = k_shot_rows(y[tr], k, seed)
    rows = tr[ks]
    tok = make_table_tokenizer()
    base = dict(dataset=name, k=k, seed=seed, n_train=len(rows), n_test=len(te), torch=torch.__version__)
    if "sklearn" in arms: yield base | dict(arm="sklearn", **sklearn_baselines(X, y, tr, te, ks))
    t0 = time.process_time()
    model = warm_start(tok, B[rows], y[rows], seed=seed, steps=sft_steps)
    sft_cpu = time.process_time() - t0
    if "sft" in arms: yield base | dict(arm="sft", sft_steps=sft_steps, cpu_s=round(sft_cpu, 1), **evaluate_orders(model, tok, B[te], y[te], seed=1234 + seed))
    for arm in [a for a in arms if a in ("fixed", "shuffle", "prpo")]:
        m = copy.deepcopy(model); t0 = time.process_time()
        cfg = PRPOConfig(arm=arm, steps=steps, rows_per_step=16, seed=seed)
        hist = train_rl(m, tok, B[rows], y[rows], cfg)
        cpu = time.process_time() - t0
        yield base | dict(arm=arm, steps=steps, sft_steps=sft_steps, cpu_s=round(cpu, 1), config=dict(rollouts=cfg.rollouts, M=cfg.M, lam=cfg.lam, lr=cfg.lr),
                          reward=[round(h["reward"], 4) for h in hist], zero_signal=[round(h["zero_signal"], 4) for h in hist],
                          zero_intra=[round(h["zero_intra"], 4) for h in hist], **evaluate_orders(m, tok, B[te], y[te], seed=1234 + seed))

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS)); ap.add_argument("--ks", type=int, nargs="+", default=list(KS))
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--arms", nargs="+", default=["sklearn", "sft", "fixed", "shuffle", "prpo"])
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
                for rec in run_job(name, k, seed, arms, steps=a.steps, sft_steps=a.sft_steps):
                    with log.open("a") as f: f.write(json.dumps(rec) + "\n")
                    print(rec["dataset"], rec["k"], rec["seed"], rec["arm"], {x: rec[x] for x in ("acc_random", "consistency", "cpu_s", "hgb_full") if x in rec}, flush=True)
