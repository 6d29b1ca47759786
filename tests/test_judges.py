"""Chapter 16 (rlref.methods.judges): bad judges fail loudly (no judges, mismatched weights, a wrong count, NaN/None/inf), the three
combination rules on literal verdicts, the task's gold and proxy scores on literal completions, the panels' acceptance rates
against their closed forms, and GRPO's 1/|o| and std scaling against Dr. GRPO on literal tensors."""
import math
import pytest
import torch
from rlref.advantages import group_advantages
from rlref.losses import aggregate_loss
from rlref.methods.judges import (Judge, JudgePanel, combine_verdicts, check_scores, gold_reward, proxy_reward, parse_completion, n_ops,
                                  make_reward, make_task, held_out, arm_config, split_targets, RewardModelJudge, rm_features, auc, RM_CHARS)

even = lambda prompts, completions, **kw: [float(int(c) % 2 == 0) for c in completions]

@pytest.mark.parametrize("bad, msg", [
    (lambda p, c, **kw: [1.0], "returned 1 score(s) for 2 completions"),
    (lambda p, c, **kw: [1.0, float("nan")], "nan for completion 1"),
    (lambda p, c, **kw: [float("inf"), 1.0], "inf for completion 0"),
    (lambda p, c, **kw: [None, 1.0], "None for completion 0"),
    (lambda p, c, **kw: "11", "returned '11'"),
])
def test_a_bad_judge_is_one_value_error(bad, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        JudgePanel([Judge("even", even), lambda prompts, completions, **kw: bad(prompts, completions)])([""] * 2, ["2", "4"])
    with pytest.raises(ValueError, match="every score must be a finite number|for 2 completions"):
        Judge("bad", lambda prompts, completions, **kw: bad(prompts, completions))([""] * 2, ["2", "4"])

def test_panel_construction_errors():
    with pytest.raises(ValueError, match="at least one judge"): JudgePanel([])
    with pytest.raises(ValueError, match=r"one weight per judge \(2 judges\)"): JudgePanel([even, even], weights=[1.0])
    with pytest.raises(ValueError, match=r"weights\[1\] must be a finite number >= 0"): JudgePanel([even, even], weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="must not all be 0"): JudgePanel([even], weights=[0.0])
    with pytest.raises(ValueError, match="combine must be one of"): JudgePanel([even], combine="vote")
    with pytest.raises(ValueError, match="not callable"): JudgePanel([even, 3])
    with pytest.raises(ValueError, match="flip must be a probability"): Judge("even", even, flip=-0.1)
    with pytest.raises(ValueError, match="unknown reward design"): make_reward("vote_p0.1")

def test_combination_rules_on_literal_verdicts():
    v = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.9, 0.6, 0.2]], dtype=torch.float64)
    assert combine_verdicts(v, "and").tolist() == [1.0, 0.0, 0.0, 0.0]
    assert combine_verdicts(v, "majority").tolist() == [1.0, 1.0, 0.0, 1.0]
    torch.testing.assert_close(combine_verdicts(v, "mean"), torch.tensor([1.0, 2 / 3, 1 / 3, 1.7 / 3], dtype=torch.float64))
    assert combine_verdicts(v, "majority", [3.0, 1.0, 1.0]).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert combine_verdicts(v, "mean", [1.0, 0.0, 0.0]).tolist() == [1.0, 1.0, 1.0, 0.9]
    panel = JudgePanel([Judge("even", even), lambda prompts, completions, **kw: [float(int(c) > 3) for c in completions]], "and")
    assert panel([""] * 4, ["2", "4", "5", "6"]) == [0.0, 1.0, 0.0, 1.0]

def test_gold_and_proxy_on_literal_completions():
    comps = ["ok so 3*5+2", "17", "3*5+2", "1+1+1+1+1+1+11", "ok ok ok ok 9+8", "x"]
    assert gold_reward(None, comps, [17] * 6) == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert [round(x, 6) for x in proxy_reward(None, comps, [17] * 6)] == [1.12, 1.0, 1.0, 1.0, 1.24, 0.02]
    assert parse_completion("so -3+20") == ("so ", "-3+20") and n_ops("(1+2)*3-4") == 3 and n_ops("1+") == 0

def test_panel_acceptance_matches_closed_forms():
    p, n = 0.2, 20_000
    rate = lambda d, c: sum(make_reward(d, seed=5)([""] * n, [c] * n, target=[17] * n)) / n
    assert abs(rate("and_p0.2", "3*5+2") - (1 - p) ** 3) < 0.015
    assert abs(rate("and_p0.2", "9+8") - p * (1 - p) ** 2) < 0.015
    assert abs(rate("majority_p0.2", "9+8") - ((1 - p) ** 2 + 2 * p ** 2 * (1 - p))) < 0.015
    assert abs(rate("single_p0.2", "3*5+2") - (1 - p)) < 0.015

def test_grpo_length_weighting_vs_dr_grpo_on_literal_tensors():
    R, L, T = torch.tensor([1.0, 1.0, 0.0, 0.0]), torch.tensor([4, 12, 4, 12]), 12
    def weights(A, mode):
        mask = (torch.arange(T) < L[:, None]).float()
        logp = torch.zeros(4, T, requires_grad=True)
        aggregate_loss(-A[:, None] * logp, mask, mode, max_len=T).backward()
        return -logp.grad[:, 0]
    a_g, a_d = group_advantages(R, 4), group_advantages(R, 4, "none")
    w_g, w_d = weights(a_g, "grpo"), weights(a_d, "dr_grpo")
    torch.testing.assert_close(w_g, a_g / (4 * L))                     # A_i / (G |o_i|)
    torch.testing.assert_close(w_d, a_d / (4 * T))                     # A_i / (G L_max)
    assert w_g[3] / w_g[2] == pytest.approx(1 / 3)                      # the long wrong answer: a third of the per-token penalty
    # a graded length-correlated score on an all-wrong group: std scaling turns a 0.02/char bonus into advantages > 1
    wrong = ["2*9", "ok 2*9", "ok so 2*9", "ok so hmm 2*9"]
    a = group_advantages(torch.tensor(proxy_reward(None, wrong, [17] * 4)), 4)
    assert (a.diff() > 0).all() and a[-1] > 1
    assert group_advantages(torch.tensor(gold_reward(None, wrong, [17] * 4)), 4).abs().max() == 0

def test_task_splits_are_held_out_by_target_and_arms_are_trainer_configs(tmp_path):
    task = make_task("judge_expr", seed=0)
    tr, te, va = set(task.train["target"]), set(held_out(task, "test")["target"]), set(held_out(task, "val")["target"])
    assert not (tr & te) and not (tr & va) and not (te & va) and len(te) == 48 and len(va) == 24
    places = lambda ts: {(k, t // 10 ** k % 10) for t in ts for k in (0, 1)}
    assert places(te | va) <= places(tr)                               # every digit a held-out answer needs is trained in its place
    assert split_targets() == split_targets() and split_targets(split_seed=1) != split_targets()
    with pytest.raises(ValueError, match="test_frac"): split_targets(test_frac=0.95, val_frac=0.1)
    assert gold_reward(None, list(task.train["answer"]), list(task.train["target"])) == [1.0] * len(task.train)
    cfg = arm_config("strict", "drgrpo", 0, tmp_path)
    assert (cfg.loss_type, cfg.scale_rewards, cfg.task) == ("dr_grpo", "none", "judge_expr")
    assert (arm_config("proxy", "grpo", 0, tmp_path).loss_type, arm_config("proxy", "grpo", 0, tmp_path).scale_rewards) == ("grpo", "group")

def test_learned_judge_learns_the_surface_of_gold_and_refuses_bad_training_data():
    c = ["3*5+2", "2*7+3", "ok 4*4+1", "9+8", "ok so 10+7", "3*5+2+0+0+0+0", "17", "1+16"]
    y = gold_reward(None, c, [17] * 8)
    rm = RewardModelJudge().fit(c, [17] * 8, y)
    p = rm(None, ["2*8+3", "9+8"], target=[17] * 2)                    # a wrong value of the gold shape beats a right value of the wrong shape
    assert p[0] > 0.5 > p[1]
    assert auc(rm.score(c, [17] * 8), y) == 1.0 and rm_features(c, [17] * 8).shape == (8, 8 + len(RM_CHARS))
    with pytest.raises(ValueError, match="both classes"): RewardModelJudge().fit(c[:3], [17] * 3, y[:3])
    with pytest.raises(ValueError, match="one label and one target"): RewardModelJudge().fit(c, [17] * 8, y[:5])
    with pytest.raises(ValueError, match="not fitted"): RewardModelJudge()(None, c, target=[17] * 8)
    with pytest.raises(ValueError, match="pass model="): make_reward("rm")
