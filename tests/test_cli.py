"""The `rlref` command with bad inputs and faults: every user error is one line `rlref CMD: error: ...` with exit
status 2 (no traceback) and nothing of an earlier run is lost; Ctrl-C is one line and 130, and resume after it is exact."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
import rlref.train.config
from rlref.cli import main

TINY = json.loads((Path(__file__).resolve().parent / "tiny_configs.json").read_text())["test_cli"]  # the tiny config (shared with the seed sweep behind this file's margins)
# a subprocess running `rlref` with the tiny recipe registered (a real command line, a real process)
CLI = [sys.executable, "-c", "import sys, rlref.train.config as t; t.RECIPES['tiny'] = " + repr(TINY) +
       "; from rlref.cli import main; sys.exit(main(sys.argv[1:]))"]

@pytest.fixture(autouse=True)
def tiny_recipe(monkeypatch): monkeypatch.setitem(rlref.train.config.RECIPES, "tiny", TINY)

def snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name != ".lock"}

def rows(out):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in map(json.loads, (Path(out) / "metrics.jsonl").read_text().splitlines())]

@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(rlref.train.config.RECIPES, "tiny", TINY)
        main(["train", "--recipe", "tiny", "--steps", "4", "--out", str(d), "--quiet"])
    return d

@pytest.fixture
def done(finished_run, tmp_path):
    import shutil
    d = tmp_path / "run"; shutil.copytree(finished_run, d); return d

# ---------------------------------------------------------------- bad arguments: one line, exit 2, before any work
@pytest.mark.parametrize("argv,msg", [
    (["sft", "--batch-size", "0"], "batch_size must be >= 1, got 0"),
    (["sft", "--batch-size", "-1"], "batch_size must be >= 1, got -1"),
    (["sft", "--steps", "0"], "steps must be >= 1, got 0"),
    (["sft", "--lr", "inf"], "lr must be a finite number > 0, got inf"),
    (["sft", "--lr", "nan"], "lr must be a finite number > 0, got nan"),
    (["sft", "--lr", "0"], "lr must be a finite number > 0, got 0.0"),
    (["sft", "--lr", "-0.001"], "lr must be a finite number > 0, got -0.001"),
    (["sft", "--seed", str(2**60)], f"seed must be in [0, 2**31), got {2**60}"),
    (["sft", "--seed", "-1"], "seed must be in [0, 2**31), got -1"),
    (["train", "--seed", str(2**60)], f"seed must be in [0, 2**31), got {2**60}"),
    (["sft", "--task", "chess"], "unknown task 'chess'"),
    (["train", "--recipe", "nope"], "unknown recipe 'nope'"),
    (["sft", "--out", ""], "the run directory must be a non-empty path, got ''"),
    (["train", "--out", ""], "the run directory must be a non-empty path, got ''"),
    (["train", "--out", "/proc/rlref-no-such-dir/run"], "cannot create run directory /proc/rlref-no-such-dir/run: No such file or directory"),
    (["train", "--resume", "--overwrite", "--out", "{tmp}"], "resume and overwrite exclude each other"),
    (["train", "--resume", "--out", "{tmp}/nope"], "nothing to resume: run directory {tmp}/nope does not exist"),
    (["train", "--resume", "--out", "{tmp}"], "nothing to resume in {tmp}: it has no config.json"),
])
def test_a_bad_argument_is_one_line_and_exit_2(tmp_path, argv, msg, rlref_cmd):
    argv = [a.format(tmp=tmp_path) for a in argv]
    code, out, err = rlref_cmd(argv + (["--quiet"] if argv[0] in ("sft", "train") else []))
    assert code == 2 and err.startswith(f"rlref {argv[0]}: error: {msg.format(tmp=tmp_path)}") and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []          # nothing was created

@pytest.mark.parametrize("cmd", [["sft"], ["train", "--recipe", "tiny"]])
def test_out_an_existing_file_fails_at_once_and_keeps_it(tmp_path, cmd, rlref_cmd):
    f = tmp_path / "notes.txt"; f.write_text("precious")
    code, _, err = rlref_cmd(cmd + ["--out", str(f), "--quiet"])
    assert code == 2 and err == f"rlref {cmd[0]}: error: run directory {f} exists and is not a directory\n"
    assert f.read_text() == "precious"

# ---------------------------------------------------------------- a finished run is never touched by a failing command
@pytest.mark.parametrize("argv,msg", [
    (["train", "--recipe", "tiny", "--steps", "4"], "is not empty (.*); choose another --out, continue it with --resume, or replace it with --overwrite"),
    (["train", "--recipe", "tiny", "--steps", "3", "--resume"], "cannot resume .* with steps=3: the run has steps=4, and steps can only be extended"),
    (["train", "--recipe", "arith-rloo", "--resume"], "cannot resume .* with a different config: .*algorithm 'grpo' -> 'rloo'"),
    (["train", "--recipe", "tiny", "--steps", "4", "--resume", "--seed", "3"], "with a different config: seed 0 -> 3"),
    (["sft", "--steps", "5"], "is not empty (.*); choose another --out, or replace it with --overwrite"),
    (["train", "--recipe", "tiny", "--steps", "4", "--overwrite", "--seed", str(2**31)], "seed must be in"),
])
def test_a_failing_command_leaves_a_finished_run_byte_identical(done, argv, msg, rlref_cmd):
    import re
    before = snapshot(done)
    code, out, err = rlref_cmd(argv + ["--out", str(done), "--quiet"])
    assert code == 2 and re.fullmatch(rf"rlref {argv[0]}: error: .*{msg}.*\n", err), err
    assert snapshot(done) == before

def test_resume_of_a_finished_run_says_so_and_changes_nothing(done, rlref_cmd):
    before = snapshot(done)
    code, out, err = rlref_cmd(["train", "--recipe", "tiny", "--steps", "4", "--resume", "--out", str(done), "--quiet"])
    assert code == 0 and out.startswith(f"{done} already finished its 4 steps; nothing to do (extend it with --resume --steps N)\n")
    assert snapshot(done) == before

def test_overwrite_replaces_a_finished_run(done, rlref_cmd):
    code, out, err = rlref_cmd(["train", "--recipe", "tiny", "--steps", "2", "--overwrite", "--out", str(done), "--quiet"])
    assert code == 0 and json.loads((done / "summary.json").read_text())["steps"] == 2
    assert sorted(p.name for p in (done / "checkpoints").glob("step_??????.json")) == ["step_000002.json"]

def test_steps_0_prints_a_summary_without_final_accuracy(tmp_path, rlref_cmd):
    code, out, err = rlref_cmd(["train", "--recipe", "tiny", "--steps", "0", "--out", str(tmp_path / "r"), "--quiet"])
    assert code == 0 and "at the warm start -> n/a after grpo (0 steps" in out

def test_a_damaged_sft_model_on_resume_is_one_line_naming_it(done, rlref_cmd):
    m = done / "sft" / "model.safetensors"; m.write_bytes(m.read_bytes()[:50])
    before = snapshot(done)
    code, _, err = rlref_cmd(["train", "--recipe", "tiny", "--steps", "6", "--resume", "--out", str(done), "--quiet"])
    assert code == 2 and err.startswith(f"rlref train: error: cannot resume: the SFT warm start {m} is damaged (") and err.count("\n") == 1
    assert snapshot(done) == before

def test_damaged_manifests_on_resume_are_skipped_then_one_line(done, rlref_cmd):
    d = done / "checkpoints"
    for i, man in enumerate(sorted(d.glob("step_*.json"))): man.write_bytes([b"\xff\xfe", b"[]"][i % 2])
    before = snapshot(done)
    code, _, err = rlref_cmd(["train", "--recipe", "tiny", "--steps", "6", "--resume", "--out", str(done), "--quiet"])
    assert code == 2 and err.splitlines()[-1] == f"rlref train: error: no complete checkpoint to resume from in {d}"
    assert snapshot(done) == before

def test_sft_refuses_a_non_empty_out_and_overwrite_replaces_an_earlier_run(tmp_path, rlref_cmd):
    out = tmp_path / "sft"
    code, _, _ = rlref_cmd(["sft", "--steps", "1", "--batch-size", "8", "--out", str(out), "--quiet"])
    assert code == 0
    old = (out / "metrics.jsonl").read_bytes()
    code, _, err = rlref_cmd(["sft", "--steps", "2", "--out", str(out), "--quiet"])
    assert code == 2 and err == (f"rlref sft: error: run directory {out} is not empty (metrics.jsonl, model, summary.json); "
                                 "choose another --out, or replace it with --overwrite\n")
    assert (out / "metrics.jsonl").read_bytes() == old
    code, out_, _ = rlref_cmd(["sft", "--steps", "2", "--batch-size", "8", "--out", str(out), "--overwrite", "--quiet"])
    assert code == 0 and json.loads((out / "summary.json").read_text())["steps"] == 2 and (out / "model" / "model.safetensors").is_file()

# ---------------------------------------------------------------- real processes: the lock, Ctrl-C, python -m rlref.cli
def test_a_second_command_on_a_busy_out_is_refused(tmp_path):
    out = tmp_path / "run"
    hold = "import sys; from rlref.rundirs import run_lock; cm = run_lock(sys.argv[1]); cm.__enter__(); print('locked', flush=True); sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for cmd in (["train", "--recipe", "tiny"], ["sft"]):
            exe = CLI if cmd[0] == "train" else [sys.executable, "-m", "rlref.cli"]
            r = subprocess.run(exe + cmd + ["--out", str(out), "--quiet"], capture_output=True, text=True, timeout=300)
            assert r.returncode == 2 and r.stderr == f"rlref {cmd[0]}: error: run directory {out} is in use by another process (pid {holder.pid})\n", r.stderr
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
    finally: holder.stdin.close(); holder.wait(timeout=60)

def test_ctrl_c_is_one_line_exit_130_and_resume_is_exact(tmp_path):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    args = ["train", "--recipe", "tiny", "--steps", "40", "--quiet"]
    # the interrupted process slows down after its 7th step (a sleep, no change to what it computes), so Ctrl-C lands mid-run
    # however fast or loaded the machine is; without it a fast run could finish all 40 steps before the signal arrives
    # it also restores Python's Ctrl-C handler: a shell starts background jobs (CI under nohup ... &) with SIGINT ignored
    slow = CLI[:2] + [CLI[2].replace("; from rlref.cli", "; import time, signal; signal.signal(signal.SIGINT, signal.default_int_handler); import rlref.trainer as tr; _s = tr.Trainer.train_step; "
                                     "tr.Trainer.train_step = lambda self: (_s(self), time.sleep(0.5 if self.step >= 7 else 0))[0]; from rlref.cli")]
    p = subprocess.Popen(slow + args + ["--out", str(cut)], stderr=subprocess.PIPE, text=True)
    m, deadline = cut / "metrics.jsonl", time.time() + 300
    while time.time() < deadline and not (m.exists() and len(m.read_text().splitlines()) >= 7): time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    err = p.stderr.read(); p.wait(timeout=60)
    n = len(m.read_text().splitlines())
    assert p.returncode == 130 and n < 40, (p.returncode, n, err)
    last = err.splitlines()[-1]
    import re
    assert re.fullmatch(r"rlref train: interrupted at step (\d+); continue with --resume \(from the checkpoint at step (\d+)\)", last), err
    assert "Traceback" not in err
    assert subprocess.run(CLI + args + ["--out", str(ref)], timeout=300).returncode == 0
    r = subprocess.run(CLI + args + ["--out", str(cut), "--resume"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert rows(cut) == rows(ref)

def test_python_m_rlref_cli_runs_the_command(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rlref.cli", "sft", "--batch-size", "0"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr == "rlref sft: error: batch_size must be >= 1, got 0\n"

def test_a_run_that_cannot_go_on_is_one_line_and_exit_1(tmp_path, monkeypatch, rlref_cmd):
    "An untrained model scores 0 on every sample, so DAPO's dynamic sampling has nothing to train on: one line, exit 1, no traceback."
    monkeypatch.setitem(rlref.train.config.RECIPES, "flat", TINY | dict(dynamic_sampling=True, max_refill_rounds=1, format_weight=0.0))
    # seed sweep (experiments/92_cli/seed_sweep_test_cli.py, seeds 0-7): step 1 stopped on every seed, and no untrained model wrote a right
    # answer in any of 20 further rollouts (0 of 2,816 samples in all), so the check does not depend on a lucky draw
    code, _, err = rlref_cmd(["train", "--recipe", "flat", "--steps", "2", "--out", str(tmp_path / "run"), "--quiet"])
    assert code == 1 and err.startswith("rlref train: stopped: dynamic sampling: all 8 groups of step 1 had equal rewards") and err.count("\n") == 1, err

# ---------------------------------------------------------------- the whole TrainConfig: flags, --config files, --print-config
import dataclasses
from dataclasses import dataclass, field
from typing import Literal
import yaml
from rlref.cli import CLIParser, add_config_args, config_fields, flag_values, build_parser
from rlref.train.config import TrainConfig, recipe_config

def as_text(v) -> str:
    "A default value as a command-line string."
    return "none" if v is None else str(v).lower() if isinstance(v, bool) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)

def train_help(capsys) -> str:
    with pytest.raises(SystemExit): main(["train", "--help"])
    return capsys.readouterr().out

def test_every_trainconfig_field_is_a_flag_in_both_spellings(capsys):
    "Iterates the dataclass's fields, so a field added later is covered: listed in --help, and its default read back from both spellings."
    helptext, fs = train_help(capsys), config_fields()
    parser = build_parser().commands["train"]
    assert [f.name for f in dataclasses.fields(TrainConfig) if f.init] == list(fs)
    for name, f in fs.items():
        assert f"--{name.replace('_', '-')}" in helptext, name
        if isinstance(f["default"], (type(None), bool, int, float, str, dict, list)):
            for flag in (f"--{name}", f"--{name.replace('_', '-')}"):
                got = flag_values(parser.parse_args([flag, as_text(f["default"])]), fs)
                assert got == {name: f["default"]} and type(got[name]) is type(f["default"]), (flag, got)

def print_config(rlref_cmd, argv, fmt="yaml"):
    code, out, err = rlref_cmd(argv + ["--print-config", fmt])
    assert code == 0, err
    return yaml.safe_load(out) if fmt == "yaml" else json.loads(out)

def test_recipe_then_config_file_then_flags(tmp_path, rlref_cmd):
    f = tmp_path / "run.yaml"
    f.write_text("recipe: arith-ppo\nnum_iterations: 3\nlr: 2e-4\nsteps: 7\ntask-kwargs: {n_train: 300}\n")
    base = ["train", "--config", str(f), "--out", str(tmp_path / "r")]
    d = print_config(rlref_cmd, base)
    assert (d["recipe"], d["algorithm"], d["minibatch_size"]) == ("arith-ppo", "ppo", 128)        # from the recipe
    assert (d["num_iterations"], d["lr"], d["steps"], d["task_kwargs"]) == (3, 2e-4, 7, {"n_train": 300})   # the file overrides the recipe
    d = print_config(rlref_cmd, base + ["--lr", "3e-4", "--steps", "2", "--recipe", "arith-grpo"])
    assert (d["recipe"], d["algorithm"], d["minibatch_size"], d["num_iterations"], d["lr"], d["steps"]) == ("arith-grpo", "grpo", None, 3, 3e-4, 2)
    assert not (tmp_path / "r").exists()                                                      # printing writes nothing

def test_print_config_is_the_config_a_run_uses(finished_run, tmp_path, rlref_cmd):
    "The printed config builds an equal TrainConfig, equals the config.json of the same command's run, and reads back as --config unchanged."
    argv = ["train", "--recipe", "tiny", "--steps", "4", "--out", str(finished_run), "--quiet"]
    d = print_config(rlref_cmd, argv)
    fields_ = {k: v for k, v in d.items() if k != "recipe"}
    assert TrainConfig(**fields_) == recipe_config("tiny", **fields_) == recipe_config("tiny", steps=4, out=str(finished_run), progress=False)
    assert fields_ == json.loads((finished_run / "config.json").read_text())
    assert print_config(rlref_cmd, argv, "json") == d
    (tmp_path / "printed.yaml").write_text(yaml.safe_dump(d))
    assert print_config(rlref_cmd, ["train", "--config", str(tmp_path / "printed.yaml")]) == d

@dataclass
class Toy:
    "A config with the field types TrainConfig may grow (lists, optional bools, free dicts)."
    # -- rewards
    weights: list[float] | None = None  # one weight per reward function
    funcs: list[str] = field(default_factory=list)  # reward functions by name
    # -- model
    chat: bool | None = None  # use the chat template (None = when the tokenizer has one)
    extra: dict = field(default_factory=dict)  # passed on
    precision: Literal["no", "bf16", "fp16"] = "no"  # mixed precision

@pytest.mark.parametrize("argv,want", [
    (["--weights", "1", "0.5"], dict(weights=[1.0, 0.5])),
    (["--weights", "[1, 0.5]"], dict(weights=[1.0, 0.5])),
    (["--weights", "1", "--weights", "0.5"], dict(weights=[1.0, 0.5])),
    (["--weights", "none"], dict(weights=None)),
    (["--funcs", "a:f", "b:g"], dict(funcs=["a:f", "b:g"])),
    (["--chat"], dict(chat=True)), (["--no-chat"], dict(chat=False)), (["--chat", "false"], dict(chat=False)), (["--chat", "null"], dict(chat=None)),
    (["--extra", '{"a": [1, 2]}'], dict(extra={"a": [1, 2]})),
    (["--precision", "bf16"], dict(precision="bf16")),
    ([], {}),
])
def test_bool_none_dict_and_list_flags(argv, want):
    p = CLIParser(prog="toy", allow_abbrev=False)
    fs = add_config_args(p, Toy)
    assert {k: f["section"] for k, f in fs.items()} == dict(weights="rewards", funcs="rewards", chat="model", extra="model", precision="model")
    assert fs["weights"]["help"] == "one weight per reward function"
    assert flag_values(p.parse_args(argv), fs) == want

@pytest.mark.parametrize("argv,msg", [
    (["--weights", "1", "x"], "weights must be a list of float or none, got ['1', 'x'] (element must be float, got 'x')"),
    (["--extra", "{a: 1}"], "argument --extra: extra must be a JSON object, got invalid JSON '{a: 1}'"),
    (["--extra", "[1]"], "argument --extra: extra must be a JSON object, got '[1]'"),
    (["--chat", "maybe"], "argument --chat: chat must be bool or none, got 'maybe'"),
    (["--precision", "fp8"], "argument --precision: precision must be one of no, bf16, fp16, got 'fp8'"),
])
def test_bad_toy_values_name_the_field(argv, msg, capsys):
    p = CLIParser(prog="toy", allow_abbrev=False)
    fs = add_config_args(p, Toy)
    try: flag_values(p.parse_args(argv), fs); err = None
    except SystemExit: err = capsys.readouterr().err
    except ValueError as e: err = str(e)
    assert err is not None and msg in err and err.count("\n") <= 1, err

@pytest.mark.parametrize("argv,msg", [
    (["--steps", "abc"], "argument --steps: steps must be int, got 'abc'"),
    (["--lr", "fast"], "argument --lr: lr must be float, got 'fast'"),
    (["--max-new-tokens", "2.5"], "argument --max-new-tokens: max_new_tokens must be int or none, got '2.5'"),
    (["--task-kwargs", "{n_train: 3}"], "argument --task-kwargs: task_kwargs must be a JSON object, got invalid JSON"),
    (["--progress", "maybe"], "argument --progress: progress must be bool, got 'maybe'"),
    (["--top-p", "2"], "top_p must be in (0, 1], got 2.0"),
    (["--samples_per_prompt", "1"], "grpo is a group estimator and needs samples_per_prompt >= 2, got 1"),
    (["--lrr", "1e-3"], "unrecognized arguments: --lrr 1e-3 (did you mean '--lr'?)"),
    (["--config", "{tmp}/none.yaml"], "config file {tmp}/none.yaml does not exist"),
    (["--print-config", "xml"], "argument --print-config: invalid choice: 'xml'"),
])
def test_a_bad_flag_value_is_one_line_naming_the_field(tmp_path, argv, msg, rlref_cmd):
    argv = ["train"] + [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--out", str(tmp_path / "r"), "--quiet"]
    code, out, err = rlref_cmd(argv)
    assert code == 2 and err.startswith("rlref train: error: ") and msg.replace("{tmp}", str(tmp_path)) in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()

@pytest.mark.parametrize("text,msg", [
    ("lrr: 1e-3\n", "unknown key 'lrr' (did you mean 'lr'?)"),
    ("resume: true\n", "unknown key 'resume'"),
    ("steps: 2.5\n", "steps must be int, got 2.5"),
    ("task_kwargs: [1]\n", "task_kwargs must be a JSON object, got [1]"),
    ("progress: maybe\n", "progress must be bool, got 'maybe'"),
    ("recipe: 3\n", "recipe must be a recipe name, got 3"),
    ("recipe: nope\n", "unknown recipe 'nope'"),
    ("lr: [1\n", "is not valid YAML or JSON"),
    ("- lr\n", "must be a mapping of TrainConfig fields, got a list"),
    ("eps_low: -1\n", "eps_low must be > 0 and finite, got -1.0"),
])
def test_a_bad_config_file_is_one_line_naming_the_key(tmp_path, text, msg, rlref_cmd):
    f = tmp_path / "run.yaml"; f.write_text(text)
    code, out, err = rlref_cmd(["train", "--config", str(f), "--out", str(tmp_path / "r"), "--quiet"])
    assert code == 2 and err.startswith("rlref train: error: ") and msg in err and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()

def test_model_a_saved_checkpoint_dir_trains(tmp_path, rlref_cmd):
    "--model takes a directory written by save_pretrained: no SFT, the loaded weights are the policy."
    from rlref.models import make_char_tokenizer, make_tiny_llama, save_policy
    tok = make_char_tokenizer()
    save_policy(make_tiny_llama(tok, "tiny", max_len=64, seed=0), tok, tmp_path / "model")
    code, out, err = rlref_cmd(["train", "--recipe", "tiny", "--model", str(tmp_path / "model"), "--steps", "2", "--out", str(tmp_path / "r"), "--quiet"])
    assert code == 0, err
    assert json.loads((tmp_path / "r" / "config.json").read_text())["model"] == str(tmp_path / "model")
    assert len(rows(tmp_path / "r")) == 2 and not (tmp_path / "r" / "sft").exists()
