"""GRPO with LoRA on SmolLM2-135M-Instruct (chapter 07d): one JSON line per finished (setting, seed) run, resumable.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice python experiments/07d_real_model/sweep.py --seeds 0 1 2

Each run: held-out greedy accuracy on the word-problem test split at step 0 and every eval_every steps (per-prompt hits
at the start and the end, for a paired test), the reward and CPU seconds of every step, and sample completions.
"""
import argparse, json, time
from pathlib import Path
import torch

LOG = Path(__file__).resolve().parent / "sweep.jsonl"
SETTING = dict(lora_r=16, prompts_per_step=8, samples_per_prompt=4, max_new_tokens=24, lr=3e-4, temperature=0.7,
               warmup_steps=0, steps=40, eval_every=10, eval_limit=100, kl_every=0, checkpoint_every=0)

def run(seed: int, setting: dict) -> dict:
    from rlref.real_model import smollm2_checkpoint
    from rlref.trainer import TrainConfig, Trainer
    cfg = TrainConfig(model=str(smollm2_checkpoint()), task="word_problems", task_kwargs=dict(n_train=400, n_test=100),
                      task_seed=0, seed=seed, progress=False, **setting)
    tr = Trainer.setup(cfg)
    before = tr.evaluate(per_prompt=True)                                        # (N,) hits of the zero-shot model
    t0 = time.process_time()
    tr.fit()
    cpu = time.process_time() - t0
    after = tr.evaluate(per_prompt=True)
    curve = [(0, float(before.float().mean()))] + [(h["step"], h["eval_accuracy"]) for h in tr.history
                                                   if h.get("eval_accuracy") is not None]
    keep = lambda h: {k: v for k, v in h.items() if isinstance(v, (int, float)) and ("time" in k or "reward" in k
                                                                                     or "length" in k or k == "step")}
    return dict(seed=seed, setting=setting, curve=curve, hits_start="".join(str(int(x)) for x in before),
                hits_end="".join(str(int(x)) for x in after), history=[keep(h) for h in tr.history],
                cpu_seconds=round(cpu, 1), threads=torch.get_num_threads())

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=SETTING["steps"])
    ap.add_argument("--log", default=str(LOG))
    a = ap.parse_args()
    torch.set_num_threads(1)
    setting, log = SETTING | dict(steps=a.steps), Path(a.log)
    done = {(r["seed"], json.dumps(r["setting"], sort_keys=True)) for r in map(json.loads, log.read_text().splitlines())} \
        if log.exists() else set()
    for s in a.seeds:
        if (s, json.dumps(setting, sort_keys=True)) in done: continue
        r = run(s, setting)
        with log.open("a") as f: f.write(json.dumps(r) + "\n")
        print(s, r["curve"], f"cpu={r['cpu_seconds']}s", flush=True)
