"""A short GRPO run on one GPU under bf16 autocast, on a Qwen2-architecture chat model built in code (random weights at
the shape of Qwen2.5-0.5B with rlref's chat tokenizer: nothing is downloaded), through the real from_pretrained path.
Prints one JSON line: the device, the resolved precision, tokens per second (whole RL steps and sampling alone) and the
peak GPU memory. Usage (from the repository root, in the environment rlref is installed in):

    bash tools/gpu_check.sh                       # qwen2.5-0.5b shape, 5 steps of 64 prompts x 8 samples
    bash tools/gpu_check.sh --shape base --steps 3 --prompts 32
    bash tools/gpu_check.sh --allow-cpu --shape tiny --steps 2 --prompts 4   # the script itself, on a CPU
"""
import argparse, json, tempfile, time
import torch
from rlref.models import MODEL_PRESETS, make_chat_tokenizer, make_tiny_qwen2, save_policy
from rlref.trainer import TrainConfig, Trainer, resolve_precision

SHAPES = dict(MODEL_PRESETS) | {"qwen2.5-0.5b": dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                                                     num_key_value_heads=2, intermediate_size=4864)}

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="qwen2.5-0.5b", choices=sorted(SHAPES))
    ap.add_argument("--steps", type=int, default=5); ap.add_argument("--prompts", type=int, default=64); ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--micro-batch-size", type=int, default=64); ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--mixed-precision", default="auto", help="auto = bf16 where the GPU supports it")
    ap.add_argument("--allow-cpu", action="store_true", help="run on the CPU when there is no GPU (to test the script)")
    a = ap.parse_args()
    if not torch.cuda.is_available() and not a.allow_cpu: raise SystemExit("gpu_check: no CUDA device here (pass --allow-cpu to test the script on a CPU)")
    MODEL_PRESETS.setdefault(a.shape, SHAPES[a.shape])
    tok = make_chat_tokenizer()
    model = make_tiny_qwen2(tok, a.shape, max_len=256, seed=0)
    n_params = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory() as d:
        save_policy(model, tok, d); del model
        cfg = TrainConfig(model=d, chat_template=True, task="arith", task_kwargs=dict(n_digits=2, n_train=2000, n_test=200),
                          reward_funcs=["correctness", "format"], reward_weights=[1.0, 0.2], prompts_per_step=a.prompts,
                          samples_per_prompt=a.samples, micro_batch_size=min(a.micro_batch_size, a.prompts * a.samples), steps=a.steps, eval_every=0, eval_limit=64,
                          mixed_precision=a.mixed_precision, gradient_checkpointing=a.gradient_checkpointing, lr=1e-5, progress=False)
        trainer = Trainer.setup(cfg)
        before = [p.detach().clone() for p in trainer.policy.parameters() if p.requires_grad]
        if torch.cuda.is_available(): torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        rows, sample_s = [], 0.0
        one = trainer.rollout
        def timed_rollout():                       # the sampler's own share of each step
            nonlocal sample_s
            t = time.perf_counter(); r = one(); sample_s += time.perf_counter() - t; return r
        trainer.rollout = timed_rollout
        t0 = time.perf_counter()
        for _ in range(a.steps): rows.append(trainer.train_step())
        if torch.cuda.is_available(): torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        moved = max((p - b).abs().max().item() for p, b in zip((p for p in trainer.policy.parameters() if p.requires_grad), before))
    tokens = sum(r["tokens"] for r in rows)
    p0 = next(trainer.policy.parameters())
    print(json.dumps(dict(
        device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", torch=torch.__version__, shape=a.shape, params=n_params,
        weights_dtype=str(p0.dtype), autocast=str(resolve_precision(trainer.cfg.dtype, trainer.cfg.mixed_precision, p0.device)[1]), steps=a.steps, rows_per_step=a.prompts * a.samples,
        completion_tokens=tokens, seconds=round(wall, 2), tokens_per_s=round(tokens / wall, 1), sampling_tokens_per_s=round(tokens / max(sample_s, 1e-9), 1),
        peak_memory_gib=round(torch.cuda.max_memory_allocated() / 2**30, 3) if torch.cuda.is_available() else None,
        reward_mean=[round(r["reward_mean"], 3) for r in rows], max_weight_change=moved)))

if __name__ == "__main__": main()
