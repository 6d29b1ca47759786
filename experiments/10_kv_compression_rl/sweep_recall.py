"""Does dense GRPO learn long-range recall? A sweep towards a testbed for chapter 10.

Resumable: appends one JSON line per finished (setting, seed) to experiments/10_kv_compression_rl/sweep_recall.jsonl and skips those already there.

    OMP_NUM_THREADS=1 nice python experiments/10_kv_compression_rl/sweep_recall.py --set lr=3e-4 --set lr=1e-3 --seeds 0 --workers 2

Per seed: a tiny Llama is SFT-trained on chapter 10's recall task (6 pairs) and stopped near a target held-out accuracy
(`sft_warm_start(stop_at=, stop_tol=)`, measured on validation prompts disjoint from the reported held-out prompts), then
dense GRPO runs from it with rlref's Trainer. Recorded: the held-out curve from step 0, final and peak gain, McNemar z of the
final model against its warm start on the same prompts, wall and CPU seconds. Warm starts are cached under --cache.
Each --set is comma-separated overrides of the defaults below (warm-start keys: the WARM dict's;
every other key is a TrainConfig field).
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, ast, json, multiprocessing as mp, os, time
from pathlib import Path

LOG = Path(__file__).resolve().parent / "sweep_recall.jsonl"
N_EVAL, N_VAL = 500, 256          # reported held-out prompts (test[:500]) and SFT stopping prompts (test[500:756])
WARM = dict(n_pairs=6, n_train=5000, sft_lr=3e-3, sft_steps=600, sft_batch=64, stop_at=0.5, stop_tol=0.03, preset="tiny", sft_eval_every=5)
RL = dict(lr=3e-4, prompts_per_step=32, samples_per_prompt=8, temperature=0.7, steps=150, eval_every=20, warmup_steps=10)

from sweep_runner import parse_overrides as parse, run_key as key   # one --set parser for every sweep

def warm_start(seed, w, cache):
    "Path of the seed's recall warm start (built and saved on first use) and its SFT history."
    import torch
    from rlref.core import seed_everything
    from rlref.models import make_char_tokenizer, make_tiny_llama, sft_warm_start, save_policy
    from rlref.tasks import make_task
    from rlref.kvcache import compressed_exact_match
    named = {k: v for k, v in w.items() if not (k in ("preset", "sft_eval_every") and v == WARM[k])}   # defaults keep earlier cache names
    d = Path(cache) / ("recall_" + "_".join(f"{k}{v}" for k, v in sorted(named.items())) + f"_seed{seed}")
    if (d / "config.json").is_file(): return d, json.loads((d / "sft_history.json").read_text())
    task = make_task("recall", n_pairs=w["n_pairs"], n_train=w["n_train"], n_test=N_EVAL + N_VAL, seed=seed)
    val = task.test.select(range(N_EVAL, N_EVAL + N_VAL))
    tok = make_char_tokenizer(); seed_everything(seed)
    model = make_tiny_llama(tok, w.get("preset", "tiny"), max_len=64, seed=seed)
    ev = lambda m: dict(exact_match=compressed_exact_match(m, tok, val, task.reward_fn, max_new_tokens=task.max_new_tokens))
    hist = sft_warm_start(model, tok, task.train, steps=w["sft_steps"], batch_size=w["sft_batch"], lr=w["sft_lr"], seed=seed,
                          progress=False, log_every=w["sft_steps"], eval_fn=ev, eval_every=w.get("sft_eval_every", 5), stop_at=w["stop_at"], stop_tol=w["stop_tol"])
    save_policy(model.eval(), tok, d); (d / "sft_history.json").write_text(json.dumps(hist))
    return d, hist

def build(job):
    import torch; torch.set_num_threads(1)
    seed, w, cache = job
    c0 = time.process_time(); d, hist = warm_start(seed, w, cache)
    return str(d), hist[-1], round(time.process_time() - c0, 1)

def work(job):
    import torch; torch.set_num_threads(1)
    from rlref.core import mcnemar, wilson_interval
    from rlref.trainer import Trainer
    from rlref.train.config import recipe_config
    seed, over, cache = job
    w = WARM | {k: v for k, v in over.items() if k in WARM}
    rl = RL | {k: v for k, v in over.items() if k not in WARM}
    c0, t0 = time.process_time(), time.time()
    d, hist = warm_start(seed, w, cache)
    sft_cpu = time.process_time() - c0
    cfg = recipe_config("arith-grpo", model=str(d), task="recall", task_kwargs=dict(n_pairs=w["n_pairs"], n_train=w["n_train"], n_test=N_EVAL + N_VAL),
                        task_seed=seed, seed=seed, eval_limit=N_EVAL, checkpoint_every=0, progress=False, **rl)
    tr = Trainer.setup(cfg)
    before = tr.evaluate(per_prompt=True)
    c1, t1 = time.process_time(), time.time()
    tr.fit()
    cpu, wall = time.process_time() - c1, time.time() - t1
    after = tr.evaluate(per_prompt=True)
    n = len(before)
    curve = [(0, float(before.float().mean()))] + [(h["step"], h["eval_accuracy"]) for h in tr.history if h.get("eval_accuracy") is not None]
    warm = curve[0][1]
    return dict(seed=seed, overrides=over, warm_setting=w, rl_setting=rl, n=n, curve=curve, warm=warm,
                sft_stop=[h for h in hist if "exact_match" in h][-1], final=float(after.float().mean()),
                final_ci=wilson_interval(int(after.sum()), n), gain=float(after.float().mean()) - warm,
                peak_gain=max(a for _, a in curve) - warm, mcnemar=mcnemar(after, before),
                reward=[round(h["reward_mean"], 4) for h in tr.history], cpu_seconds=round(cpu, 1), wall_seconds=round(wall, 1),
                sft_cpu_seconds=round(sft_cpu, 1), threads=torch.get_num_threads())

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[], help="k=v,k=v overrides (repeat for several settings)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--log", default=str(LOG))
    ap.add_argument("--cache", default="/tmp/recall_warm", help="where warm starts are saved (not committed)")
    a = ap.parse_args()
    log = Path(a.log)
    done = {key(r["seed"], r["overrides"]) for r in map(json.loads, filter(None, log.read_text().splitlines()))} if log.exists() else set()
    jobs = [(s, parse(x), a.cache) for x in (a.set or [""]) for s in a.seeds]
    jobs = [j for j in jobs if key(j[0], j[1]) not in done]
    print(f"{len(jobs)} runs to do", flush=True)
    with mp.get_context("spawn").Pool(min(a.workers, 2, max(len(jobs), 1))) as pool:
        warms = {json.dumps([s, sorted((WARM | {k: v for k, v in o.items() if k in WARM}).items())]): (s, WARM | {k: v for k, v in o.items() if k in WARM}, c)
                 for s, o, c in jobs}                     # build each warm start once, before the RL runs share it
        for d, last, cpu in pool.imap_unordered(build, list(warms.values())): print("warm start", d, last, f"cpu={cpu}s", flush=True)
        for r in pool.imap_unordered(work, jobs):
            with open(log, "a") as f: f.write(json.dumps(r) + "\n")
            print(r["seed"], r["overrides"], f"{r['warm']:.3f} -> {r['final']:.3f} (peak +{r['peak_gain']:.3f})", f"z={r['mcnemar']['z']:.1f}",
                  f"cpu={r['cpu_seconds']}s", "curve", [round(x, 3) for _, x in r["curve"]], flush=True)
