"""Run directories, checkpoints and resume through the Python API: a run owns its directory, a refused or failing
run changes nothing, resume is checked and exact (also after Ctrl-C, a torn metrics line, and with stateful hooks),
and a checkpoint is never unpickled nor read from outside its folder."""
import json, os, pickle, shutil, subprocess, sys, warnings
from pathlib import Path
import pytest, torch
from rlref.core import read_jsonl
from rlref.rundirs import RunDirError, claim_run_dir, run_lock, holds_run_lock, check_out_path
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import find_checkpoint, read_manifest, RunInterrupted, preflight_run
from rlref.cli import run_train

TINY = dict(sft_steps=0, steps=4, prompts_per_step=4, samples_per_prompt=4, eval_every=2, eval_limit=10, kl_every=0,
            checkpoint_every=2, progress=False, format_weight=0.5, lr=1e-3, task_kwargs=dict(n_train=200, n_test=20))

def tiny(out, recipe="arith-grpo", **kw): return recipe_config(recipe, **(TINY | dict(out=None if out is None else str(out)) | kw))

def snapshot(d: Path) -> dict:
    "Every file under d (but the lock, which only holds the pid of its last holder) with its bytes."
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name != ".lock"}

def rows(out):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(Path(out) / "metrics.jsonl")]

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    "A finished 4-step run made by run_train (recipe name in run.json), copied fresh for each test that uses it."
    d = tmp_path_factory.mktemp("finished") / "run"
    run_train("arith-grpo", out=d, **TINY)
    return d

@pytest.fixture
def done(finished, tmp_path):
    d = tmp_path / "run"; shutil.copytree(finished, d); return d

# ---------------------------------------------------------------- 1. the lock
HOLD = "import sys; from rlref.rundirs import run_lock; cm = run_lock(sys.argv[1]); cm.__enter__(); print('locked', flush=True); sys.stdin.read()"

def test_a_second_process_is_refused_while_the_first_holds_the_run(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirError, match=rf"^run directory {out} is in use by another process \(pid {holder.pid}\)$"):
            with claim_run_dir(out): pass
        with pytest.raises(RunDirError, match="in use by another process"): run_train("arith-grpo", out=out, **TINY)
        with pytest.raises(RunDirError, match="in use by another process"): preflight_run(tiny(out))   # what Trainer.setup should call first
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
    finally: holder.stdin.close(); holder.wait(timeout=60)
    with claim_run_dir(out): assert holds_run_lock(out)        # free again once the holder exits

def test_a_killed_holder_does_not_leave_a_stale_lock(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    holder.kill(); holder.wait(timeout=60)
    with claim_run_dir(out): pass                                # the kernel released the flock with the process

def test_the_lock_is_released_after_an_exception(tmp_path):
    tr = Trainer.setup(tiny(tmp_path / "run"))
    def boom(t, m): raise RuntimeError("boom")
    tr.add_hook("after_step", boom)
    with pytest.raises(RuntimeError, match="boom"): tr.fit()
    assert not holds_run_lock(tmp_path / "run")
    run_train("arith-grpo", out=tmp_path / "run", overwrite=True, **(TINY | dict(steps=1)))   # nobody holds it

# ---------------------------------------------------------------- 2. fresh runs and --overwrite
def test_a_fresh_run_refuses_a_run_directory_and_overwrite_clears_it(done):
    before = snapshot(done)
    with pytest.raises(RunDirError, match=r"is not empty \(\.?[a-z].*\); choose another --out, continue it with --resume, or replace it with --overwrite"):
        run_train("arith-grpo", out=done, **(TINY | dict(steps=2)))
    assert snapshot(done) == before
    s = run_train("arith-grpo", out=done, overwrite=True, **(TINY | dict(steps=2, checkpoint_every=1)))
    assert s["steps"] == 2
    names = sorted(p.name for p in (done / "checkpoints").iterdir())
    assert names == [f"step_00000{i}{x}" for i in (1, 2) for x in (".json", ".safetensors", ".state.json")]  # no step 3/4 of the old run
    assert [r["step"] for r in rows(done)] == [1, 2]

# ---------------------------------------------------------------- 3. a failing re-run changes nothing
@pytest.mark.parametrize("kwargs,exc,msg", [
    (dict(), RunDirError, "is not empty"),
    (dict(overwrite=True, lr=-1.0), ValueError, "lr must be > 0"),                                   # config error before clearing
    (dict(overwrite=True, task_kwargs=dict(n_train=200, n_test=20, bogus=1)), ValueError, r"unknown argument\(s\) \['bogus'\] for task 'arith'"),  # task error first
    (dict(overwrite=True, seed=2**60), ValueError, r"seed must be in \[0, 2\*\*31\)"),
    (dict(resume=True, overwrite=True), RunDirError, "resume and overwrite exclude each other"),
    (dict(resume=True, steps=3), RunDirError, "steps=3: the run has steps=4, and steps can only be extended"),
    (dict(resume=True, seed=1), RunDirError, "different config: seed 0 -> 1"),
    (dict(resume=True, recipe="arith-rloo"), RunDirError, "algorithm 'grpo' -> 'rloo'; loss_type 'dapo' -> 'seq_mean_token_sum'"),
    (dict(resume=True, lr=5e-4), RunDirError, "lr 0.001 -> 0.0005"),
    (dict(resume=True, steps=6, lr_schedule="cosine"), RunDirError, "lr_schedule 'constant' -> 'cosine'"),
])
def test_a_failing_rerun_leaves_a_finished_run_byte_identical(done, kwargs, exc, msg):
    before = snapshot(done)
    kw = TINY | kwargs; recipe = kw.pop("recipe", "arith-grpo")
    with pytest.raises(exc, match=msg): run_train(recipe, out=done, **kw)
    assert snapshot(done) == before

def test_resume_with_another_recipe_name_is_refused(done):
    (done / "run.json").write_text(json.dumps(dict(recipe="arith-grpo-seqmean")))   # same config, other name (edited by hand)
    before = snapshot(done)
    with pytest.raises(RunDirError, match="with recipe 'arith-grpo': it was started with recipe 'arith-grpo-seqmean'"):
        run_train("arith-grpo", out=done, resume=True, **(TINY | dict(steps=6)))
    assert snapshot(done) == before

@pytest.mark.parametrize("make,msg", [
    (lambda tmp: tmp / "file", "exists and is not a directory"),
    (lambda tmp: tmp / "file" / "run", "is not a directory"),
    (lambda tmp: "", "must be a non-empty path, got ''"),
    (lambda tmp: Path("/proc/rlref-no-such-dir/run"), "cannot create run directory /proc/rlref-no-such-dir/run"),
])
def test_a_bad_out_path_fails_before_anything_is_written(tmp_path, make, msg):
    (tmp_path / "file").write_text("keep me")
    with pytest.raises(RunDirError, match=msg): run_train("arith-grpo", out=make(tmp_path), **(TINY | dict(sft_steps=60)))
    assert (tmp_path / "file").read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["file"]

@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_out_fails_before_anything_is_written(tmp_path):
    ro = tmp_path / "ro"; ro.mkdir(); ro.chmod(0o500)
    try:
        with pytest.raises(RunDirError, match="is not writable"): check_out_path(ro / "run")
    finally: ro.chmod(0o700)

# ---------------------------------------------------------------- 4. resume semantics
def test_resume_of_a_finished_run_changes_nothing(done):
    before = snapshot(done)
    s = run_train("arith-grpo", out=done, resume=True, **TINY)
    assert s["already_finished"] and s["steps"] == 4 and snapshot(done) == before
    s = Trainer.setup(tiny(done), resume=True).fit(resume=True)          # the API says the same
    assert s["already_finished"] and snapshot(done) == before

def test_extending_steps_equals_a_longer_uninterrupted_run(tmp_path, done):
    run_train("arith-grpo", out=tmp_path / "six", **(TINY | dict(steps=6)))
    s = run_train("arith-grpo", out=done, resume=True, **(TINY | dict(steps=6)))
    assert s["steps"] == 6 and "already_finished" not in s
    assert rows(done) == rows(tmp_path / "six")

def test_resume_without_a_run_is_refused_without_creating_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing to resume: run directory .* does not exist"):
        run_train("arith-grpo", out=tmp_path / "nope", resume=True, **TINY)
    assert not (tmp_path / "nope").exists()

# ---------------------------------------------------------------- 5. Ctrl-C, torn last line, exact resume
def _interrupt_at(step):
    def hook(t, m):
        if m["step"] == step: raise KeyboardInterrupt
    return hook

def test_ctrl_c_and_a_torn_metrics_line_then_resume_is_exact(tmp_path):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    Trainer.setup(tiny(ref)).fit()
    tr = Trainer.setup(tiny(cut)); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted, match=r"^interrupted at step 3; continue with --resume \(from the checkpoint at step 2\)$"):
        tr.fit()
    assert not holds_run_lock(cut)
    with open(cut / "metrics.jsonl", "a") as f: f.write('{"step": 3, "reward_mean": 0.4')   # power loss mid-line
    with pytest.warns(UserWarning, match="metrics.jsonl:3: dropping a torn last line"):
        Trainer.setup(tiny(cut), resume=True).fit(resume=True)
    assert rows(cut) == rows(ref)

def test_a_damaged_middle_metrics_line_is_an_error_naming_it_and_changes_nothing(tmp_path):
    out = tmp_path / "run"
    tr = Trainer.setup(tiny(out)); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted): tr.fit()
    lines = (out / "metrics.jsonl").read_text().splitlines()
    (out / "metrics.jsonl").write_text(lines[0][:10] + "\n" + lines[1] + "\n")
    before = snapshot(out)
    with pytest.raises(ValueError, match=r"metrics.jsonl:1: damaged line"): Trainer.setup(tiny(out), resume=True).fit(resume=True)
    assert snapshot(out) == before

def test_interrupted_before_the_first_checkpoint_says_so(tmp_path):
    tr = Trainer.setup(tiny(tmp_path / "run")); tr.add_hook("after_step", _interrupt_at(1))
    with pytest.raises(RunInterrupted, match="interrupted at step 1; no checkpoint yet, so start again with --overwrite"): tr.fit()

# ---------------------------------------------------------------- 6. checkpoints: no pickle, no paths outside, bad manifests
@pytest.fixture
def ckpt_run(tmp_path):
    out = tmp_path / "run"
    Trainer.setup(tiny(out, steps=2, checkpoint_every=1)).fit()
    return out

class _Boom:
    def __init__(self, marker): self.marker = marker
    def __reduce__(self): return (open, (self.marker, "w"))    # unpickling this creates the marker file

def test_a_crafted_pickle_checkpoint_never_runs(ckpt_run, tmp_path):
    import hashlib
    d, marker = ckpt_run / "checkpoints", tmp_path / "PWNED"
    pt = d / "step_000009.pt"; torch.save({"x": _Boom(str(marker))}, pt)
    sha = hashlib.sha256(pt.read_bytes()).hexdigest()
    (d / "step_000009.json").write_text(json.dumps(dict(file=pt.name, step=9, sha256=sha)))                 # the old format
    (d / "step_000010.json").write_text(json.dumps(dict(step=10, tensors=dict(file=pt.name, sha256=sha),
                                                          state=dict(file="step_000002.state.json", sha256=sha))))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always"); man = find_checkpoint(ckpt_run)
    msgs = " | ".join(str(x.message) for x in w)
    assert man.name == "step_000002.json"
    assert "step_000009.json has no valid 'tensors' entry" in msgs                     # the old format: no safetensors file
    assert "'step_000009.pt', which is not a .safetensors file" in msgs
    Trainer.setup(tiny(None, steps=2, checkpoint_every=1)).load_checkpoint(man)
    assert not marker.exists()

@pytest.mark.parametrize("name", ["../secret.safetensors", "/etc/passwd.safetensors", "sub/x.safetensors", "..", "", "step_000002.pt"])
def test_a_manifest_cannot_name_a_file_outside_the_checkpoints_folder(ckpt_run, name):
    d = ckpt_run / "checkpoints"
    info = json.loads((d / "step_000002.json").read_text()); info["step"] = 3; info["tensors"]["file"] = name
    (d / "step_000003.json").write_text(json.dumps(info))
    with pytest.raises(RunDirError, match=rf"names {name!r}, which is not a .safetensors file in"): read_manifest(d / "step_000003.json")
    with pytest.warns(UserWarning, match="which is not a .safetensors file in"): assert find_checkpoint(ckpt_run).name == "step_000002.json"

@pytest.mark.parametrize("data,msg", [
    (b"\xff\xfe\x00binary", "is not UTF-8 text"),
    (b"[1, 2, 3]", "is a JSON list, not an object"),
    (b'{"step": 3', "is not JSON"),
    (b'{"step": 3}', "has no valid 'tensors' entry"),
    (b'{"step": "3", "tensors": {}, "state": {}}', "has no integer 'step'"),
    (b'{"step": 3, "tensors": {"file": 5, "sha256": "x"}, "state": {}}', "has no valid 'tensors' entry"),
    (b'{"step": 3, "tensors": {"file": "step_000003.safetensors", "sha256": "0"}, "state": {"file": "step_000003.state.json", "sha256": "0"}}',
     "step_000003.safetensors is missing"),
])
def test_a_damaged_manifest_is_skipped_with_a_warning(ckpt_run, data, msg):
    (ckpt_run / "checkpoints" / "step_000003.json").write_bytes(data)
    with pytest.warns(UserWarning, match=msg): assert find_checkpoint(ckpt_run).name == "step_000002.json"

def test_a_checkpoint_is_safetensors_and_json_and_pruned(ckpt_run):
    d = ckpt_run / "checkpoints"
    Trainer.setup(tiny(ckpt_run, steps=5, checkpoint_every=1, keep_checkpoints=2), resume=True).fit(resume=True)
    assert sorted(p.name for p in d.iterdir()) == [f"step_00000{i}{x}" for i in (4, 5) for x in (".json", ".safetensors", ".state.json")]
    state = json.loads((d / "step_000005.state.json").read_text())
    assert state["step"] == 5 and state["config"]["steps"] == 5 and "__tensor__" in json.dumps(state["gens"])

# ---------------------------------------------------------------- 7. hooks with state
class Scaler:
    "A stateful toy hook that changes training: advantages are scaled by 1 + n/10 (n = steps seen), and it keeps a running reward sum."
    def __init__(self): self.n, self.total = 0, torch.zeros(())
    def scale(self, t, r): r.advantages = r.advantages * (1 + self.n / 10); return r
    def record(self, t, m): self.n += 1; self.total += m["reward_mean"]; return m | dict(hook_n=self.n, hook_total=self.total.item())
    def state_dict(self): return dict(n=self.n, total=self.total.clone(), meta=dict(kind="scaler", history=[self.n]))
    def load_state_dict(self, d): self.n, self.total = d["n"], d["total"].clone(); assert d["meta"]["kind"] == "scaler"
    def attach(self, tr): return tr.add_hook("after_advantages", self.scale).add_hook("after_step", self.record)

def test_a_stateful_hook_resumes_exactly(tmp_path):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    a = Scaler(); Scaler.attach(a, Trainer.setup(tiny(ref))).fit()
    tr = Trainer.setup(tiny(cut)); Scaler().attach(tr); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted): tr.fit()
    b = Scaler(); tr = b.attach(Trainer.setup(tiny(cut), resume=True)); tr.fit(resume=True)
    assert (b.n, b.total.item()) == (a.n, a.total.item()) == (4, a.total.item())
    assert rows(cut) == rows(ref)

def test_a_checkpoint_with_a_stateful_hook_refuses_other_hooks(tmp_path):
    out = tmp_path / "run"
    tr = Scaler().attach(Trainer.setup(tiny(out))); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted): tr.fit()
    before = snapshot(out)
    with pytest.raises(RunDirError, match=r"written with stateful hooks \[after_advantages\[0\]: Scaler\] but this trainer has \[none\]"):
        Trainer.setup(tiny(out), resume=True).fit(resume=True)
    assert snapshot(out) == before

@pytest.mark.parametrize("recipe,extra", [("arith-ppo", dict(minibatch_size=8, kl_coef=0.01)), ("arith-grpo-lora", {}),
                                          ("arith-online_dpo", dict(samples_per_prompt=2)), ("arith-rloo", dict(kl_coef=0.01))])
def test_resume_is_exact_for_critic_lora_and_reference_models(tmp_path, recipe, extra):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    Trainer.setup(tiny(ref, recipe, **extra)).fit()
    tr = Trainer.setup(tiny(cut, recipe, **extra)); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted): tr.fit()
    Trainer.setup(tiny(cut, recipe, **extra), resume=True).fit(resume=True)
    assert rows(cut) == rows(ref)

def test_the_log_is_synced_before_each_checkpoint(tmp_path, monkeypatch):
    "A power loss can drop rows that are only in the OS cache; a checkpoint must never be ahead of its durable log."
    import rlref.core
    events = []
    sync, save = rlref.core.JsonlLogger.sync, Trainer.save_checkpoint
    monkeypatch.setattr(rlref.core.JsonlLogger, "sync", lambda self: (events.append("sync"), sync(self))[1])
    monkeypatch.setattr(Trainer, "save_checkpoint", lambda self: (events.append(f"ckpt{self.step}"), save(self))[1])
    Trainer.setup(tiny(tmp_path / "run", steps=3)).fit()
    assert events == ["sync", "ckpt2", "sync", "ckpt3"]

def test_a_gap_in_the_metrics_before_the_checkpoint_is_reported(tmp_path):
    out = tmp_path / "run"
    tr = Trainer.setup(tiny(out)); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted): tr.fit()
    lines = (out / "metrics.jsonl").read_text().splitlines(keepends=True)
    (out / "metrics.jsonl").write_text(lines[1])                  # the row of step 1 is lost
    with pytest.warns(UserWarning, match="does not hold one row for each of the 2 steps before the checkpoint"):
        Trainer.setup(tiny(out), resume=True).fit(resume=True)

def _replay(tr):
    from rlref.methods.replay import Replay, ReplayConfig
    Replay(tr, ReplayConfig(mode="fresh", capacity=64, batch_size=8, min_size=8, tau=2.0)); return tr

def _entrocraft(tr):
    from rlref.methods.entropy import Entrocraft
    return Entrocraft(low=(0.3, 0.2), high=(0.5, 0.4)).attach(tr)

@pytest.mark.parametrize("attach", [_replay, _entrocraft], ids=["replay", "entrocraft"])
def test_method_hooks_resume_exactly_through_a_checkpoint(tmp_path, attach):
    "The chapters' stateful hooks (a replay buffer with its sampler and ages; Entrocraft's controller) survive a Ctrl-C + resume bit for bit."
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    attach(Trainer.setup(tiny(ref))).fit()
    tr = attach(Trainer.setup(tiny(cut))); tr.add_hook("after_step", _interrupt_at(3))
    with pytest.raises(RunInterrupted): tr.fit()
    attach(Trainer.setup(tiny(cut), resume=True)).fit(resume=True)
    assert rows(cut) == rows(ref)
    if attach is _replay: assert any("replay_loss" in r for r in rows(ref))      # replay really ran, so its state mattered
