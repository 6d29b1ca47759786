"""Bad inputs to the algebra (chapters 05 and 06) give one clear ValueError naming the problem, never a silent broadcast
or a NaN that spreads: wrong group sizes, mismatched shapes, out-of-range hyper-parameters, unknown names and
non-finite rewards in every advantage estimator. Plus the two documented edge cases: (B, 1) advantages are (B,),
and an all-zero mask gives a zero loss with a zero (finite) gradient."""
import pytest
import torch

from rlref.advantages import (group_advantages, rloo_advantages, reinforce_pp_advantages, gae_advantages,
                              dynamic_sampling_filter)
from rlref.losses import (clipped_surrogate, aggregate_loss, kl_estimate, importance_weights, grpo_loss, value_loss,
                          dpo_loss, AGGREGATION_MODES)

NAN, INF = float("nan"), float("inf")
B, T = 4, 3
R4 = torch.tensor([1., 0., 0., 1.])                                     # (B,)
M = torch.tensor([[1., 1., 1.], [1., 1., 0.], [1., 0., 0.], [1., 1., 1.]])   # (B, T)
LP = torch.full((B, T), -1.0)
OLD = torch.full((B, T), -1.1)
A = torch.tensor([1., -1., .5, -.5])


def tok(row=None, value=NAN):
    "(B, T) zeros with one non-finite entry in `row`."
    x = torch.zeros(B, T)
    if row is not None: x[row, 0] = value
    return x


BAD = {
    # group sizes
    "group_size does not divide": (lambda: group_advantages(torch.ones(6), 4), "group_size=4 does not divide the batch of 6"),
    "grpo G=1": (lambda: group_advantages(R4, 1), "needs at least 2 samples per prompt"),
    "rloo G=1": (lambda: rloo_advantages(R4, 1), "needs at least 2 samples per prompt"),
    "dynamic sampling G=1": (lambda: dynamic_sampling_filter(R4, 1), "needs at least 2 samples per prompt"),
    "reinforce_pp_baseline G=1": (lambda: reinforce_pp_advantages(R4, M, 1), "needs at least 2 samples"),
    "group_size not an int": (lambda: rloo_advantages(R4, 2.0), "group_size must be a positive int"),
    "rewards 2-D": (lambda: rloo_advantages(R4[:, None], 2), "rewards must be 1-D (B,), got shape (4, 1)"),
    "unknown scale": (lambda: group_advantages(R4, 2, scale="std"), "scale must be 'group', 'batch' or 'none'"),
    # non-finite rewards, in every estimator (a NaN must not be whitened into every advantage)
    "grpo NaN reward": (lambda: group_advantages(torch.tensor([1., NAN, 0., 1.]), 2), "non-finite values (nan/inf) at positions [1]"),
    "dr_grpo inf reward": (lambda: group_advantages(torch.tensor([1., 0., INF, 1.]), 2, "none"), "at positions [2]"),
    "rloo NaN reward": (lambda: rloo_advantages(torch.tensor([NAN, 0., 0., NAN]), 2), "at positions [0, 3]"),
    "reinforce_pp NaN reward": (lambda: reinforce_pp_advantages(torch.tensor([1., 0., NAN, 1.]), M), "at positions [2]"),
    "reinforce_pp NaN token reward": (lambda: reinforce_pp_advantages(R4, M, token_rewards=tok(1)),
                                      "token_rewards contain non-finite values (nan/inf) in rows [1]"),
    "reinforce_pp_baseline inf token reward": (lambda: reinforce_pp_advantages(R4, M, 2, token_rewards=tok(3, -INF)),
                                               "token_rewards contain non-finite values (nan/inf) in rows [3]"),
    "gae NaN token reward": (lambda: gae_advantages(tok(2), torch.zeros(B, T), M),
                             "token_rewards contain non-finite values (nan/inf) in rows [2]"),
    "gae inf value": (lambda: gae_advantages(torch.zeros(B, T), tok(0, INF), M),
                      "values contain non-finite values (nan/inf) in rows [0]"),
    "dynamic sampling NaN reward": (lambda: dynamic_sampling_filter(torch.tensor([1., 1., NAN, 0.]), 2), "at positions [2]"),
    # GAE hyper-parameters
    "gae lam > 1": (lambda: gae_advantages(torch.zeros(B, T), torch.zeros(B, T), M, lam=1.5), "lam must be in [0, 1], got 1.5"),
    "gae lam < 0": (lambda: gae_advantages(torch.zeros(B, T), torch.zeros(B, T), M, lam=-0.1), "lam must be in [0, 1], got -0.1"),
    "gae gamma > 1": (lambda: gae_advantages(torch.zeros(B, T), torch.zeros(B, T), M, gamma=1.01), "gamma must be in [0, 1], got 1.01"),
    "gae lam NaN": (lambda: gae_advantages(torch.zeros(B, T), torch.zeros(B, T), M, lam=NAN), "lam must be in [0, 1]"),
    # shapes
    "reinforce_pp mask wrong shape": (lambda: reinforce_pp_advantages(R4, M.T), "completion_mask has shape (3, 4), expected (4, *)"),
    "reinforce_pp token_rewards wrong shape": (lambda: reinforce_pp_advantages(R4, M, token_rewards=torch.zeros(B, 1)),
                                               "token_rewards has shape (4, 1), expected (4, 3)"),
    "gae values wrong shape": (lambda: gae_advantages(torch.zeros(B, T), torch.zeros(B, T + 1), M), "values has shape (4, 4)"),
    "gae mask wrong shape": (lambda: gae_advantages(torch.zeros(B, T), torch.zeros(B, T), M[:, :2]), "mask has shape (4, 2)"),
    "logprobs vs old_logprobs": (lambda: clipped_surrogate(LP, OLD[:, :2], A), "logprobs/old_logprobs must both be (B, T)"),
    "mask vs logprobs": (lambda: grpo_loss(LP, OLD, A, M[:2]), "mask has shape (2, 3), expected (4, 3)"),
    "advantages wrong batch": (lambda: grpo_loss(LP, OLD, A[:3], M), "advantages must be (B,), (B, 1) or (B, T) = (4, 3), got (3,)"),
    "advantages (1, T)": (lambda: grpo_loss(LP, OLD, torch.ones(1, T), M), "got (1, 3)"),
    "ref_logprobs wrong shape": (lambda: grpo_loss(LP, OLD, A, M, beta=0.1, ref_logprobs=LP[:, :2]), "logprobs/ref_logprobs must both be"),
    "is_weights wrong shape": (lambda: grpo_loss(LP, OLD, A, M, is_weights=torch.ones(B)), "is_weights has shape (4,)"),
    # loss hyper-parameters and names
    "eps_low = 0": (lambda: clipped_surrogate(LP, OLD, A, eps_low=0.0), "clip epsilons must be > 0, got eps_low=0.0"),
    "eps_high < 0": (lambda: grpo_loss(LP, OLD, A, M, eps_high=-0.1), "clip epsilons must be > 0, got eps_low=0.2, eps_high=-0.1"),
    "dual_clip = 1": (lambda: grpo_loss(LP, OLD, A, M, dual_clip=1.0), "dual_clip must be > 1, got 1.0"),
    "beta < 0": (lambda: grpo_loss(LP, OLD, A, M, beta=-0.04, ref_logprobs=LP), "beta must be >= 0, got -0.04"),
    "beta without reference": (lambda: grpo_loss(LP, OLD, A, M, beta=0.04), "beta != 0 needs ref_logprobs"),
    "unknown loss_type": (lambda: grpo_loss(LP, OLD, A, M, loss_type="token_mean"), "unknown aggregation mode 'token_mean'"),
    "unknown KL estimator": (lambda: kl_estimate(LP, OLD, "k4"), "unknown KL estimator 'k4'"),
    "unknown IS mode": (lambda: importance_weights(LP, OLD, M, mode="is"), "unknown importance-sampling mode 'is'"),
    "IS clip_max = 0": (lambda: importance_weights(LP, OLD, M, clip_max=0.0), "clip_max must be > 0, got 0.0"),
    "IS clip_min > clip_max": (lambda: importance_weights(LP, OLD, M, "token_mis", clip_max=2.0, clip_min=3.0),
                               "clip_min=3.0 must be <= clip_max=2.0"),
    "value clip = 0": (lambda: value_loss(LP, OLD, OLD, M, clip=0.0), "value clip must be > 0"),
    "DPO beta = 0": (lambda: dpo_loss(A, A, A, A, beta=0.0), "beta must be > 0"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_refused(case):
    fn, msg = BAD[case]
    with pytest.raises(ValueError) as e: fn()
    assert msg in str(e.value), (case, str(e.value))
    assert "\n" not in str(e.value)                                      # one line


def test_b1_advantages_are_sequence_advantages():
    "(B, 1) advantages (a column vector) are treated as (B,), in the loss and in its clip diagnostics."
    lp = LP.clone().requires_grad_()
    l1, m1 = grpo_loss(lp, OLD, A, M, loss_type="grpo")
    l2, m2 = grpo_loss(lp, OLD, A[:, None], M, loss_type="grpo")
    assert torch.equal(l1, l2) and m1 == m2
    assert torch.equal(clipped_surrogate(LP, OLD, A), clipped_surrogate(LP, OLD, A[:, None]))


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
def test_empty_mask_gives_zero_loss_and_zero_gradient(mode):
    "A batch with no valid token (every completion empty) contributes nothing: loss 0, gradient 0, no NaN."
    lp = LP.clone().requires_grad_()
    loss, met = grpo_loss(lp, OLD, A, torch.zeros(B, T), loss_type=mode, beta=0.04, ref_logprobs=OLD)
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(lp.grad, torch.zeros(B, T))
    assert met["clip_frac"] == 0.0 and met["kl"] == 0.0


def test_empty_completion_gets_zero_advantage():
    "An empty row of the mask in REINFORCE++ and GAE: zero advantages there, the other rows are unaffected."
    m = M.clone(); m[1] = 0
    adv = reinforce_pp_advantages(R4, m)
    assert torch.equal(adv[1], torch.zeros(T)) and torch.isfinite(adv).all()
    gae, ret = gae_advantages(torch.ones(B, T), torch.ones(B, T), m)
    assert torch.equal(gae[1], torch.zeros(T)) and torch.equal(ret[1], torch.zeros(T))


def test_nan_token_reward_no_longer_spreads():
    "The issue-14 failure: one NaN token reward used to make every advantage of the batch NaN through the whitening."
    finite = reinforce_pp_advantages(R4, M, token_rewards=tok())
    assert torch.isfinite(finite).all()
    with pytest.raises(ValueError, match=r"rows \[1\]"): reinforce_pp_advantages(R4, M, token_rewards=tok(1))
