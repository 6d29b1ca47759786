"""Chapter 34 (rlref.methods.error_counting): bad inputs fail with one clear message, the judges and calibration behave as stated,
GRPO with the oracle reward lowers the true error mass, and the sweep script is resumable. Fast (seconds)."""
import json, math, sys
from pathlib import Path
import pytest, torch
from rlref.methods.error_counting import (AXES, ARMS, ALL_PROMPTS, garment, rendering, error_mass, explicit_judge, implicit_judge,
    group_calibrate, check_scores, judge_reward_func, arm_reward_func, simulated_judge, reference_rendering, rubric_reward, oracle_reward,
    train_arm, within_group_spearman, render, PERSONS, FactorisedPolicy, prompt_features)

ROOT = Path(__file__).resolve().parents[1]

@pytest.mark.parametrize("call,msg", [
    (lambda: garment("mauve"), "unknown colour value 'mauve'"),
    (lambda: garment("red", neckline="turtle"), "unknown neckline value 'turtle'"),
    (lambda: garment("red", sleeve=7), "unknown sleeve value 7"),
    (lambda: rendering("red", placement=5), "unknown placement value 5"),
    (lambda: rendering("red", identity="morph"), "unknown identity value 'morph'"),
    (lambda: explicit_judge(torch.zeros(2, 6), p_report=1.5), "p_report must be a number in"),
    (lambda: explicit_judge(torch.zeros(2, 6), confusion=-0.2), "confusion must be a number in"),
    (lambda: explicit_judge(torch.zeros(2, 6), hallucination_rate=-1), "hallucination_rate must be a number in"),
    (lambda: implicit_judge(torch.zeros(2, 6), sigma=float("inf")), "sigma must be a number in"),
    (lambda: implicit_judge(torch.zeros(2, 6), harshness=(1, 1, 1, 0, 1, 1)), "harshness must hold one positive scale per axis"),
    (lambda: reference_rendering(ALL_PROMPTS[:2], centre_prob=1.1), "centre_prob must be a number in"),
    (lambda: simulated_judge("implicit", sigma=-1.0), "sigma must be a number in"),
    (lambda: simulated_judge("vlm"), "kind must be 'explicit' or 'implicit'"),
    (lambda: arm_reward_func("rar"), "arm must be one of"),
    (lambda: group_calibrate(torch.zeros(6, 6), 4), "N a multiple of group_size"),
    (lambda: check_scores(torch.zeros(7, 6), 8, 6), "shape (7, 6) for 8 renderings"),
    (lambda: check_scores(torch.zeros(8, 5), 8, 6), "one score per axis"),
    (lambda: check_scores(torch.full((8, 6), float("nan")), 8, 6), "non-finite score"),
    (lambda: error_mass(torch.zeros(3, 6, dtype=torch.long), torch.zeros(3, 4, dtype=torch.long)), "need renderings (N, 7)"),
])
def test_bad_inputs(call, msg):
    with pytest.raises(ValueError, match=None) as e: call()
    assert msg in str(e.value), str(e.value)

def test_judge_with_wrong_number_of_scores_fails_in_the_reward():
    p = [[0, *garment("red")]] * 8
    c = [list(rendering("red"))] * 8
    with pytest.raises(ValueError, match=r"shape \(8, 5\) for 8 renderings"):
        judge_reward_func(lambda p, c: torch.zeros(len(c), 5))(p, c)

def test_error_mass_and_judges():
    g = torch.tensor([garment("teal", "stripes", "long", "v")] * 3)
    r = torch.tensor([rendering("teal", "stripes", "long", "v", placement=2, shading="right"),        # valid: free attributes
                      rendering("blue", "stripes", "long", "v"),                                       # one hue off: minor
                      rendering("red", "solid", "sleeveless", "crew", placement=-3, identity="repaint")])
    E = error_mass(r, g)
    assert E.sum(1).tolist() == [0.0, 1.0, 5 + 3 + 5 + 1 + 1 + 5]
    assert torch.equal(explicit_judge(E, p_report=1, hallucination_rate=0, confusion=0), E)
    assert torch.equal(implicit_judge(E, sigma=0), E)
    gen = torch.Generator().manual_seed(0)
    S = explicit_judge(torch.zeros(20000, 6), generator=gen)                     # only hallucinations on clean renderings
    assert abs(float((S > 0).float().mean()) - (1 - math.exp(-0.3))) < 0.02
    s = torch.randn(16, 6) * torch.tensor([1, 10, 100, 1, 1, 1.])
    rt = group_calibrate(s, 8)
    assert torch.allclose(rt.view(2, 8, 6).sum(1), torch.zeros(2, 6), atol=1e-4)
    assert torch.allclose(group_calibrate(s * 7 + 3, 8), rt, atol=1e-3)           # invariant to an axis's scale and offset

def test_rubric_penalises_valid_variation_and_rewards_the_reference():
    p = torch.tensor([[0, *garment("teal", "stripes", "long", "v")]])
    ref = reference_rendering(p, centre_prob=1.0)
    ok = torch.tensor([rendering("teal", "stripes", "long", "v", placement=1)])
    assert float(rubric_reward(ok, ref)) < 1.0 and float(error_mass(ok, p[:, 1:]).sum()) == 0.0
    assert float(rubric_reward(ref, ref)) == 1.0 and float(error_mass(ref, p[:, 1:]).sum()) > 0.0

def test_reward_functions_have_trl_signature():
    p = ALL_PROMPTS[:2].repeat_interleave(8, 0)
    y = FactorisedPolicy().sample(prompt_features(p), torch.Generator().manual_seed(0))
    for arm in ARMS:
        out = arm_reward_func(arm, seed=0)(p.tolist(), y.tolist(), extra="ignored")
        assert isinstance(out, list) and len(out) == 16 and all(isinstance(v, float) for v in out), arm
    assert oracle_reward(p.tolist(), y.tolist()) == (-error_mass(y, p[:, 1:]).sum(1)).tolist()
    assert within_group_spearman(torch.tensor(oracle_reward(p.tolist(), y.tolist())), -error_mass(y, p[:, 1:]).sum(1), 8) > 0.999
    assert render(PERSONS[0], y[0]).shape == (16, 16, 3)

def test_oracle_grpo_lowers_true_error_mass():
    out = train_arm("oracle", seed=0, steps=20, record_every=20)
    e0, e1 = out["curve"][0]["E"], out["curve"][-1]["E"]
    assert e1 < 0.6 * e0, (e0, e1)                                              # seeds 0-4 in the chapter: all below half after 25 steps

def test_sweep_is_resumable(tmp_path):
    "The sweep script, run as a process (tests never import experiment scripts), skips the rows already in its log."
    import subprocess
    out, script = tmp_path / "s.jsonl", ROOT / "experiments" / "34_error_counting" / "sweep.py"
    run = lambda: subprocess.run([sys.executable, str(script), "--seeds", "0", "--arms", "oracle", "rubric", "--steps", "3", "--out", str(out)],
                                 check=True, cwd=ROOT, capture_output=True, timeout=600)
    run()
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [r["arm"] for r in rows] == ["oracle", "rubric"] and len(rows[0]["samples"]) == 3 and len(rows[0]["samples"][0]) == 8
    run()
    assert len(out.read_text().splitlines()) == 2                                # nothing rerun