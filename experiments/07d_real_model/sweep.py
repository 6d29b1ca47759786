"""GRPO with LoRA on SmolLM2-135M-Instruct (chapter 07d): one JSON line per finished (setting, seed) run, resumable.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice python experiments/07d_real_model/sweep.py --seeds 0 1 2

Each run: held-out greedy accuracy on the word-problem test split at step 0 and every eval_every steps (per-prompt hits
at the start and the end, for a paired test), the greedy completions of every held-out prompt at the start and the end,
the reward and CPU seconds of every step, and the process's peak resident memory. The committed log was recorded with
micro_batch_size / logprob_chunk_rows unset (the whole batch at once); a rerun now gets their "auto" defaults at this
vocabulary (8 rows, 1,024-token head chunks), equal up to float summation order.
"""
import json, resource, sys, time
from pathlib import Path
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from sweep_runner import run_pending, sweep_parser, parse_sweep_args

LOG = Path(__file__).resolve().parent / "sweep.jsonl"
SETTING = dict(lora_r=16, prompts_per_step=8, samples_per_prompt=4, max_new_tokens=24, lr=3e-4, temperature=0.7,
               warmup_steps=0, steps=40, eval_every=10, eval_limit=100, kl_every=0, checkpoint_every=0)

def heldout_completions(tr) -> list[str]:
    "Greedy completions of the held-out prompts the evaluation scores, in its order (one process)."
    from rlref.evaluation import greedy_completions
    ds = tr.task.test.select(range(min(tr.cfg.eval_limit, len(tr.task.test))))
    with tr.autocast():
        return greedy_completions(tr.policy, tr.tok, list(ds["prompt"]), tr.max_new_tokens,
                                  chat_template=tr.cfg.chat_template, system_prompt=tr.cfg.system_prompt)

def run(seed: int, setting: dict) -> dict:
    from rlref.real_model import smollm2_checkpoint
    from rlref.trainer import Trainer
    from rlref.train.config import TrainConfig
    cfg = TrainConfig(model=str(smollm2_checkpoint()), task="word_problems", task_kwargs=dict(n_train=400, n_test=100),
                      task_seed=0, seed=seed, progress=False, **setting)
    tr = Trainer.setup(cfg)
    before = tr.evaluate(per_prompt=True)                                        # (N,) hits of the zero-shot model
    comps_before = heldout_completions(tr)
    t0 = time.process_time()
    tr.fit()
    cpu = time.process_time() - t0
    after = tr.evaluate(per_prompt=True)
    comps_after = heldout_completions(tr)
    curve = [(0, float(before.float().mean()))] + [(h["step"], h["eval_accuracy"]) for h in tr.history
                                                   if h.get("eval_accuracy") is not None]
    keep = lambda h: {k: v for k, v in h.items() if isinstance(v, (int, float)) and ("time" in k or "reward" in k
                                                                                     or "length" in k or k == "step")}
    return dict(seed=seed, setting=setting, curve=curve, hits_start="".join(str(int(x)) for x in before),
                hits_end="".join(str(int(x)) for x in after), history=[keep(h) for h in tr.history],
                completions_start=comps_before, completions_end=comps_after,
                cpu_seconds=round(cpu, 1), threads=torch.get_num_threads(),
                peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))  # Linux: KiB

if __name__ == "__main__":
    ap = sweep_parser(str(LOG), set_example="steps=20")
    a, over = parse_sweep_args(ap)
    setting = SETTING | over
    run_pending(a.out, ("seed",), [(s,) for s in a.seeds], lambda s: run(s, setting),
                summary=lambda r: f"{r['seed']} {r['curve']} cpu={r['cpu_seconds']}s rss={r['peak_rss_mib']}MiB",
                setting=setting)
