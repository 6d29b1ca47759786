"The testbed's warm starts: shipped bytes are checked, unshipped seeds are built once, and configs cannot pair a warm start with another split."
import json, warnings
import pytest, torch
from rlref.warm_start import WARM_STARTS, warm_start_dir, dir_sha256, build_warm_start, EVAL_ROWS
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig, recipe_config
from rlref.models import load_policy

def test_shipped_warm_starts_match_their_sha256():
    for name, spec in WARM_STARTS.items():   # the testbed's and chapter 10's long-context variants
        for seed, sha in spec["sha256"].items():
            assert dir_sha256(warm_start_dir(name, seed)) == sha
        assert len(spec["sha256"]) >= 5, name

def test_config_refuses_a_warm_start_with_another_split_or_a_model():
    with pytest.raises(ValueError, match="unknown warm start"): TrainConfig(warm_start="nope")
    with pytest.raises(ValueError, match="set model or warm_start"): recipe_config("testbed", model="some/dir")
    with pytest.raises(ValueError, match="was trained on task 'arith'"): recipe_config("testbed", task_kwargs=dict(n_digits=2))
    with pytest.raises(ValueError, match="was trained on task 'arith'"): recipe_config("testbed", task="countdown")

def test_testbed_run_starts_from_the_shipped_weights(tmp_path):
    cfg = recipe_config("testbed", seed=1, steps=1, prompts_per_step=4, samples_per_prompt=2, eval_limit=20, progress=False, out=str(tmp_path / "run"))
    tr = Trainer.setup(cfg)
    shipped, _ = load_policy(warm_start_dir("arith2", 1))
    ref = shipped.state_dict()
    assert all(torch.equal(v, ref[k]) for k, v in tr.policy.state_dict().items())
    assert cfg.eval_limit <= EVAL_ROWS           # the reported rows never include the validation rows the SFT stop read
    tr.fit()
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["sft_accuracy"] == tr.sft_accuracy
    assert not (tmp_path / "run" / "sft").exists()    # nothing trained or saved for the warm start: it was loaded

def test_unshipped_seed_is_built_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setitem(WARM_STARTS, "quick", WARM_STARTS["arith2"] | dict(sft_steps=4, eval_every=2, sha256={}))
    with pytest.warns(UserWarning, match="no shipped quick warm start for seed 7"):
        d = warm_start_dir("quick", 7, cache_dir=tmp_path)
    rec = json.loads((d / "warm_start.json").read_text())
    assert rec["sha256"] == dir_sha256(d) and rec["seed"] == 7 and rec["sft_steps"] <= 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # the second call finds it: no warning, no rebuild
        assert warm_start_dir("quick", 7, cache_dir=tmp_path) == d

def test_a_modified_shipped_file_is_refused(tmp_path, monkeypatch):
    import shutil, rlref.warm_start as tb
    shutil.copytree(warm_start_dir("arith2", 0), tmp_path / "arith2-s0")
    (tmp_path / "arith2-s0" / "config.json").write_text((tmp_path / "arith2-s0" / "config.json").read_text().replace("128", "129", 1))
    monkeypatch.setattr(tb, "SHIPPED", tmp_path)
    with pytest.raises(ValueError, match="does not match its SHA-256"): warm_start_dir("arith2", 0)
    shutil.rmtree(tmp_path / "arith2-s0")
    with pytest.raises(FileNotFoundError, match="is missing"): warm_start_dir("arith2", 0)

def test_task_seed_fixes_the_split_across_rl_seeds():
    "Several RL seeds from one warm start must evaluate on the split that warm start was trained on (task_seed), not on seed's split."
    from rlref.tasks import make_task
    kw = dict(task_kwargs=dict(n_digits=2, n_train=300, n_test=50), steps=1, progress=False, sft_steps=0)
    a, b = (Trainer.setup(TrainConfig(seed=s, task_seed=3, **kw)) for s in (0, 1))
    assert list(a.task.test["prompt"]) == list(b.task.test["prompt"]) == list(make_task("arith", seed=3, **kw["task_kwargs"]).test["prompt"])
    c = Trainer.setup(TrainConfig(seed=1, **kw))
    assert list(c.task.test["prompt"]) != list(a.task.test["prompt"])    # without it, the seed moves the split
    with pytest.raises(ValueError, match="task_seed must be an int in"): TrainConfig(task_seed=-1)
    with pytest.raises(ValueError, match="leave task_seed None"): recipe_config("testbed", seed=2, task_seed=0)
