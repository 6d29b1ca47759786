"tools/gpu_check.py runs its bf16 GRPO code path on the CPU too (--allow-cpu): the script a GPU user runs first must not be broken."
import json, os, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]

def run_check(*args):
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "tools/gpu_check.py", "--allow-cpu", "--shape", "tiny", "--steps", "2", "--prompts", "4", *args],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])

@pytest.mark.parametrize("mp, autocast", [("auto", "None"), ("bf16", "torch.bfloat16")])
def test_gpu_check_runs_on_cpu(mp, autocast):
    out = run_check("--mixed-precision", mp)
    assert out["device"] == "cpu" and out["steps"] == 2 and out["rows_per_step"] == 32
    assert out["weights_dtype"] == "torch.float32" and out["autocast"] == autocast     # fp32 master weights either way
    assert out["completion_tokens"] > 0 and out["tokens_per_s"] > 0 and len(out["reward_mean"]) == 2

def test_gpu_check_refuses_without_a_gpu():
    if __import__("torch").cuda.is_available(): pytest.skip("a GPU is present")
    p = subprocess.run([sys.executable, "tools/gpu_check.py"], cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert p.returncode != 0 and "no CUDA device" in p.stderr
