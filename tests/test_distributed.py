"""Data-parallel training on 2 CPU processes (torchrun, gloo, one thread each): the final weights equal a one-process run
over the same global batch, the run directory is written once (by rank 0), and resuming under 2 processes is exact."""
import json, os, socket, subprocess, sys
from pathlib import Path
import pytest, torch
from safetensors.torch import load_file
from rlref.core import read_jsonl
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.parallel import emulate_data_parallel, check_data_parallel, sampler_seed

K = 3            # steps
LR = 3e-4        # the testbed recipe's
TOL = 0.1 * LR   # max |w_2proc - w_1proc|. The gradient is summed in another order (two halves, all-reduced), so it differs by rounding;
                 # Adam divides each entry by its own magnitude, so an entry whose gradient is near eps (1e-8) can move by up to lr
                 # either way. Measured: 6.7e-6 (0.022 lr); 0.012% of the entries differ by more than 1e-6.
RECIPE = "testbed"  # the shipped 50% warm start (a random model's groups all have equal rewards, and nothing would move)
CFG = dict(steps=K, prompts_per_step=8, samples_per_prompt=4, eval_every=K, eval_limit=10, kl_every=0, checkpoint_every=1,
           keep_checkpoints=3, progress=False, warmup_steps=1, micro_batch_size=4)

SCRIPT = r"""
import json, sys
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import RunInterrupted
cfg = recipe_config(sys.argv[1], **json.loads(sys.argv[2])); stop, resume = int(sys.argv[3]), sys.argv[4] == "1"
tr = Trainer.setup(cfg, resume=resume)
assert tr.world_size == 2 and type(tr.learner).__name__ == "DistributedDataParallel", (tr.world_size, type(tr.learner))
assert type(tr.learner.module).__name__ == "LearnerForward" and tr.learner.module.policy is tr.policy
import torch
head_calls = []                                       # the input shapes of the output head in gradient passes (sampling and eval run without grad)
tr.policy.get_output_embeddings().register_forward_hook(lambda m, a, o: head_calls.append(list(a[0].shape)) if torch.is_grad_enabled() else None)
def halt(t, m):
    if t.step == stop: raise KeyboardInterrupt        # Ctrl-C reaches every rank of a launch
if stop: tr.add_hook("after_step", halt)
try: tr.fit(resume=resume)
except RunInterrupted as e: print(f"rank {tr.rank}: {e}")
print("HEAD_CALLS", tr.rank, json.dumps(head_calls))
tr.accelerator.end_training()                         # a clean gloo shutdown: barrier, then destroy the process group
sys.stdout.flush(); sys.stderr.flush()
import os; os._exit(0)   # skip the interpreter's teardown, where a gloo thread can abort the process ("terminate called without an active exception")
"""

def launch(tmp_path, out, recipe=RECIPE, stop=0, resume=False, **kw):
    "torchrun --nproc_per_node 2 on the tiny config; returns the completed process (asserting success)."
    script = tmp_path / "dp_run.py"; script.write_text(SCRIPT)
    env = os.environ | dict(OMP_NUM_THREADS="1", PYTHONPATH=str(Path(__file__).resolve().parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script), recipe,
           json.dumps(CFG | dict(out=str(out)) | kw), str(stop), "1" if resume else "0"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p

def rows(out): return [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(Path(out) / "metrics.jsonl")]

def max_dw(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)

@pytest.fixture(scope="module")
def two(tmp_path_factory):
    "An uninterrupted 2-process run of K steps."
    tmp = tmp_path_factory.mktemp("dp"); out = tmp / "two"
    launch(tmp, out)
    return out

def test_two_processes_equal_one_process_over_the_same_global_batch(two):
    ref = emulate_data_parallel(Trainer.setup(recipe_config(RECIPE, **CFG)), 2); ref.fit()
    plain = Trainer.setup(recipe_config(RECIPE, **CFG)); init = {k: v.clone() for k, v in plain.policy.state_dict().items()}; plain.fit()
    saved = load_file(two / "policy" / "model.safetensors")                 # rank 0's save_pretrained after step K
    mine = {k: v for k, v in ref.policy.state_dict().items() if k in saved}
    d, moved, other = max_dw(saved, mine), max_dw(mine, {k: init[k] for k in mine}), max_dw(mine, {k: v for k, v in plain.policy.state_dict().items() if k in saved})
    print(f"max|w_2proc - w_1proc(same batch)| = {d:.3g}; training moved the weights by {moved:.3g}; a 1-process run on its own batch differs by {other:.3g}")
    frac = max(((saved[k] - mine[k]).abs() > 1e-6).float().mean().item() for k in saved)
    print(f"fraction of entries differing by more than 1e-6: {frac:.3g}; steps with a gradient: {[h['grad_norm'] > 0 for h in ref.history]}")
    assert all(h["grad_norm"] > 0 for h in ref.history)                      # every step had a gradient to sum
    assert d < TOL and frac < 1e-3                                          # equal up to rounding ...
    assert moved > 10 * TOL and other > 10 * TOL                            # ... and not because nothing moved or any batch would do
    two_rows, ref_rows = rows(two), [{k: v for k, v in h.items() if k != "seconds"} for h in ref.history]
    assert [r["step"] for r in two_rows] == list(range(1, K + 1))          # one row per step: only rank 0 logs
    for a, b in zip(two_rows, ref_rows):                                    # the same samples, rewards and held-out hits
        for k in ("reward_mean", "reward_std", "accuracy", "tokens", "completion_length", "zero_std_frac", "eval_accuracy"):
            assert a.get(k) == b.get(k), (a["step"], k, a.get(k), b.get(k))
        assert abs(a["grad_norm"] - b["grad_norm"]) <= 1e-5 * b["grad_norm"] and abs(a["loss"] - b["loss"]) < 1e-6, (a, b)

def head_calls(p) -> dict:
    "{rank: [input shape of each gradient-pass output-head call]} from a launch's stdout."
    return {int(l.split()[1]): json.loads(l.split(maxsplit=2)[2]) for l in p.stdout.splitlines() if l.startswith("HEAD_CALLS")}

def test_chunked_gradient_pass_under_two_processes_equals_unchunked(tmp_path):
    """logprob_chunk_rows under DDP: the chunked log-probs run inside the DDP-wrapped module's forward, so every gradient-pass head call
    sees at most 8 completion tokens' hidden states (never a (rows, C, d) block), and the weights after K steps equal the unchunked
    2-process run's to rounding (chunks change only the order of float sums)."""
    plain = launch(tmp_path, tmp_path / "plain", logprob_chunk_rows=None)
    chunked = launch(tmp_path, tmp_path / "chunked", logprob_chunk_rows=8)
    calls_plain, calls_chunked = head_calls(plain), head_calls(chunked)
    assert sorted(calls_chunked) == sorted(calls_plain) == [0, 1]
    for rank in (0, 1):
        assert calls_chunked[rank] and all(len(s) == 2 and s[0] <= 8 for s in calls_chunked[rank]), calls_chunked[rank][:5]
        assert max(s[0] for s in calls_chunked[rank]) == 8                          # the chunks fill up: chunking is in use
        assert calls_plain[rank] and all(len(s) == 3 and s[0] == CFG["micro_batch_size"] for s in calls_plain[rank])  # (4, C, d) at once
    a, b = load_file(tmp_path / "chunked" / "policy" / "model.safetensors"), load_file(tmp_path / "plain" / "policy" / "model.safetensors")
    init = {k: v for k, v in Trainer.setup(recipe_config(RECIPE, **CFG)).policy.state_dict().items() if k in a}
    d, moved = max_dw(a, b), max_dw(b, init)
    print(f"max|w_chunked - w_unchunked| on 2 processes = {d:.3g}; training moved the weights by {moved:.3g}")
    assert d < TOL and moved > 10 * TOL
    assert rows(tmp_path / "chunked")[-1]["reward_mean"] == rows(tmp_path / "plain")[-1]["reward_mean"]

def test_lora_under_two_processes_equals_one_process(tmp_path):
    "DDP over a peft model (frozen base, trainable adapters): the saved adapters equal the one-process reference's."
    kw = dict(lora_r=8, lr=2e-3, steps=2, checkpoint_every=0)
    launch(tmp_path, tmp_path / "lora", **kw)
    ref = emulate_data_parallel(Trainer.setup(recipe_config(RECIPE, **CFG | kw)), 2); ref.fit()
    saved = load_file(tmp_path / "lora" / "policy" / "adapter_model.safetensors")
    mine = {k.replace(".default", ""): v for k, v in ref.policy.state_dict().items() if "lora_" in k}
    assert saved.keys() == mine.keys() and all(h["grad_norm"] > 0 for h in ref.history)
    d = max_dw(saved, mine)
    print(f"LoRA: max|A,B_2proc - A,B_1proc| = {d:.3g} (lr 2e-3)")
    assert d < 0.1 * kw["lr"]

def test_the_run_directory_is_written_once(two):
    names = sorted(p.name for p in two.iterdir())
    assert names == [".lock", ".rlref-run", "checkpoints", "config.json", "metrics.jsonl", "policy", "report.png", "summary.json"]
    state = json.loads((two / "checkpoints" / f"step_{K:06d}.state.json").read_text())
    assert state["world_size"] == 2 and json.loads((two / "summary.json").read_text())["steps"] == K

def test_resume_under_two_processes_is_exact(two, tmp_path):
    cut = tmp_path / "cut"
    p = launch(tmp_path, cut, stop=2)
    assert "interrupted at step 2" in p.stdout and not (cut / "summary.json").exists()
    launch(tmp_path, cut, resume=True)
    assert rows(cut) == rows(two)
    a, b = load_file(cut / "policy" / "model.safetensors"), load_file(two / "policy" / "model.safetensors")
    assert max_dw(a, b) == 0.0

def test_a_checkpoint_of_two_processes_is_refused_by_one(two):
    "Each rank's sampler stream is part of the state: resuming on another number of processes would not continue the run."
    from rlref.train.checkpoints import find_checkpoint
    from rlref.rundirs import RunDirError
    tr = Trainer.setup(recipe_config(RECIPE, **CFG))
    with pytest.raises(RunDirError, match=r"written by 2 process\(es\) but this run has 1; resume it with 2"): tr.load_checkpoint(find_checkpoint(two))

def test_configs_two_processes_cannot_run_are_refused():
    kw = dict(CFG)
    with pytest.raises(ValueError, match="prompts_per_step must be a multiple of the 2 processes"): check_data_parallel(recipe_config("arith-grpo", **kw | dict(prompts_per_step=3)), 2)
    with pytest.raises(ValueError, match="minibatch_size must be a multiple of 2"): check_data_parallel(recipe_config("arith-grpo", **kw | dict(prompts_per_step=6, samples_per_prompt=2, minibatch_size=3, micro_batch_size=None)), 2)
    with pytest.raises(ValueError, match="not known to compute advantages within each group"): check_data_parallel(recipe_config("arith-reinforce_pp", **kw), 2)
    with pytest.raises(ValueError, match="scale_rewards must be 'group' or 'none'"): check_data_parallel(recipe_config("arith-grpo", **kw | dict(scale_rewards="batch")), 2)
    with pytest.raises(ValueError, match="dynamic_sampling must be False"): check_data_parallel(recipe_config("arith-grpo", **kw | dict(dynamic_sampling=True)), 2)
    with pytest.raises(ValueError, match="DDP"): check_data_parallel(recipe_config("arith-grpo", **kw), 2, "DEEPSPEED")
    check_data_parallel(recipe_config("arith-grpo", **kw | dict(prompts_per_step=3)), 1)   # one process: anything goes

def test_every_rank_samples_its_own_random_stream():
    "A CPU generator reads only the low 32 bits of its seed: rank seeds must differ there (an early `seed + (rank << 42)` gave every rank rank 0's stream)."
    draws = {tuple(torch.rand(4, generator=torch.Generator().manual_seed(sampler_seed(s, r))).tolist()) for s in (0, 1, 2**31 - 1) for r in range(64)}
    assert len(draws) == 3 * 64 and sampler_seed(5, 0) == 5 * 1000 + 2                      # rank 0 keeps the one-process seed
