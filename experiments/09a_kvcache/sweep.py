"""Seed sweep for chapter 09a's accuracy-vs-budget check (nbs/09a_kvcache.ipynb):
the margins behind the chapter's test-size checks.

Retrains the test-size recall model (`recall_warm_start`'s recipe: same task, same SFT settings) with a different
model/SFT seed and thread count, the two things that make a fresh model on another CPU differ, then logs the dense
accuracy and the paired drop (McNemar z) of every policy at every budget, one JSON line per run.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python experiments/09a_kvcache/sweep.py --seeds 0 1 2 3 4 --threads 1 --out sweep.jsonl
"""
import argparse, json, time, sys
import torch
from rlref.core import seed_everything
from rlref.models import make_char_tokenizer, make_tiny_llama, sft_warm_start
from rlref.tasks import make_task, heldout_recall
from rlref.kvcache import compressed_exact_match, make_kv_policy, paired_drop

def train(model_seed: int, threads: int, task, steps=600, batch_size=64, lr=3e-3):
    "recall_warm_start's training with the task fixed (seed 0) and the model/SFT seed varied."
    torch.set_num_threads(threads)
    tok = make_char_tokenizer()
    seed_everything(model_seed)
    model = make_tiny_llama(tok, "tiny", max_len=64, seed=model_seed)
    sft_warm_start(model, tok, task.train, steps=steps, batch_size=batch_size, lr=lr, seed=model_seed, progress=False, log_every=steps)
    return model.eval(), tok

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.5, 0.35, 0.25])
    ap.add_argument("--n-extra", type=int, default=1792, help="extra held-out prompts beside the task's 256")
    ap.add_argument("--out", default="sweep.jsonl")
    a = ap.parse_args()
    task = make_task("recall", n_pairs=6, n_train=5000, n_test=256, seed=0)
    evalset = heldout_recall(task, 256 + a.n_extra)  # the chapter's 2048 held-out prompts by default
    for threads in a.threads:
        for s in a.seeds:
            t0 = time.time(); model, tok = train(s, threads, task); t_train = time.time() - t0; print("trained", s, threads, round(t_train, 1), flush=True)
            rec = dict(seed=s, threads=threads, t_train=round(t_train, 1))
            dense = compressed_exact_match(model, tok, evalset, task.reward_fn, None, max_new_tokens=task.max_new_tokens, per_prompt=True)
            hits = {"dense": "".join(str(int(x)) for x in dense)}
            rec["dense256"] = sum(dense[:256]) / 256; rec["dense"] = sum(dense) / len(dense)
            for name in ["sink", "h2o", "snapkv"]:
                for b in a.budgets:
                    h = compressed_exact_match(model, tok, evalset, task.reward_fn, make_kv_policy(name, b), max_new_tokens=task.max_new_tokens, per_prompt=True)
                    d = paired_drop(dense, h); d256 = paired_drop(dense[:256], h[:256])
                    rec[f"{name}@{b}"] = dict(acc=round(sum(h) / len(h), 4), drop=round(d["drop"], 4), n10=d["n10"], n01=d["n01"], z=round(d["z"], 2),
                                              z256=round(d256["z"], 2), drop256=round(d256["drop"], 4))
                    hits[f"{name}@{b}"] = "".join(str(int(x)) for x in h)
            rec["t_total"] = round(time.time() - t0, 1)
            with open(a.out, "a") as f: f.write(json.dumps(dict(rec, hits=hits)) + "\n")
            print(json.dumps(rec), flush=True)

if __name__ == "__main__": main()
