"""Dataset tasks (make_task("dataset", path=...)) and TRL-style reward functions (reward_funcs, reward_weights): loading from memory,
save_to_disk and data files, splits, clear errors, the reward registry, and the trainer running, logging and resuming with them."""
import json, math
import pytest, torch
from datasets import Dataset, DatasetDict
from rlref.tasks import make_task, make_arithmetic
from rlref.rewards import REWARD_FUNCS, reward_func, combine_rewards, answer_reward, format_reward, correctness_reward, extract_answer, normalize_answer
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig, recipe_config
from rlref.train.checkpoints import check_resume
from rlref.rundirs import RunDirError

def _words(n=40, seed=0):
    "Sums phrased as questions, with an integer result and an extra column the rewards may read."
    tr, te = make_arithmetic(2, "+", n_train=n, n_test=max(4, n // 4), seed=seed)
    row = lambda r: dict(question="What is " + r["prompt"][:-1].replace("+", " plus ") + "?", result=int(r["answer"]), level=len(r["answer"]))
    return [row(r) for r in tr], [row(r) for r in te]

def test_dataset_task_from_a_dataset_object():
    rows, _ = _words(40)
    ds = Dataset.from_list(rows)
    t = make_task("dataset", path=ds, prompt_column="question", answer_column="result", test_size=0.25, seed=0, max_new_tokens=5)
    assert (t.name, len(t.train), len(t.test), t.max_new_tokens) == ("dataset", 30, 10, 5)
    assert t.train.column_names == ["prompt", "answer", "level"]             # renamed; the other column kept for the rewards
    assert isinstance(t.train[0]["answer"], str) and t.reward_fn is answer_reward
    assert not set(t.train["prompt"]) & set(t.test["prompt"])
    again = make_task("dataset", path=ds, prompt_column="question", answer_column="result", test_size=0.25, seed=0)
    other = make_task("dataset", path=ds, prompt_column="question", answer_column="result", test_size=0.25, seed=1)
    assert again.test["prompt"] == t.test["prompt"] and other.test["prompt"] != t.test["prompt"]   # the seed decides the held-out rows

def test_dataset_task_from_save_to_disk_keeps_its_splits(tmp_path):
    tr, te = _words(40)
    DatasetDict(train=Dataset.from_list(tr), validation=Dataset.from_list(te)).save_to_disk(tmp_path / "wp")
    t = make_task("dataset", path=str(tmp_path / "wp"), prompt_column="question", answer_column="result", seed=3)
    assert (len(t.train), len(t.test)) == (len(tr), len(te))                  # the saved validation split is the held-out split
    assert t.test["prompt"] == [r["question"] for r in te]
    t2 = make_task("dataset", path=str(tmp_path / "wp"), prompt_column="question", n_train=7, n_test=2)
    assert (len(t2.train), len(t2.test)) == (7, 2) and t2.reward_fn is None and "result" in t2.train.column_names   # no answer column named

@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_dataset_task_from_a_data_file(tmp_path, suffix):
    rows, _ = _words(40)
    f = tmp_path / f"wp{suffix}"
    if suffix == ".jsonl": f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else: Dataset.from_list(rows).to_csv(str(f))
    t = make_task("dataset", path=str(f), prompt_column="question", answer_column="result", test_size=8, seed=0)
    assert (len(t.train), len(t.test)) == (32, 8)
    assert set(t.train["prompt"]) | set(t.test["prompt"]) == {r["question"] for r in rows}

def test_dataset_task_errors_name_what_is_missing(tmp_path):
    ds = Dataset.from_list(_words(20)[0])
    with pytest.raises(ValueError, match=r"prompt_column 'prompt' is not a column of the dataset; its columns are \['question', 'result', 'level'\]"):
        make_task("dataset", path=ds)
    with pytest.raises(ValueError, match="answer_column 'answer' is not a column"):
        make_task("dataset", path=ds, prompt_column="question", answer_column="answer")
    (tmp_path / "there.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"no dataset at .*: no such file or directory \(.* holds \[.there.jsonl.\]\)"):
        make_task("dataset", path=str(tmp_path / "missing"))
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(ValueError, match="a data file must end in one of"):
        make_task("dataset", path=str(tmp_path / "x.txt"))
    with pytest.raises(ValueError, match=r"split 'training' is not a split of the dataset; it has \['train'\]"):
        make_task("dataset", path=DatasetDict(train=ds), prompt_column="question", split="training")
    with pytest.raises(ValueError, match="test_size must be"):
        make_task("dataset", path=ds, prompt_column="question", test_size=1.5)
    with pytest.raises(ValueError, match="unknown argument"):
        make_task("dataset", path=ds, prompt_col="question")
    with pytest.raises(ValueError, match="prompt column must hold text, or message lists"):
        make_task("dataset", path=Dataset.from_list([dict(prompt=3)] * 4), test_size=1)
    with pytest.raises(ValueError, match="prompt column must hold text, or message lists"):   # messages without a content field
        make_task("dataset", path=Dataset.from_list([dict(prompt=[dict(role="user", text="hi")])] * 4), test_size=1)
    conv = make_task("dataset", path=Dataset.from_list([dict(prompt=[dict(role="user", content="hi")])] * 4), test_size=1)
    assert conv.train[0]["prompt"] == [dict(role="user", content="hi")]    # TRL's conversational prompts are accepted as they are

def test_answer_extraction():
    assert [extract_answer(t) for t in [r"\boxed{1} then \boxed{\frac{1}{2}}", "So... The answer is 1,234.", "#### 72", "45 or 46"]] == \
        [r"\frac{1}{2}", "1,234", "72", "46"]
    assert [normalize_answer(s) for s in ["1,234", "1234.0", "$1234$", "1234."]] == ["1234"] * 4
    assert answer_reward(None, [r"\boxed{72}", "the answer is 72", "71", None], answer=["48 + 24 = 72\n#### 72"] * 4) == [1., 1., 0., 0.]

def test_reward_funcs_by_name_import_string_and_callable(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text("def short(prompts, completions, **kw):\n    return [float(len(c) <= 2) for c in completions]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert reward_func("format") == ("format", format_reward) and set(REWARD_FUNCS) >= {"answer", "correctness", "format"}
    name, fn = reward_func("my_rewards:short")
    assert name == "short" and fn(None, ["46", "462"]) == [1., 0.]
    mix = combine_rewards(["answer", "my_rewards:short", lambda prompts, completions, **kw: [None, 2.0]], [1.0, 0.5, -1.0])
    total, cols = mix.score(["p", "p"], ["46", "The answer is 46"], answer=["46", "46"])
    assert cols["answer"] == [1., 1.] and cols["short"] == [1., 0.] and math.isnan(cols["<lambda>"][0])
    assert total == [1.5, -1.0]                                                 # 1 + 0.5 (the None left out); 1 - 2
    for bad, msg in [(["anwser"], "reward_funcs\\[0\\]: unknown reward function 'anwser'"), (["my_rewards:long"], "has no function 'long'"),
                     (["nope_mod:f"], "cannot import module 'nope_mod'"), ([], "non-empty list"), ([3], "reward_funcs\\[0\\]")]:
        with pytest.raises(ValueError, match=msg): combine_rewards(bad)
    with pytest.raises(ValueError, match="returned 1 rewards for 2 completions"):
        combine_rewards([lambda prompts, completions, **kw: [1.0]]).score(None, ["a", "b"])
    for bad in (float("nan"), float("inf"), "x"):                           # a broken reward is refused; only None means "does not apply"
        with pytest.raises(ValueError, match="returned .* for completion 1: a reward is a finite number"):
            combine_rewards([lambda prompts, completions, **kw: [1.0, bad]]).score(None, ["a", "b"])

@pytest.mark.parametrize("kwargs,msg", [
    (dict(reward_funcs=["answer", "acuracy"]), r"reward_funcs\[1\]: unknown reward function 'acuracy'"),
    (dict(reward_funcs=["answer", "format"], reward_weights=[1.0]), r"one weight per reward function \(2\)"),
    (dict(reward_funcs=["answer"], reward_weights=[float("nan")]), r"reward_weights\[0\] must be a finite number"),
    (dict(reward_funcs=["answer"], reward_weights=[True]), r"reward_weights\[0\] must be a finite number"),
    (dict(reward_weights=[1.0]), "reward_weights needs reward_funcs"),
    (dict(reward_funcs="answer"), "reward_funcs must be a list"),
    (dict(reward_funcs=["answer"], format_weight=0.5), "set format_weight or reward_funcs, not both"),
    (dict(reward_funcs=[answer_reward], out="run"), r"reward_funcs\[0\] is a callable, which cannot be written to config.json"),
    (dict(task="dataset", task_kwargs=dict(path=Dataset.from_list([dict(prompt="a")])), out="run"), "task_kwargs must be JSON-serialisable"),
])
def test_train_config_rejects_bad_reward_settings(kwargs, msg):
    with pytest.raises(ValueError, match=msg): TrainConfig(**kwargs)

def test_callables_are_fine_without_out():
    assert TrainConfig(reward_funcs=[answer_reward, "format"], reward_weights=[1, 0.1]).reward_funcs[0] is answer_reward

SMALL = dict(sft_steps=60, sft_lr=3e-3, sft_target=0.5, steps=2, prompts_per_step=4, samples_per_prompt=4, eval_every=2, eval_limit=20,
             checkpoint_every=0, progress=False, lr=1e-3, task_kwargs=dict(n_train=200, n_test=20))

def test_reward_funcs_equal_the_built_in_mix():
    "correctness + 0.5 * format through reward_funcs gives the same run as format_weight=0.5: rewards, advantages, updates, all of it."
    torch.manual_seed(0)
    a = Trainer.setup(recipe_config("arith-grpo", **SMALL, format_weight=0.5)); a.fit()
    torch.manual_seed(0)
    b = Trainer.setup(recipe_config("arith-grpo", **SMALL, reward_funcs=["correctness", "format"], reward_weights=[1.0, 0.5])); b.fit()
    for ha, hb in zip(a.history, b.history):
        assert {k: v for k, v in hb.items() if not k.startswith("rewards/")} | dict(seconds=0) == ha | dict(seconds=0)
        assert hb["reward_mean"] == pytest.approx(hb["rewards/correctness/mean"] + 0.5 * hb["rewards/format/mean"], abs=1e-6)
        assert hb["accuracy"] == hb["rewards/correctness/mean"]
    assert any(h["rewards/format/mean"] > 0 for h in b.history)                 # the check is not on all-zero rewards
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()): assert torch.equal(pa, pb)

def test_dataset_task_run_logs_each_reward_function(tmp_path):
    tr, te = _words(200)
    (tmp_path / "wp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tr + te))
    cfg = TrainConfig(task="dataset", task_kwargs=dict(path=str(tmp_path / "wp.jsonl"), prompt_column="question", answer_column="result",
                                                       test_size=40, max_new_tokens=6),
                      reward_funcs=["answer", "format"], reward_weights=[1.0, 0.2], **{k: v for k, v in SMALL.items() if k != "task_kwargs"})
    t = Trainer.setup(cfg)
    summary = t.fit()
    assert len(t.history) == 2 and summary["eval_n"] == 20
    for h in t.history:
        assert {"rewards/answer/mean", "rewards/answer/std", "rewards/format/mean", "rewards/format/std"} <= set(h)
        assert h["reward_mean"] == pytest.approx(h["rewards/answer/mean"] + 0.2 * h["rewards/format/mean"], abs=1e-6)

def test_dataset_without_answers_uses_the_reward_funcs_for_correctness(tmp_path, monkeypatch):
    (tmp_path / "len_rewards.py").write_text("def two_chars(prompts, completions, **kw):\n    return [float(len(c.strip()) == 2) for c in completions]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ds = Dataset.from_list([dict(prompt=f"{i}+{i}=") for i in range(60)])
    ds.save_to_disk(tmp_path / "prompts")
    cfg = TrainConfig(task="dataset", task_kwargs=dict(path=str(tmp_path / "prompts"), test_size=10, max_new_tokens=4),
                      reward_funcs=["len_rewards:two_chars"], sft_steps=0, **{k: v for k, v in SMALL.items() if k not in ("task_kwargs", "sft_steps")})
    t = Trainer.setup(cfg)
    assert t.task.reward_fn is None and isinstance(t.sft_accuracy, float)   # the held-out check scored with the reward_funcs
    t.fit()
    assert all(h["accuracy"] == h["reward_mean"] == h["rewards/two_chars/mean"] for h in t.history)
    with pytest.raises(ValueError, match="no correctness reward"):
        Trainer.setup(TrainConfig(task="dataset", task_kwargs=cfg.task_kwargs, sft_steps=0, progress=False))

def test_named_reward_funcs_round_trip_config_json_and_resume(tmp_path):
    kw = SMALL | dict(reward_funcs=["correctness", "rlref.rewards:format_reward"], reward_weights=[1.0, 0.5], checkpoint_every=1, out=str(tmp_path / "run"))
    full = Trainer.setup(recipe_config("arith-grpo", **(kw | dict(steps=3, out=str(tmp_path / "full")))))
    full.fit()
    first = Trainer.setup(recipe_config("arith-grpo", **kw))
    first.fit()
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["reward_funcs"] == ["correctness", "rlref.rewards:format_reward"] and saved["reward_weights"] == [1.0, 0.5]
    assert TrainConfig(**saved).reward_funcs == saved["reward_funcs"]         # config.json builds the same config
    with pytest.raises(RunDirError, match="reward_weights"):
        check_resume(tmp_path / "run", recipe_config("arith-grpo", **(kw | dict(reward_weights=[1.0, 0.25]))))
    resumed = Trainer.setup(recipe_config("arith-grpo", **(kw | dict(steps=3))), resume=True)
    resumed.fit(resume=True)
    last = resumed.history[-1]
    assert last["step"] == 3 and "rewards/format_reward/mean" in last
    assert {k: v for k, v in last.items() if k != "seconds"} == {k: v for k, v in full.history[-1].items() if k != "seconds"}

def test_reward_funcs_with_dynamic_sampling_refill():
    "Refilled rollouts are concatenated: the per-function rewards (B, K) travel with their rows."
    t = Trainer.setup(recipe_config("arith-grpo", **(SMALL | dict(dynamic_sampling=True, max_refill_rounds=10, prompts_per_step=8, temperature=1.0)),
                                    reward_funcs=["correctness", "format"], reward_weights=[1.0, 0.5]))
    r, raw = t.collect()
    cols = r.extras["reward_funcs"]
    assert cols.shape == (len(r), 2) and torch.allclose(r.rewards, cols[:, 0] + 0.5 * cols[:, 1])
    assert "rewards/correctness/mean" in raw and raw["groups_kept"] >= 1
