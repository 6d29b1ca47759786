"""tools/gpu_check.sh measures something: on a CPU (--allow-cpu, the reduced size) it trains the real SmolLM2-135M-Instruct and its
held-out greedy accuracy rises (seed sweep: experiments/91_gpu_path/seed_sweep_gpu_check.jsonl); the random shapes keep the
script's bf16 path working, and the qwen2.5-0.5b shape's tokenizer covers its full 151,936-token vocabulary."""
import json, os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("device", "model", "params", "vocab_size", "memory", "steps", "rows_per_step", "max_new_tokens", "completion_tokens",
          "tokens_per_s", "sampling_tokens_per_s", "peak_memory_gib", "peak_memory_kind", "reward_mean", "reward_check",
          "heldout_accuracy_before", "heldout_accuracy_after", "reward_margin", "reward_rose")

def run_check(*args):
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "PYTHON": sys.executable}
    p = subprocess.run(["bash", "tools/gpu_check.sh", "--allow-cpu", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])

def test_gpu_check_trains_the_real_model_and_the_reward_rises():
    "The reduced CPU size: 6 steps of 8 prompts x 4 samples at 24 new tokens on SmolLM2-135M-Instruct (LoRA r=16, lr 1e-3)."
    from rlref.real_model import smollm2_gguf
    try: smollm2_gguf()
    except FileNotFoundError as e: pytest.skip(str(e))
    out = run_check()
    print(json.dumps(out))
    assert set(FIELDS) <= set(out)
    assert out["device"] == "cpu" and out["model"].startswith("SmolLM2") and out["vocab_size"] == 49_152
    assert out["memory"] == dict(vocab_size=49_152, micro_batch_size=8, logprob_chunk_rows=1024, vocab_chunk=None)  # the large-vocabulary defaults
    assert out["steps"] == 6 and out["rows_per_step"] == 32 and out["max_new_tokens"] == 24 and len(out["reward_mean"]) == 6
    assert out["completion_tokens"] > 0 and out["tokens_per_s"] > 0 and out["sampling_tokens_per_s"] >= out["tokens_per_s"]
    assert out["peak_memory_gib"] > 0.5                                # the 135M-parameter model lives in this process
    # seed sweep (seeds 0-2): margins in experiments/91_gpu_path/seed_sweep_gpu_check.jsonl
    assert out["reward_rose"] and out["heldout_accuracy_after"] > out["heldout_accuracy_before"], out

def test_gpu_check_random_shape_runs_the_bf16_path():
    out = run_check("--shape", "tiny", "--steps", "2", "--prompts", "4", "--max-new-tokens", "5", "--eval-prompts", "8",
                    "--mixed-precision", "bf16")
    assert out["device"] == "cpu" and out["steps"] == 2 and out["rows_per_step"] == 16 and out["vocab_size"] == 261
    assert out["weights_dtype"] == "torch.float32" and out["autocast"] == "torch.bfloat16"     # fp32 master weights under bf16
    assert out["memory"]["micro_batch_size"] is None and out["memory"]["logprob_chunk_rows"] is None   # a small vocabulary: off
    assert out["completion_tokens"] > 0 and out["reward_rose"] in (True, False)   # random weights: nothing to learn, no check

def test_qwen_shape_tokenizer_covers_the_full_vocabulary():
    from tools.gpu_check import padded_chat_tokenizer, QWEN_VOCAB
    from rlref.models import make_chat_tokenizer
    tok, small = padded_chat_tokenizer(QWEN_VOCAB), make_chat_tokenizer()
    assert len(tok) == QWEN_VOCAB == 151_936
    text = small.apply_chat_template([{"role": "user", "content": "What is 12 + 30?"}], tokenize=False, add_generation_prompt=True)
    assert tok(text)["input_ids"] == small(text)["input_ids"]           # text encodes as before, chat markers at their ids
    assert tok.convert_tokens_to_ids("<|im_end|>") == small.convert_tokens_to_ids("<|im_end|>")
    assert tok.decode([QWEN_VOCAB - 1, 300]) == f"<x{QWEN_VOCAB - 1}><x300>"   # every id the random model samples decodes

def test_gpu_check_refuses_without_a_gpu():
    if __import__("torch").cuda.is_available(): pytest.skip("a GPU is present")
    p = subprocess.run([sys.executable, "tools/gpu_check.py"], cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert p.returncode != 0 and "no CUDA device" in p.stderr
