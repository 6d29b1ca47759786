"""Seed sweep for the test-size checks of chapters 01 (models) and 02 (tasks) that depend on a model's numbers (EVIDENCE.md rule 7).

Per seed s the initial weights (make_tiny_llama seed, the chapters use 0) and the SFT batch seed (0) take s; tasks keep their split.
- loss0 (01, cell 23): a random model's SFT loss on two sums is log(vocab) +- 1.0; margin = 1.0 - |loss0 - log V|
- toy_sft (01, cell 27): 60 SFT steps on 4 sums bring the loss below 0.1 x the first logged loss; margin = 0.1 - last/first
- arith_sft (02, cell 38): 400 SFT steps on 2000 two-digit sums: held-out exact match (200 sums) before < 0.05, after > 0.5

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/02_tasks/seed_sweep_models_tasks.py --seeds 0 1 2 3 4
"""
import argparse, json, math, time
import torch
from rlref.models import make_char_tokenizer, make_tiny_llama, encode_pairs, sft_loss, sft_warm_start
from rlref.tasks import make_task
from rlref.evaluation import exact_match

def loss0(s):
    tok = make_char_tokenizer(); m = make_tiny_llama(tok, "tiny", seed=s)
    l = sft_loss(m, encode_pairs(tok, ["1+2=", "10+20="], ["3", "30"])).item()
    return dict(loss0=l, log_vocab=math.log(len(tok)), margin=1.0 - abs(l - math.log(len(tok))))

def toy_sft(s):
    tok = make_char_tokenizer()
    toy = [dict(prompt="1+2=", answer="3"), dict(prompt="2+2=", answer="4"), dict(prompt="5+4=", answer="9"), dict(prompt="7+1=", answer="8")]
    m = make_tiny_llama(tok, "tiny", max_len=32, seed=s)
    h = sft_warm_start(m, tok, toy, steps=60, batch_size=8, lr=3e-3, warmup=5, log_every=10, progress=False, seed=s)
    return dict(first=h[0]["loss"], last=h[-1]["loss"], margin=0.1 - h[-1]["loss"] / h[0]["loss"])

def arith_sft(s, steps=400, lr=3e-3):
    tok = make_char_tokenizer(); task = make_task("arith", n_digits=2, n_train=2000, n_test=200)
    m = make_tiny_llama(tok, "tiny", max_len=64, seed=s)
    before = exact_match(m, tok, task.test, max_new_tokens=task.max_new_tokens)
    h = sft_warm_start(m, tok, task.train, steps=steps, batch_size=128, lr=lr, progress=False, seed=s,
                       eval_fn=lambda mm: dict(exact_match=exact_match(mm, tok, task.test, max_new_tokens=task.max_new_tokens)), eval_every=200)
    after = h[-1]["exact_match"]
    return dict(steps=steps, lr=lr, before=before, after=after, margin=min(0.05 - before, after - 0.5))

CHECKS = dict(loss0=loss0, toy_sft=toy_sft, arith_sft=arith_sft)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--checks", nargs="+", default=list(CHECKS)); ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", default="experiments/02_tasks/seed_sweep_models_tasks.jsonl")
    ap.add_argument("--arith-steps", type=int, default=400, help="SFT steps of the arith_sft check (the chapter's test size: 400)")
    ap.add_argument("--arith-lr", type=float, default=3e-3, help="SFT learning rate of the arith_sft check")
    a = ap.parse_args()
    torch.set_num_threads(1)
    for c in a.checks:
        for s in a.seeds:
            t0 = time.time(); rec = dict(check=c, seed=s) | (arith_sft(s, a.arith_steps, a.arith_lr) if c == "arith_sft" else CHECKS[c](s)) | dict(seconds=round(time.time() - t0, 1))
            print(json.dumps(rec), flush=True)
            with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
