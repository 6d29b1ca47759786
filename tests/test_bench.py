"""`rlref.bench.bench_grpo_step` at a tiny size: both trainers run the steps asked for and report finite positive
times and near-budget completion lengths (never wall-clock assertions; the full bench is `rlref bench grpo-step`)."""
import json, math
import pytest

pytest.importorskip("trl")
from rlref.bench import BENCHES, bench_grpo_step  # noqa: E402


def test_grpo_step_bench_tiny():
    res = bench_grpo_step(steps=2, prompts_per_step=4, samples_per_prompt=4, max_new_tokens=6)
    assert BENCHES["grpo-step"] is bench_grpo_step
    for k in ("rlref_s_per_step", "trl_s_per_step", "ratio_rlref_over_trl"):
        assert math.isfinite(res[k]) and res[k] > 0, (k, res[k])
    assert len(res["rlref_s_all"]) == len(res["trl_s_all"]) == res["steps"] == 2
    assert res["settings"]["rows_per_step"] == 16 and res["settings"]["max_new_tokens"] == 6
    for k in ("rlref_mean_completion_len", "trl_mean_completion_len"):
        assert 1 <= res[k] <= 6, (k, res[k])     # random weights rarely stop: close to the budget, never above
    assert res["threads"] == 1
    json.loads(json.dumps(res))                  # what `rlref bench grpo-step --json` prints


def test_grpo_step_bench_bad_steps():
    with pytest.raises(ValueError, match="steps must be >= 1"):
        bench_grpo_step(steps=0)


def test_grpo_step_bench_on_a_saved_checkpoint(tmp_path, monkeypatch, capsys):
    "`bench_grpo_step(model=PATH)` (`rlref bench grpo-step --model PATH`): both rlref's Trainer and TRL's GRPOTrainer load that directory."
    import rlref.bench as B, rlref.trainer as T
    from rlref.models import make_chat_tokenizer, make_tiny_qwen2, save_policy
    from rlref.cli import build_parser
    tok = make_chat_tokenizer()                                   # another architecture and tokenizer than the default tiny Llama
    save_policy(make_tiny_qwen2(tok, "tiny", max_len=64, seed=3), tok, tmp_path / "ckpt")
    loaded = []
    for mod in (B, T):
        real = mod.load_policy
        monkeypatch.setattr(mod, "load_policy", lambda p, *a, _real=real, _m=mod.__name__, **k: (loaded.append((_m, str(p))), _real(p, *a, **k))[1])
    res = bench_grpo_step(steps=1, prompts_per_step=4, samples_per_prompt=4, max_new_tokens=6, model=str(tmp_path / "ckpt"))
    assert sorted(loaded) == [("rlref.bench", str(tmp_path / "ckpt")), ("rlref.trainer", str(tmp_path / "ckpt"))]
    assert res["settings"]["model"] == str(tmp_path / "ckpt") and res["settings"]["rows_per_step"] == 16
    assert len(res["rlref_s_all"]) == len(res["trl_s_all"]) == 1 and all(1 <= res[k] <= 6 for k in ("rlref_mean_completion_len", "trl_mean_completion_len"))
    monkeypatch.setitem(BENCHES, "grpo-step", lambda **kw: kw)   # the command line hands --model to the bench
    a = build_parser().parse_args(["bench", "grpo-step", "--model", str(tmp_path / "ckpt"), "--json"])
    capsys.readouterr(); a.func(a)
    assert json.loads(capsys.readouterr().out) == {"model": str(tmp_path / "ckpt")}
    a = build_parser().parse_args(["bench", "grpo-step", "--model", "m", "--prompts", "4", "--samples", "2", "--max-new-tokens", "3"])
    capsys.readouterr(); a.func(a)                               # the size flags reach the bench in its own names
    assert json.loads(capsys.readouterr().out) == dict(model="m", prompts_per_step=4, samples_per_prompt=2, max_new_tokens=3)
    a = build_parser().parse_args(["bench", "grpo-step", "--repeats", "2"])
    with pytest.raises(ValueError, match="--repeats applies to the rollout bench only"): a.func(a)
