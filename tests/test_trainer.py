"""Trainer tests that a notebook is the wrong place for: a real SIGKILL and --resume, every algorithm's
parameters moving, and one clear error per bad config."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest, torch
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig, recipe_config
from rlref.train.checkpoints import find_checkpoint

SMALL = json.loads((Path(__file__).resolve().parent / "tiny_configs.json").read_text())["test_trainer"]  # the tiny config (shared with the seed sweep behind this file's margins)

def _trained_params(trainer):
    mods = [trainer.policy] + ([trainer.critic] if trainer.critic is not None else [])
    return {f"{i}.{n}": p.detach().clone() for i, m in enumerate(mods) for n, p in m.named_parameters() if p.requires_grad}

@pytest.mark.parametrize("recipe,extra", [
    ("arith-grpo", {}), ("arith-dr_grpo", {}), ("arith-grpo-seqmean", {}), ("arith-grpo", dict(loss_type="bnpo", eps_high=0.28, beta=0.04)),
    ("arith-rloo", dict(kl_coef=0.01)), ("arith-reinforce_pp", {}), ("arith-ppo", dict(minibatch_size=8, kl_coef=0.01)),
    ("arith-online_dpo", dict(prompts_per_step=8, samples_per_prompt=2)), ("arith-grpo-lora", {}),
])
def test_every_algorithm_moves_every_trainable_parameter(recipe, extra):
    """Train until every trainable parameter has moved (at most 12 steps: a step whose groups all have equal rewards moves nothing, and
    LoRA's A matrices move only once B is non-zero, so how many steps it takes depends on the sampled stream, i.e. on the machine)."""
    torch.manual_seed(0)
    cfg = recipe_config(recipe, **(SMALL | extra | dict(steps=12)))
    tr = Trainer.setup(cfg)
    before = _trained_params(tr)
    losses, unchanged = [], list(before)
    while unchanged and len(losses) < cfg.steps:
        losses.append(tr.train_step().get("loss"))
        after = _trained_params(tr)
        unchanged = [n for n in before if torch.equal(before[n], after[n])]
    assert all(l is not None and torch.isfinite(torch.tensor(l)) for l in losses), losses
    # seed sweep (experiments/07_trainer/seed_sweep_test_trainer.py, seeds 0-4): every recipe moved every parameter within 7 steps (LoRA on seed 0), margin 5
    assert not unchanged, f"{recipe}: parameters that did not change in {len(losses)} steps: {unchanged[:5]}"
    assert tr.skipped_steps == 0

@pytest.mark.parametrize("kwargs,msg", [
    (dict(steps=-1), "steps must be >= 0"), (dict(prompts_per_step=3, samples_per_prompt=4, minibatch_size=5), "not a multiple"),
    (dict(algorithm="a2c"), "unknown algorithm"), (dict(lr=0.0), "lr must be > 0"), (dict(lr=-1e-3), "lr must be > 0"),
    (dict(samples_per_prompt=1), "group estimator"), (dict(task="chess"), "unknown task"),
])
def test_bad_config_fails_clearly(kwargs, msg):
    with pytest.raises(ValueError, match=msg): TrainConfig(**kwargs)

def test_unknown_recipe_and_resume_without_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="unknown recipe"): recipe_config("arith-a3c")
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"): find_checkpoint(tmp_path)

def test_corrupt_checkpoint_is_reported_and_skipped(tmp_path):
    cfg = recipe_config("arith-grpo", **(SMALL | dict(steps=2, checkpoint_every=1, out=str(tmp_path))))
    Trainer.setup(cfg).fit()
    newest = sorted((tmp_path / "checkpoints").glob("step_*.safetensors"))[-1]
    newest.write_bytes(newest.read_bytes()[:-100] + b"x" * 100)
    with pytest.warns(UserWarning, match="step_000002.safetensors is corrupt"):
        assert find_checkpoint(tmp_path).name == "step_000001.json"

def test_nonfinite_steps_are_skipped_then_stop(tmp_path):
    cfg = recipe_config("arith-grpo", **(SMALL | dict(steps=5, max_bad_steps=2)))
    tr = Trainer.setup(cfg)
    tr.add_hook("after_advantages", lambda t, r: setattr(r, "advantages", r.advantages * float("nan")) or r)
    tr.train_step()
    assert tr.skipped_steps == 1 and all(torch.isfinite(p).all() for p in tr.policy.parameters())
    with pytest.raises(RuntimeError, match="non-finite loss or gradient in 2 consecutive"): tr.train_step()

RUN = """
import sys
from rlref.cli import run_train
run_train("arith-grpo", out=sys.argv[1], resume=sys.argv[2] == "1", steps=12, progress=False, sft_steps=60, sft_lr=3e-3, sft_target=0.5, eval_every=4,
          eval_limit=50, checkpoint_every=3, prompts_per_step=8, samples_per_prompt=4, format_weight=0.5,
          task_kwargs=dict(n_train=300, n_test=50))
"""

def _run(out, resume=False, **kw):
    return subprocess.Popen([sys.executable, "-c", RUN, str(out), "1" if resume else "0"], **kw)

def _metrics(out):
    rows = [json.loads(l) for l in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]   # wall-clock time differs between runs

def test_sigkill_then_resume_gives_identical_metrics(tmp_path):
    ref, killed = tmp_path / "uninterrupted", tmp_path / "killed"
    assert _run(ref).wait(timeout=600) == 0
    p = _run(killed)
    deadline = time.time() + 600
    while time.time() < deadline:     # kill once a checkpoint exists and training went past it
        m = killed / "metrics.jsonl"
        if (killed / "checkpoints").is_dir() and list((killed / "checkpoints").glob("*.json")) and m.exists() and len(m.read_text().splitlines()) >= 7:
            break
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL); p.wait()
    n_before = len((killed / "metrics.jsonl").read_text().splitlines())
    assert 0 < n_before < 12, "the kill must land mid-training"
    assert _run(killed, resume=True).wait(timeout=600) == 0
    assert _metrics(killed) == _metrics(ref)
    s1, s2 = (json.loads((d / "summary.json").read_text()) for d in (ref, killed))
    s1.pop("wall_seconds"); s2.pop("wall_seconds")
    assert s1 == s2

def test_loss_terms_hook_is_added_to_the_loss_and_logged():
    "A chapter's extra loss term changes the update (here: an L2 pull on the LM head) and appears in the metrics."
    cfg = recipe_config("arith-grpo", **(SMALL | dict(sft_steps=0, steps=2, eval_every=0, kl_every=0)))
    norms = {}
    for with_term in (False, True):
        torch.manual_seed(0)
        tr = Trainer.setup(cfg)
        if with_term: tr.add_hook("loss_terms", lambda t, ctx: {"head_l2": 10.0 * t.policy.lm_head.weight.square().sum()})
        m = [tr.train_step() for _ in range(cfg.steps)]
        norms[with_term] = tr.policy.lm_head.weight.norm().item()
        assert ("head_l2" in m[-1]) == with_term
    assert norms[True] < norms[False] - 1e-3, norms              # seed sweep (experiments/07_trainer/seed_sweep_test_trainer.py, seeds 0-4): smallest margin 0.026
    with pytest.raises(ValueError, match="unknown hook point"): Trainer.setup(cfg).add_hook("before_loss", lambda t, x: x)

def test_lr_schedules_and_update_kl():
    "Cosine decays the LR to 0 at the last step; update_kl is measured every kl_every steps and is positive."
    from rlref.trainer import lr_lambda
    cfg = recipe_config("arith-grpo", **(SMALL | dict(steps=4, eval_every=0, lr_schedule="cosine", warmup_steps=1, kl_every=2)))
    f = lr_lambda(cfg)
    assert f(0) == 1.0 and f(cfg.steps) == pytest.approx(0.0) and 0 < f(cfg.steps - 1) < f(2) < 1
    assert lr_lambda(recipe_config("arith-grpo", steps=10, warmup_steps=0, lr_schedule="linear"))(5) == pytest.approx(0.5)
    tr = Trainer.setup(cfg)
    # a small L2 pull on the LM head moves the policy on every step, whatever the sampled rewards (a step whose groups all tie
    # has zero advantages, so without it whether update_kl > 0 would depend on the sampled stream, i.e. on the machine)
    tr.add_hook("loss_terms", lambda t, ctx: {"head_l2": 1e-2 * t.policy.lm_head.weight.square().sum()})
    ms = [tr.train_step() for _ in range(cfg.steps)]
    assert [("update_kl" in m) for m in ms] == [False, True, False, True]
    assert all(m["update_kl"] > 0 for m in ms if "update_kl" in m), [m.get("update_kl") for m in ms]
    assert ms[-1]["lr"] < 0.1 * cfg.lr
    with pytest.raises(ValueError, match="unknown lr_schedule"): TrainConfig(lr_schedule="step")
