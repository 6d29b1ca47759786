"""Tensor-level building blocks of a from-scratch GRPO course: masked_mean's empty-mask option,
masked_normalize, the naive policy-gradient loss and its dispatcher, group_normalized_rewards and
grpo_microbatch_train_step: values on literal tensors against hand computation, gradient equalities,
(B, 1) advantages, and gradient accumulation equal to one step on the whole batch."""
import math
import pytest
import torch

from rlref.core import masked_mean, masked_normalize
from rlref.advantages import group_normalized_rewards, group_advantages
from rlref.losses import (naive_policy_gradient_loss, policy_gradient_token_loss, grpo_microbatch_train_step, clipped_surrogate,
                          aggregate_loss, grpo_loss, PG_LOSS_KINDS)

V = torch.tensor([[1., 2., 3.], [4., 5., 6.]])
M = torch.tensor([[1, 1, 0], [0, 0, 0]])
LP = torch.tensor([[-0.5, -1.0, -2.0], [-0.1, -0.3, -3.0]])            # (B, T) = (2, 3)
A = torch.tensor([1.0, -0.5])                                          # (B,)


# masked_mean / masked_normalize
def test_masked_mean_empty_default_zero_and_nan_option():
    assert torch.equal(masked_mean(V, M, dim=1), torch.tensor([1.5, 0.0]))
    nan_rows = masked_mean(V, M, dim=1, empty=float("nan"))
    assert nan_rows[0].item() == 1.5 and math.isnan(nan_rows[1].item())
    plain = (V * M).sum(1) / M.sum(1)                                   # the course's sum / count
    assert torch.equal(nan_rows.isnan(), plain.isnan()) and nan_rows[0] == plain[0]
    assert masked_mean(V, M * 0).item() == 0.0
    assert math.isnan(masked_mean(V, M * 0, empty=float("nan")).item())
    assert masked_mean(V, M * 0, empty=-1.0).item() == -1.0
    assert masked_mean(V, M, empty=float("nan")).item() == 1.5          # a non-empty mask: the option changes nothing


def test_masked_mean_nan_option_keeps_gradient_of_valid_rows():
    x = V.clone().requires_grad_()
    out = masked_mean(x, M, dim=1, empty=float("nan"))
    out[0].backward()
    assert torch.equal(x.grad, torch.tensor([[.5, .5, 0.], [0., 0., 0.]]))


def test_masked_normalize_values():
    assert masked_normalize(V, M, 2.0).item() == 1.5                   # (1 + 2) / 2
    assert torch.equal(masked_normalize(V, M, 3.0, dim=1), torch.tensor([1.0, 0.0]))
    assert torch.equal(masked_normalize(V, M, 4.0, dim=0), torch.tensor([0.25, 0.5, 0.0]))
    assert torch.allclose(masked_normalize(V, M, M.sum()), masked_mean(V, M))
    with pytest.raises(ValueError, match="normalize_constant must be > 0"): masked_normalize(V, M, 0)
    with pytest.raises(ValueError, match="mask shape"): masked_normalize(V, M[:, :2], 1.0)


def test_aggregate_modes_are_masked_mean_and_normalize():
    torch.manual_seed(0)
    pt, m = torch.randn(3, 4), torch.tensor([[1., 1., 1., 1.], [1., 1., 0., 0.], [1., 0., 0., 0.]])
    assert torch.equal(aggregate_loss(pt, m, "grpo"), masked_mean(pt, m, dim=-1).mean())
    assert torch.equal(aggregate_loss(pt, m, "bnpo"), masked_mean(pt, m))
    assert torch.equal(aggregate_loss(pt, m, "dr_grpo", max_len=6), masked_normalize(pt, m, 18))
    assert torch.equal(aggregate_loss(pt, m, "dapo", num_items_in_batch=20), masked_normalize(pt, m, 20.0))
    by_hand = sum(pt[i, :int(m[i].sum())].sum() for i in range(3)) / 18
    assert torch.allclose(aggregate_loss(pt, m, "dr_grpo", max_len=6), by_hand)


# the naive policy-gradient loss
def test_naive_loss_values_by_hand():
    out = naive_policy_gradient_loss(A, LP)
    assert torch.allclose(out, torch.tensor([[0.5, 1.0, 2.0], [-0.05, -0.15, -1.5]]))
    assert torch.equal(naive_policy_gradient_loss(A[:, None], LP), out)    # (B, 1) is (B,)
    per_tok = torch.tensor([[1., 0., 2.], [0., 1., 0.]])
    assert torch.equal(naive_policy_gradient_loss(per_tok, LP), -per_tok * LP)   # (B, T) advantages as they are


def test_naive_gradient_equals_on_policy_surrogate_value_differs():
    x = LP.clone().requires_grad_()
    naive_policy_gradient_loss(A, x).sum().backward(); g_naive = x.grad.clone(); x.grad = None
    surr = clipped_surrogate(x, x.detach(), A)
    surr.sum().backward()
    assert torch.equal(g_naive, x.grad)
    assert torch.equal(g_naive, -A[:, None].expand(2, 3))
    assert torch.equal(surr.detach(), -A[:, None].expand(2, 3))       # value -A, whatever log pi
    gap = (naive_policy_gradient_loss(A, LP) - surr.detach()).abs().max().item()
    assert abs(gap - 3.0) < 1e-6                                       # 2 - (-1) on token (0, 2)


def test_no_baseline_vs_with_baseline_gradients():
    R = torch.tensor([1., 0., 0., 1.])
    x = torch.full((4, 2), -0.7, requires_grad=True)
    naive_policy_gradient_loss(R, x).sum().backward(); g_raw = x.grad[:, 0].clone(); x.grad = None
    naive_policy_gradient_loss(group_advantages(R, 4, scale="none"), x).sum().backward()
    assert torch.equal(g_raw, torch.tensor([-1., 0., 0., -1.]))       # wrong completions are not pushed down
    assert torch.equal(x.grad[:, 0], torch.tensor([-.5, .5, .5, -.5]))


def test_naive_loss_bad_shapes():
    with pytest.raises(ValueError, match="policy_logprobs must be"): naive_policy_gradient_loss(A, LP[0])
    with pytest.raises(ValueError, match="advantages must be"): naive_policy_gradient_loss(torch.ones(3), LP)
    with pytest.raises(ValueError, match="advantages must be"): naive_policy_gradient_loss(torch.ones(2, 2), LP)


# the dispatcher
def test_policy_gradient_token_loss_kinds():
    old = LP + torch.tensor([[0.0, 0.5, -0.5], [0.0, 0.0, 0.0]])
    l0, meta0 = policy_gradient_token_loss(LP, "no_baseline", raw_rewards=A[:, None])
    l1, _ = policy_gradient_token_loss(LP, "reinforce_with_baseline", advantages=A)
    l2, meta2 = policy_gradient_token_loss(LP, "grpo_clip", advantages=A[:, None], old_logprobs=old, cliprange=0.2)
    assert torch.equal(l0, naive_policy_gradient_loss(A, LP)) and torch.equal(l1, l0) and meta0 == {}
    assert torch.equal(l2, clipped_surrogate(LP, old, A, 0.2))
    assert abs(meta2["clip_frac"] - 1 / 6) < 1e-7 and "ratio" not in meta2
    ratio = torch.exp(LP - old)                                        # by hand: -min(rho A, clip(rho) A)
    by_hand = -torch.minimum(ratio * A[:, None], ratio.clamp(0.8, 1.2) * A[:, None])
    assert torch.allclose(l2, by_hand)
    assert set(PG_LOSS_KINDS) == {"no_baseline", "reinforce_with_baseline", "grpo_clip"}


@pytest.mark.parametrize("kind,kw,msg", [
    ("no_baseline", {}, "needs raw_rewards"),
    ("reinforce_with_baseline", {"raw_rewards": A}, "needs advantages"),
    ("grpo_clip", {"advantages": A}, "needs old_logprobs, cliprange"),
    ("ppo", {}, "unknown policy-gradient loss kind"),
])
def test_policy_gradient_token_loss_refuses(kind, kw, msg):
    with pytest.raises(ValueError, match=msg): policy_gradient_token_loss(LP, kind, **kw)


# group_normalized_rewards
def _reward(response, ground_truth):
    return {"reward": float(response == ground_truth), "format_reward": float(response.isdigit())}


RESP = ["7", "5", "x", "6", "3", "1", "2", "0"]
GTS = ["7"] * 4 + ["9"] * 4


def test_group_normalized_rewards_by_hand():
    adv, raw, meta = group_normalized_rewards(_reward, RESP, GTS, 4)
    assert torch.equal(raw, torch.tensor([1., 0., 0., 0., 0., 0., 0., 0.]))
    sample_std = math.sqrt((0.75 ** 2 + 3 * 0.25 ** 2) / 3)           # 0.5, divisor G - 1
    assert torch.allclose(adv[:4], torch.tensor([0.75, -0.25, -0.25, -0.25]) / (sample_std + 1e-6))
    assert not torch.allclose(adv[0], torch.tensor(0.75 / (math.sqrt(0.75 / 4) + 1e-6)))   # not the population std
    assert torch.equal(adv[4:], torch.zeros(4))
    assert torch.equal(adv, group_advantages(raw, 4, eps=1e-6))
    assert meta["reward_mean"] == 0.125 and meta["reward_max"] == 1.0 and meta["reward_min"] == 0.0
    assert meta["zero_std_frac"] == 0.5 and meta["format_reward_mean"] == 7 / 8


def test_group_normalized_rewards_eps_float_reward_and_no_std():
    adv, raw, _ = group_normalized_rewards(lambda r, gt: float(r == gt), RESP, GTS, 4, advantage_eps=1e-4)
    assert torch.equal(adv, group_advantages(raw, 4))                  # the trainer's default eps 1e-4
    adv_n, _, _ = group_normalized_rewards(_reward, RESP, GTS, 4, normalize_by_std=False)
    assert torch.equal(adv_n, torch.tensor([.75, -.25, -.25, -.25, 0., 0., 0., 0.]))
    with pytest.raises(ValueError, match="same length B"): group_normalized_rewards(_reward, RESP, GTS[:4], 4)
    with pytest.raises(ValueError, match="without a 'reward' key"): group_normalized_rewards(lambda r, g: {"x": 1}, RESP, GTS, 4)
    with pytest.raises(ValueError, match="does not divide"): group_normalized_rewards(_reward, RESP, GTS, 3)


# grpo_microbatch_train_step
def _batch(seed=5):
    g = torch.Generator().manual_seed(seed)
    lp = torch.randn(4, 5, generator=g)
    old = lp + 0.3 * torch.randn(4, 5, generator=g)
    m = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 0, 0, 0, 0]]).float()
    return lp, old, m, torch.tensor([1., -1., .5, -.5])


@pytest.mark.parametrize("kind", PG_LOSS_KINDS)
def test_microbatch_accumulation_equals_one_step(kind):
    lp, old, m, adv = _batch()
    kw = dict(raw_rewards=adv) if kind == "no_baseline" else dict(advantages=adv, old_logprobs=old, cliprange=0.2)
    x = lp.clone().requires_grad_()
    whole, _ = grpo_microbatch_train_step(x, m, 1, kind, **kw)
    g_whole = x.grad.clone(); x.grad = None
    parts = []
    for i in (0, 2):
        kw_i = {k: (v[i:i + 2, None] if k in ("raw_rewards", "advantages") else v[i:i + 2]) if torch.is_tensor(v) else v for k, v in kw.items()}
        parts.append(grpo_microbatch_train_step(x[i:i + 2], m[i:i + 2], 2, kind, **kw_i)[0])   # (b, 1) advantages
    assert torch.allclose(x.grad, g_whole, atol=1e-7)
    assert torch.allclose(parts[0] + parts[1], whole, atol=1e-7)
    assert not whole.requires_grad


def test_microbatch_step_value_and_scaling():
    lp, old, m, adv = _batch()
    x = lp.clone().requires_grad_()
    loss, meta = grpo_microbatch_train_step(x, m, 4, "grpo_clip", advantages=adv, old_logprobs=old, cliprange=0.2)
    ref, _ = grpo_loss(lp, old, adv, m, "grpo", 0.2)
    assert torch.allclose(loss * 4, ref)                               # the grpo aggregation, divided by the accumulation steps
    by_hand = sum(clipped_surrogate(lp, old, adv, 0.2)[i, :int(m[i].sum())].mean() for i in range(4)) / 4 / 4
    assert torch.allclose(loss, by_hand)
    assert set(meta) >= {"clip_frac", "clip_frac_low", "clip_frac_high"}
    y = lp.clone().requires_grad_()
    grpo_microbatch_train_step(y, m, 1, "grpo_clip", advantages=adv, old_logprobs=old, cliprange=0.2)
    assert torch.allclose(x.grad * 4, y.grad)                          # the gradient is scaled by 1/k too
    y.grad = None
    grpo_microbatch_train_step(y, m, 1, "no_baseline", raw_rewards=adv)
    assert torch.allclose(y.grad, -adv[:, None] * m / m.sum(1, keepdim=True) / 4)   # d/d logp of mean_i mean_t(-A_i logp)


def test_microbatch_step_refuses():
    lp, old, m, adv = _batch()
    x = lp.clone().requires_grad_()
    with pytest.raises(ValueError, match="response_mask has shape"): grpo_microbatch_train_step(x, m[:, :3], 1, "no_baseline", raw_rewards=adv)
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be"): grpo_microbatch_train_step(x, m, 0, "no_baseline", raw_rewards=adv)
    with pytest.raises(ValueError, match="needs raw_rewards"): grpo_microbatch_train_step(x, m, 1, "no_baseline", advantages=adv)


def test_b1_advantages_accepted_everywhere_b_is():
    lp, old, m, adv = _batch()
    col = adv[:, None]
    assert torch.equal(clipped_surrogate(lp, old, col), clipped_surrogate(lp, old, adv))
    assert torch.equal(grpo_loss(lp, old, col, m)[0], grpo_loss(lp, old, adv, m)[0])
    assert torch.equal(naive_policy_gradient_loss(col, lp), naive_policy_gradient_loss(adv, lp))
    for kind, kw in (("no_baseline", "raw_rewards"), ("reinforce_with_baseline", "advantages")):
        assert torch.equal(policy_gradient_token_loss(lp, kind, **{kw: col})[0], policy_gradient_token_loss(lp, kind, **{kw: adv})[0])

def test_entropy_methods_accept_column_advantages():
    "(B, 1) advantages are accepted wherever (B,) is, chapter 11's covariance and Entrocraft selection included."
    from rlref.methods.entropy import token_covariance, entrocraft_keep
    lp, m, a = torch.randn(3, 4), torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]]), torch.tensor([1.0, -1.0, 0.5])
    assert torch.equal(token_covariance(lp, a[:, None], m), token_covariance(lp, a, m))
    for mode in ("pos", "neg", "all"): assert torch.equal(entrocraft_keep(a[:, None], m, mode), entrocraft_keep(a, m, mode))
