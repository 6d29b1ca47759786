"Reader-size numbers quoted in 02_tasks (how much the old arithmetic split leak mattered). Usage: OMP_NUM_THREADS=1 PYTHONPATH=. python experiments/02_tasks/split_leak.py old|new [SFT_LR, default 1e-3] (about 2-3 CPU minutes each)."
import random, json, sys, time
from datasets import Dataset
from rlref.tasks import make_task, split_leaks
from rlref.evaluation import exact_match
from rlref.models import make_char_tokenizer, make_tiny_llama, sft_warm_start
def old_split(n_train=5000, n_test=500, seed=0):
    rng, rows = random.Random(seed), {}
    while len(rows) < n_train + n_test:
        a, b, op = rng.randrange(100), rng.randrange(100), rng.choice("+"); rows.setdefault(f"{a}{op}{b}=", None)
    rows = [dict(prompt=p, answer=str(eval(p[:-1]))) for p in rows]
    return Dataset.from_list(rows[n_test:]), Dataset.from_list(rows[:n_test])
tok = make_char_tokenizer(); out = {}
which = sys.argv[1]
lr = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-3   # the chapter's SFT lr (3e-3 until 2026-12-01: seed-fragile, see 02)
t0 = time.time()
if which == "old":
    tr, te = old_split()
    leak = set(split_leaks("arith", tr, te)); clean = [i for i in range(len(te)) if i not in leak]
    m = make_tiny_llama(tok, "tiny", max_len=64, seed=0)
    sft_warm_start(m, tok, tr, steps=800, batch_size=128, lr=lr, progress=False)
    out = dict(old_test=exact_match(m, tok, te, max_new_tokens=5), n_leak=len(leak),
               leaked=exact_match(m, tok, te.select(sorted(leak)), max_new_tokens=5), clean=exact_match(m, tok, te.select(clean), max_new_tokens=5))
else:
    task = make_task("arith", n_digits=2, n_train=5000, n_test=500)
    m = make_tiny_llama(tok, "tiny", max_len=64, seed=0)
    sft_warm_start(m, tok, task.train, steps=800, batch_size=128, lr=lr, progress=False)
    trp = set(task.train["prompt"])
    tw = [dict(prompt=f"{b}+{a}=", answer=r["answer"]) for r in task.train for a, b in [r["prompt"][:-1].split("+")] if a != b and f"{b}+{a}=" not in trp][:500]
    out = dict(new_test=exact_match(m, tok, task.test, max_new_tokens=5), twins=exact_match(m, tok, Dataset.from_list(tw), max_new_tokens=5), n_twins=len(tw))
out["secs"] = time.time() - t0; out["lr"] = lr
print(which, json.dumps(out))
