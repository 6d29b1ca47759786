"""Replay on a real trainer: a run interrupted and resumed from its checkpoint equals the uninterrupted one (buffer, draws and
weights included); replay steps leave the LR schedule alone; stored advantages keep their priorities; the grid task is registered
only on request; settings replay cannot honour are refused."""
import subprocess, sys
from pathlib import Path
import numpy as np, pytest, torch
from rlref.core import read_jsonl
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import RunInterrupted
from rlref.methods.replay import Replay, ReplayConfig

# the shipped 50% warm start (testbed recipe): 16 fresh rows per step into a 24-slot buffer, so the ring wraps (evicts) at step 2
TINY = dict(steps=4, prompts_per_step=4, samples_per_prompt=4, eval_every=0, kl_every=0, checkpoint_every=2, progress=False)
def rcfg(advantage): return ReplayConfig(mode="fresh", tau=2.0, capacity=24, batch_size=8, min_size=8, updates=2, seed=0, advantage=advantage)

def make(out, advantage="stored", replay=True, resume=False):
    tr = Trainer.setup(recipe_config("testbed", out=None if out is None else str(out), **TINY | ({} if out else dict(checkpoint_every=0))), resume=resume)
    return tr, (Replay(tr, rcfg(advantage)) if replay else None)

def rows(out): return [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(Path(out) / "metrics.jsonl")]

@pytest.mark.parametrize("advantage", ["stored", "whiten"])
def test_resume_with_replay_is_exact(tmp_path, advantage):
    ref, rref = make(tmp_path / "ref", advantage); ref.fit()
    cut, _ = make(tmp_path / "cut", advantage)
    def halt(t, m):
        if t.step == 3: raise KeyboardInterrupt
    cut.add_hook("after_step", halt)
    with pytest.raises(RunInterrupted): cut.fit()                   # checkpoint at step 2, interrupted in step 3
    res, rres = make(tmp_path / "cut", advantage, resume=True)
    res.fit(resume=True)
    assert rows(tmp_path / "cut") == rows(tmp_path / "ref")          # every metric of every step, the replay ones included
    assert all("replay_loss" in r for r in rows(tmp_path / "ref"))   # replay ran in every step (16 rows >= min_size 8)
    assert all(torch.equal(a, b) for a, b in zip(ref.policy.state_dict().values(), res.policy.state_dict().values()))
    a, b = rref.buffer, rres.buffer
    assert a.size == b.size == 24 and a.next == b.next and np.array_equal(a.born, b.born) and np.array_equal(a.base, b.base)
    assert np.array_equal(a.tree.tree, b.tree.tree) and rref.rng.random() == rres.rng.random()
    assert [(s, x.tolist()) for s, x in rref.age_log] == [(s, x.tolist()) for s, x in rres.age_log]

def test_replay_moves_the_policy_but_not_the_lr_schedule():
    on, _ = make(None, replay=False); on.fit()
    tr, rp = make(None); tr.fit()
    assert tr.sched.last_epoch == on.sched.last_epoch == 4          # one scheduler step per fresh update; the 8 replay steps add none
    assert any(not torch.equal(a, b) for a, b in zip(on.policy.state_dict().values(), tr.policy.state_dict().values()))
    items = [rp.buffer.items[i] for i in range(len(rp.buffer))]     # stored advantages: base priority |A| + eps, never rewritten
    np.testing.assert_allclose(rp.buffer.base[:len(items)], [abs(x["advantage"]) + 1e-6 for x in items], rtol=1e-6)

def test_importing_replay_registers_no_task():
    code = ("import rlref.methods.replay as m, rlref.tasks as t; assert 'grid' not in t.TASKS; "
            "assert m.register_grid_task() == 'grid' and 'grid' in t.TASKS; m.register_grid_task()")      # idempotent
    subprocess.run([sys.executable, "-c", code], check=True)
    from rlref.tasks import TASKS
    from rlref.methods.replay import register_grid_task
    TASKS["_other"] = lambda **kw: None
    try:
        with pytest.raises(ValueError, match="already registered as another task"): register_grid_task("_other")
    finally: TASKS.pop("_other")

class _Host:
    "What Replay reads of a Trainer before attaching."
    def __init__(self, **kw): self.__dict__.update(kw); self.hooks = []
    def add_hook(self, point, fn): self.hooks.append((point, fn)); return self

@pytest.mark.parametrize("kw", [dict(scaler=object()), dict(world_size=2)])
def test_replay_refuses_fp16_scaling_and_several_processes(kw):
    with pytest.raises(ValueError, match="one process and no fp16 loss scaling"): Replay(_Host(**(dict(scaler=None, world_size=1) | kw)), ReplayConfig())

def test_replay_config_refuses_unknown_advantage():
    with pytest.raises(ValueError, match="unknown replay advantage 'gae'"): ReplayConfig(advantage="gae")

def test_batch_normalised_is_weights_keep_the_replay_step_alive():
    # with priorities |A| + eps, zero-advantage rows sit at eps: divided by the buffer's largest weight (its rarest
    # item's), every drawn weight is tiny; divided by the batch's largest, each replay batch has a weight of 1
    means = {}
    for norm in ("batch", "buffer"):
        tr = Trainer.setup(recipe_config("testbed", **TINY | dict(checkpoint_every=0)))
        Replay(tr, ReplayConfig(mode="per", tau=None, capacity=24, batch_size=8, min_size=8, updates=1, seed=0,
                                advantage="stored", beta0=1.0, is_normalize=norm))
        means[norm] = [m["replay_is_weight_mean"] for m in (tr.train_step() for _ in range(3))]
    assert all(1 / 8 <= w <= 1 for w in means["batch"])              # the batch's largest weight is 1
    assert all(b < 1e-2 * a for a, b in zip(means["batch"], means["buffer"]))
    with pytest.raises(ValueError, match="unknown is_normalize"): ReplayConfig(is_normalize="global")
