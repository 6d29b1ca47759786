"""Seed sweep of tests/test_precision_memory.py (init seeds 0-4): one lr-1e-6 optimizer step in four precisions against fp32, and the
bf16 sampler/learner log-prob gap. Writes experiments/07_trainer/seed_sweep_precision.jsonl."""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import copy, sys, warnings
from pathlib import Path
import torch
from sweep_runner import sweep_main
from rlref.models import make_char_tokenizer, make_tiny_llama
from rlref.tasks import make_task
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig

BASE = dict(sft_steps=0, prompts_per_step=8, samples_per_prompt=4, lr=1e-6, warmup_steps=0, progress=False, eval_every=0, kl_every=0)
tok, task = make_char_tokenizer(), make_task("arith", seed=0, n_train=200, n_test=20)

def precision_step(seed):
    "Relative weight change of one step vs fp32: bf16 and fp16 mixed within 1%, pure bf16 below 0.5 (and < 10% of weights moved)."
    warnings.simplefilter("ignore")
    model = make_tiny_llama(tok, "tiny", max_len=64, seed=seed)
    r = Trainer(TrainConfig(**BASE, seed=seed), copy.deepcopy(model), tok, task).rollout()
    r.advantages = torch.randn(len(r), generator=torch.Generator().manual_seed(seed + 1))
    out = {}
    for k, kw in dict(fp32=dict(dtype="float32", mixed_precision="no"), mixed=dict(dtype="bfloat16", mixed_precision="bf16"),
                      fp16=dict(dtype="float16", mixed_precision="fp16"), pure=dict(dtype="bfloat16", mixed_precision="no")).items():
        t = Trainer(TrainConfig(**BASE, seed=seed, **kw), copy.deepcopy(model), tok, task)
        w0 = [p.detach().float().clone() for p in t.policy.parameters()]; t._update(r)
        d = torch.cat([(p.detach().float() - a).flatten() for a, p in zip(w0, t.policy.parameters())])
        out[k] = (d.norm() / torch.cat([a.flatten() for a in w0]).norm()).item(); out[f"{k}_moved"] = (d != 0).float().mean().item()
    ratio = {k: out[k] / out["fp32"] for k in ("mixed", "fp16", "pure")}
    return dict(ratio=ratio, pure_moved=out["pure_moved"],
                margin=min(0.01 - abs(ratio["mixed"] - 1), 0.01 - abs(ratio["fp16"] - 1), 0.5 - ratio["pure"], 0.1 - out["pure_moved"]))

def bf16_gap(seed):
    "Max / mean |learner - sampler| log-prob over real tokens under bf16 autocast: below 0.05 / 0.005."
    t = Trainer(TrainConfig(**BASE, seed=seed, mixed_precision="bf16"), make_tiny_llama(tok, "tiny", max_len=64, seed=seed), tok, task)
    r = t.rollout()
    g = (t.logprobs(t.policy, r) - r.sampler_logprobs)[r.completion_mask.bool()].abs()
    return dict(max=g.max().item(), mean=g.mean().item(), margin=min(0.05 - g.max().item(), 0.005 - g.mean().item()))

if __name__ == "__main__":
    sweep_main(dict(precision_step=precision_step, bf16_gap=bf16_gap), str(Path(__file__).with_suffix(".jsonl")))
