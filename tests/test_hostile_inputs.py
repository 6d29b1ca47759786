"""A mistyped path or a hostile input never loses data and never hangs: `--overwrite` clears only rlref runs (and
only rlref's files in them), a config file or JSON flag is read with limits (no aliases, depth, size, UTF-8) and fails
in one line with exit status 2, list flags parse to their element type, nothing is read through a symbolic link in a
run directory (the README's promise), an empty dataset names its file, and a bad reward return names the function."""
import json, os, re, shutil, subprocess, sys, textwrap
from pathlib import Path
import pytest
import rlref.train.config
from rlref.cli import main, run_sft, run_train
from rlref.rundirs import RunDirError, RUN_MARKER, is_run_dir, check_json_size
from rlref.tasks import make_task
from rlref.rewards import combine_rewards
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig, recipe_config
from rlref.train.checkpoints import find_checkpoint

TINY = dict(sft_steps=0, prompts_per_step=4, samples_per_prompt=4, eval_every=2, eval_limit=10, kl_every=0,
            checkpoint_every=1, format_weight=0.5, lr=1e-3, task_kwargs=dict(n_train=200, n_test=20))

@pytest.fixture(autouse=True)
def tiny_recipe(monkeypatch): monkeypatch.setitem(rlref.train.config.RECIPES, "tiny", TINY)

def snapshot(d: Path) -> dict:
    "Every file, folder and link under d: a file's bytes, a link's target."
    def what(p): return os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return {str(p.relative_to(d)): what(p) for p in sorted(d.rglob("*"))}

def home_like(d: Path) -> Path:
    "A folder that is not a run: dotfiles, a key, notes and a nested project with a git repository."
    (d / ".ssh").mkdir(parents=True); (d / ".ssh" / "id_ed25519").write_text("key")
    (d / ".bashrc").write_text("alias ll='ls -l'\n"); (d / "notes.txt").write_text("hi")
    (d / "project" / ".git").mkdir(parents=True); (d / "project" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (d / "project" / "metrics.jsonl").write_text('{"step": 1}\n')     # a run's file name, deeper down: still not a run
    return d

SFT = ["sft", "--steps", "1", "--batch-size", "4", "--quiet"]
TRAIN = ["train", "--recipe", "tiny", "--steps", "1", "--quiet"]
NOT_A_RUN = "is not empty (.bashrc, .ssh, notes.txt, project) and is not an rlref run; "

# ---------------------------------------------------------------- 1. --overwrite clears only rlref runs
@pytest.mark.parametrize("cmd", [SFT, TRAIN], ids=["sft", "train"])
def test_overwrite_refuses_a_home_like_folder_and_deletes_nothing(tmp_path, cmd, rlref_cmd):
    h = home_like(tmp_path / "h"); before = snapshot(h)
    code, _, err = rlref_cmd(cmd + ["--out", str(h), "--overwrite"])
    assert code == 2 and err == (f"rlref {cmd[0]}: error: run directory {h} {NOT_A_RUN}"
                                 "--overwrite clears only rlref runs, so choose a new or empty folder for --out\n")
    assert snapshot(h) == before                                   # nothing deleted, and no lock or marker left behind

@pytest.mark.parametrize("cmd", [SFT, TRAIN], ids=["sft", "train"])
def test_the_refusal_of_a_folder_that_is_not_a_run_does_not_suggest_overwrite(tmp_path, cmd, rlref_cmd):
    h = home_like(tmp_path / "h"); before = snapshot(h)
    code, _, err = rlref_cmd(cmd + ["--out", str(h)])
    assert code == 2
    assert err == f"rlref {cmd[0]}: error: run directory {h} {NOT_A_RUN}choose a new or empty folder for --out\n"
    assert snapshot(h) == before

def test_overwrite_of_the_current_folder_deletes_nothing(tmp_path, monkeypatch, rlref_cmd):
    repo = home_like(tmp_path / "repo"); before = snapshot(repo)
    monkeypatch.chdir(repo)
    code, _, err = rlref_cmd(SFT + ["--out", ".", "--overwrite"])
    assert code == 2 and "is not an rlref run; --overwrite clears only rlref runs" in err and err.count("\n") == 1
    assert snapshot(repo) == before

@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("sft") / "run"
    run_sft(steps=1, batch_size=4, out=d, progress=False)
    return d

def test_a_run_written_now_is_always_recognised(sft_run, tmp_path):
    assert (sft_run / RUN_MARKER).is_file() and is_run_dir(sft_run)
    bare = tmp_path / "bare"; bare.mkdir(); (bare / RUN_MARKER).write_text("x")   # a run killed before it wrote more
    assert is_run_dir(bare) and not is_run_dir(home_like(tmp_path / "h"))

@pytest.mark.parametrize("marker", [True, False], ids=["marked", "older-run-without-marker"])
def test_overwrite_of_a_run_removes_only_rlref_files(sft_run, tmp_path, marker, rlref_cmd):
    d = tmp_path / "run"; shutil.copytree(sft_run, d)
    if not marker: (d / RUN_MARKER).unlink()                        # a run written before the marker existed
    (d / "notes.txt").write_text("mine"); (d / "data").mkdir(); (d / "data" / "x.csv").write_text("a\n1\n")
    elsewhere = tmp_path / "elsewhere"; elsewhere.mkdir(); (elsewhere / "keep.txt").write_text("keep")
    (d / "policy").symlink_to(elsewhere)                            # an rlref name: the link goes, not its target
    with pytest.warns(UserWarning, match=rf"--overwrite left data, notes.txt in {d}: rlref did not write them"):
        code, out, err = rlref_cmd(SFT + ["--out", str(d), "--overwrite"])
    assert code == 0, err
    names = sorted(p.name for p in d.iterdir())
    assert names == [".lock", RUN_MARKER, "data", "metrics.jsonl", "model", "notes.txt", "summary.json"]
    assert (d / "notes.txt").read_text() == "mine" and (d / "data" / "x.csv").is_file()
    assert (elsewhere / "keep.txt").read_text() == "keep"

def test_overwrite_through_the_api_refuses_a_folder_that_is_not_a_run(tmp_path):
    h = home_like(tmp_path / "h"); before = snapshot(h)
    with pytest.raises(RunDirError, match="is not an rlref run; --overwrite clears only rlref runs"):
        run_train("tiny", out=h, overwrite=True, steps=1, progress=False)
    with pytest.raises(RunDirError, match="is not an rlref run; --overwrite clears only rlref runs"):
        Trainer.setup(recipe_config("tiny", out=str(h), steps=1, progress=False), overwrite=True)
    assert snapshot(h) == before

# ---------------------------------------------------------------- 2. a YAML "billion laughs" config
LAUGHS = "task_kwargs:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"  {b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))

def test_a_billion_laughs_config_is_refused_under_a_memory_limit(tmp_path):
    p = tmp_path / "laughs.yaml"; p.write_text(LAUGHS)
    assert len(LAUGHS.encode()) < 400                               # a few hundred bytes: ~387 million strings expanded
    limit = 3 << 30                                                 # enough to import rlref, too little to expand them
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
            f"from rlref.cli import main; sys.exit(main(['train', '--config', {str(p)!r}, '--print-config']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=os.environ | dict(OMP_NUM_THREADS="1"))
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr == (f"rlref train: error: config file {p} uses a YAML alias (*a) at line 3; "
                        "a config takes no anchors or aliases: write the value out\n")

def test_shared_lists_in_task_kwargs_from_python_are_refused_before_serialising():
    laughs = ["lol"] * 9
    for _ in range(8): laughs = [laughs] * 9
    msg = r"^task_kwargs is larger than 1,000,000 characters as JSON \(a shared part counts each time it appears\)$"
    with pytest.raises(ValueError, match=msg): TrainConfig(task_kwargs=dict(rows=laughs), out="runs/never-written")

def test_a_large_config_file_is_refused(tmp_path, rlref_cmd):
    p = tmp_path / "big.yaml"; p.write_text("steps: 3\n" + "#" * (1 << 20) + "\n")
    code, _, err = rlref_cmd(["train", "--config", str(p), "--print-config"])
    size = p.stat().st_size
    assert code == 2
    assert err == f"rlref train: error: config file {p} is {size:,} bytes; a config file is at most 1,048,576 bytes\n"

# ---------------------------------------------------------------- 3. deep nesting
def test_a_deeply_nested_config_file_is_one_line(tmp_path, rlref_cmd):
    p = tmp_path / "deep.yaml"; p.write_text("task_kwargs: " + "[" * 1000 + "]" * 1000 + "\n")
    code, _, err = rlref_cmd(["train", "--config", str(p), "--print-config"])
    assert code == 2 and err == f"rlref train: error: config file {p} is nested more than 20 levels deep (line 1)\n"

def test_deeply_nested_json_in_a_flag_is_one_line(rlref_cmd):
    deep = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    code, _, err = rlref_cmd(["train", "--task-kwargs", deep, "--print-config"])
    assert code == 2 and err == ("rlref train: error: argument --task-kwargs: task_kwargs is nested more than 20 "
                                 "levels deep (see rlref train --help)\n")

def test_deep_task_kwargs_from_python_are_refused():
    deep = []
    for _ in range(5000): deep = [deep]
    with pytest.raises(ValueError, match="^task_kwargs is nested more than 20 levels deep$"):
        TrainConfig(task_kwargs=dict(a=deep), out="x")
    check_json_size(dict(a=[[[1]]]), "task_kwargs")                 # a few levels are fine

# ---------------------------------------------------------------- 4. the space-separated list form
WEIGHTS = ["train", "--reward-funcs", "correctness", "format", "--format-weight", "0", "--reward-weights"]

def test_reward_weights_as_separate_values_are_numbers(rlref_cmd):
    code, out, err = rlref_cmd(WEIGHTS + ["1", "0.5", "--print-config", "json"])
    assert code == 0, err
    cfg = json.loads(out)
    assert cfg["reward_weights"] == [1.0, 0.5] and cfg["reward_funcs"] == ["correctness", "format"]
    code, out2, _ = rlref_cmd(WEIGHTS + ["[1, 0.5]", "--print-config", "json"])
    assert code == 0 and json.loads(out2) == cfg                    # the JSON form means the same

def test_a_bad_value_in_the_list_form_is_one_line(rlref_cmd):
    code, _, err = rlref_cmd(WEIGHTS + ["1", "x", "--print-config"])
    assert code == 2 and err == ("rlref train: error: reward_weights must be a list of float or none, got ['1', 'x'] "
                                 "(element must be float, got 'x')\n")

# ---------------------------------------------------------------- 5. a config file that is not UTF-8
def test_a_non_utf8_config_file_is_named(tmp_path, rlref_cmd):
    p = tmp_path / "run.yaml"; p.write_bytes(b"\xff\xfesteps: 3\n")
    code, _, err = rlref_cmd(["train", "--config", str(p), "--print-config"])
    assert code == 2 and err == f"rlref train: error: config file {p} is not UTF-8 text (byte 0xff at position 0)\n"

# ---------------------------------------------------------------- 6. symbolic links in a run directory
LINKED = "is a symbolic link; rlref reads nothing outside the run dir"

@pytest.fixture(scope="module")
def ckpt_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("ckpt") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(rlref.train.config.RECIPES, "tiny", TINY)
        run_train("tiny", out=d, steps=2, progress=False)             # checkpoints at steps 1 and 2
    return d

@pytest.fixture
def run(ckpt_run, tmp_path):
    d = tmp_path / "run"; shutil.copytree(ckpt_run, d, symlinks=True); return d

def _link_out(p: Path, outside: Path) -> Path:
    "Move p outside the run and leave a symbolic link to it in its place (the same bytes, read through the link)."
    outside.mkdir(exist_ok=True); target = outside / p.name
    shutil.move(p, target); p.symlink_to(target); return target

def test_a_symlinked_checkpoint_file_is_skipped_with_a_warning(run, tmp_path):
    d = run / "checkpoints"
    _link_out(d / "step_000002.safetensors", tmp_path / "outside")
    with pytest.warns(UserWarning, match=f"ignoring checkpoint: checkpoint file {d}/step_000002.safetensors {LINKED}"):
        assert find_checkpoint(run).name == "step_000001.json"
    _link_out(d / "step_000001.state.json", tmp_path / "outside")
    with pytest.warns(UserWarning, match=LINKED):
        with pytest.raises(FileNotFoundError, match=f"^no complete checkpoint to resume from in {d}$"):
            find_checkpoint(run)

def test_a_symlinked_manifest_or_checkpoints_folder_is_refused(run, tmp_path):
    d = run / "checkpoints"
    _link_out(d / "step_000002.json", tmp_path / "outside")
    with pytest.warns(UserWarning, match=f"checkpoint manifest {d}/step_000002.json {LINKED}"):
        assert find_checkpoint(run).name == "step_000001.json"
    (d / "step_000002.json").unlink(); shutil.move(d, tmp_path / "ck"); d.symlink_to(tmp_path / "ck")
    with pytest.raises(RunDirError, match=rf"^checkpoints folder {d} is not read: {d} is a symbolic link, "
                                          "and rlref reads nothing outside"):
        find_checkpoint(run)

@pytest.mark.parametrize("name", ["config.json", "run.json", "metrics.jsonl", "summary.json", "sft/model.safetensors"])
def test_a_resume_through_a_symlinked_run_file_is_one_line(run, tmp_path, name, rlref_cmd):
    _link_out(run / name, tmp_path / "outside")
    if name != "summary.json": (run / "summary.json").unlink()      # not finished: the resume reads every file
    code, _, err = rlref_cmd(TRAIN[:3] + ["--steps", "3", "--resume", "--out", str(run), "--quiet"])
    why = f"{run / name} is a symbolic link, and rlref reads nothing outside the run directory {run}"
    assert code == 2 and err.count("\n") == 1 and why in err, err

def test_a_symlinked_lock_is_refused(tmp_path, rlref_cmd):
    out = tmp_path / "run"; out.mkdir(); target = tmp_path / "victim.txt"; target.write_text("keep")
    (out / ".lock").symlink_to(target)
    code, _, err = rlref_cmd(SFT + ["--out", str(out)])
    assert code == 2
    assert err == (f"rlref sft: error: run directory {out}: "
                   ".lock is a symbolic link; rlref writes nothing outside a run\n")
    assert target.read_text() == "keep"

# ---------------------------------------------------------------- 7. empty datasets
def test_a_csv_with_only_its_header_names_the_file(tmp_path, rlref_cmd):
    p = tmp_path / "rows.csv"; p.write_text("prompt,answer\n")
    with pytest.raises(ValueError, match=rf"^the data file {str(p)!r} has no rows$"): make_task("dataset", path=str(p))
    argv = ["train", "--task", "dataset", "--task-kwargs", json.dumps(dict(path=str(p))), "--sft-steps", "0"]
    code, _, err = rlref_cmd(argv + ["--out", str(tmp_path / "run"), "--quiet"])
    last = err.split("\r")[-1].splitlines()[-1:]                      # the line after datasets' progress bar
    assert code == 2 and last == [f"rlref train: error: the data file {str(p)!r} has no rows"]
    assert not (tmp_path / "run").exists()

@pytest.mark.parametrize("text", ["", "\n\n", "[]"], ids=["empty", "blank-lines", "empty-list"])
def test_an_empty_json_file_names_the_file(tmp_path, text):
    p = tmp_path / "rows.jsonl"; p.write_text(text)
    with pytest.raises(ValueError, match=rf"^the data file {str(p)!r} (is empty: it )?has no rows$"):
        make_task("dataset", path=str(p))

def test_an_empty_split_names_the_folder_and_the_split(tmp_path):
    d = tmp_path / "d"; d.mkdir()
    (d / "train.csv").write_text("prompt,answer\n1+1=,2\n2+2=,4\n"); (d / "test.csv").write_text("prompt,answer\n")
    with pytest.raises(ValueError, match=rf"^the dataset at {str(d)!r} has no rows in its split 'test'$"):
        make_task("dataset", path=str(d))

def test_an_empty_dataset_in_memory_says_so():
    from datasets import Dataset
    with pytest.raises(ValueError, match="^the dataset given has no rows$"):
        make_task("dataset", path=Dataset.from_dict(dict(prompt=[], answer=[])))

# ---------------------------------------------------------------- 8. a reward function that returns a scalar
@pytest.fixture
def reward_module(tmp_path, monkeypatch):
    (tmp_path / "hostile_rewards.py").write_text(textwrap.dedent("""
        def always_one(prompts, completions, **kw): return 1.0
        def too_few(prompts, completions, **kw): return [1.0]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "hostile_rewards"

def test_a_scalar_reward_names_the_function(reward_module, tmp_path, rlref_cmd):
    argv = TRAIN + ["--reward-funcs", f"{reward_module}:always_one", "--format-weight", "0"]
    code, _, err = rlref_cmd(argv + ["--out", str(tmp_path / "run")])
    assert code == 2 and err == ("rlref train: error: reward function 'always_one' returned a float (1.0) for 16 "
                                 "completions; it must return a list of 16 rewards, one per completion\n")

@pytest.mark.parametrize("fn,got", [("always_one", "a float (1.0)"), ("too_few", "1 rewards")])
def test_a_bad_reward_return_through_the_api_names_the_function(reward_module, fn, got):
    mix = combine_rewards([f"{reward_module}:{fn}"])
    msg = (rf"^reward function '{fn}' returned {re.escape(got)} for 2 completions; "
           "it must return a list of 2 rewards, one per completion$")
    with pytest.raises(ValueError, match=msg): mix(["1+1=", "2+2="], ["2", "4"])

def test_a_task_reward_that_returns_a_scalar_names_the_function():
    from datasets import Dataset
    def scalar_answer(prompts, completions, **kw): return 0.0
    rows = Dataset.from_dict(dict(prompt=[f"{i}+1=" for i in range(20)], answer=[str(i + 1) for i in range(20)]))
    cfg = recipe_config("tiny", task="dataset", task_kwargs=dict(path=rows, reward=scalar_answer, test_size=4), steps=1,
                        progress=False, eval_limit=4, format_weight=0.0)
    msg = r"^reward function 'scalar_answer' returned a float \(0.0\) for 4 completions; it must return a list of 4"
    with pytest.raises(ValueError, match=msg):
        Trainer.setup(cfg)                                          # the warm start's evaluation already calls it
