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
