"""Parity of rlref's algebra with TRL 1.16's own trainer code: GRPO (`GRPOTrainer._compute_loss`), RLOO
(`RLOOTrainer._generate_and_score_completions` for the advantages and `_compute_loss`) and Online DPO
(`trl.experimental.online_dpo.OnlineDPOTrainer.training_step`). The RLOO and Online DPO sections are further down.

How TRL's loss code is driven (not a re-typed copy of its formula):
  * a `GRPOTrainer` is created with `object.__new__` (no model, no dataset, no generation), and only the
    attributes `_compute_loss` reads are set, copied from a real `GRPOConfig` the way `GRPOTrainer.__init__`
    copies them (epsilon_low/high, beta, loss_type, max_completion_length, importance_sampling_level, ...);
  * `_get_per_token_logps_and_entropies` is replaced on that instance by a stub that returns a leaf tensor of
    per-token log-probs we control, so TRL's loss is a differentiable function of exactly the tensor rlref sees;
  * `_compute_loss(model, inputs)` then runs unmodified: ratio, clipping, k3 KL (with or without TRL's
    `use_bias_correction_kl`), aggregation by `loss_type`, gradient-accumulation scaling and its clip metrics.
Both the loss value and its gradient with respect to the per-token log-probs are compared.

Where TRL differs from the papers (documented in chapter 06 and tested both ways here):
  * `use_bias_correction_kl` defaults to True in TRL 1.16: k3 is multiplied by the ratio (DeepSeek-V3.2). The GRPO
    paper uses plain k3. rlref follows the paper by default; `grpo_loss(kl_ratio_correction=True)` matches TRL's default.
  * Under gradient accumulation TRL divides `grpo`/`bnpo`/`dr_grpo` micro-batch losses by the number of accumulation
    steps, and `dapo` by the token count of the whole generation batch. Summed over micro-batches, `grpo` and `dapo`
    give the paper's full-batch loss; `bnpo` gives the mean of micro-batch token means (not a paper definition).
"""
import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

trl = pytest.importorskip("trl")
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from rlref.losses import grpo_loss, aggregate_loss, clipped_surrogate, kl_estimate  # noqa: E402

TOL = 1e-6
B, T, P, MAX_LEN = 8, 7, 3, 12


class _Accel:
    "Single-process stand-in for accelerate.Accelerator: gather/reduce are identities."
    num_processes = 1
    sync_gradients = True
    def gather(self, x): return x
    def gather_for_metrics(self, x): return x
    def reduce(self, x, reduction="sum"): return x


def make_trainer(loss_type, epsilon_high=None, beta=0.0, bias_correction_kl=False, grad_accum=1, steps_per_generation=1):
    "A GRPOTrainer with only what `_compute_loss` reads, set from a real GRPOConfig as __init__ does."
    args = GRPOConfig(output_dir="/tmp/rlref_trl_parity", use_cpu=True, bf16=False, report_to="none",
                      loss_type=loss_type, epsilon=0.2, epsilon_high=epsilon_high, beta=beta,
                      use_bias_correction_kl=bias_correction_kl, max_completion_length=MAX_LEN,
                      per_device_train_batch_size=B, num_generations=4, gradient_accumulation_steps=grad_accum,
                      steps_per_generation=steps_per_generation)
    tr = object.__new__(GRPOTrainer)
    tr.args = args
    tr.loss_type, tr.beta = args.loss_type, args.beta
    tr.epsilon_low = args.epsilon
    tr.epsilon_high = args.epsilon_high if args.epsilon_high is not None else args.epsilon
    tr.max_completion_length = args.max_completion_length
    tr.importance_sampling_level = args.importance_sampling_level
    tr.off_policy_mask_threshold = args.off_policy_mask_threshold
    tr.top_entropy_quantile = args.top_entropy_quantile
    tr.use_vllm, tr.vllm_importance_sampling_correction = False, args.vllm_importance_sampling_correction
    tr._entropy_bonus_enabled, tr.aux_loss_enabled = False, False
    tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    tr.model = SimpleNamespace(training=True)
    tr.accelerator = _Accel()
    tr.current_gradient_accumulation_steps = grad_accum
    return tr


def trl_loss(tr, logps, old, adv, mask, ref=None, num_items_in_batch=None):
    "Run TRL's `_compute_loss` with per-token log-probs `logps` (a leaf we differentiate)."
    leaf = logps.detach().clone().requires_grad_()
    tr._get_per_token_logps_and_entropies = lambda model, input_ids, attention_mask, logits_to_keep, **kw: (
        leaf, torch.zeros_like(leaf), None)
    n = mask.shape[0]
    inputs = {"prompt_ids": torch.zeros(n, P, dtype=torch.long), "prompt_mask": torch.ones(n, P, dtype=torch.long),
              "completion_ids": torch.zeros(n, mask.shape[1], dtype=torch.long), "completion_mask": mask,
              "advantages": adv, "old_per_token_logps": old,
              "num_items_in_batch": torch.tensor(float(mask.sum() if num_items_in_batch is None else num_items_in_batch))}
    if ref is not None: inputs["ref_per_token_logps"] = ref
    loss = tr._compute_loss(tr.model, inputs)
    loss.backward()
    return loss.detach(), leaf.grad


def rlref_loss(logps, old, adv, mask, **kw):
    leaf = logps.detach().clone().requires_grad_()
    loss, metrics = grpo_loss(leaf, old, adv, mask, **kw)
    loss.backward()
    return loss.detach(), leaf.grad, metrics


@pytest.fixture(scope="module")
def batch():
    g = torch.Generator().manual_seed(0)
    logps = -torch.rand(B, T, generator=g) * 3                              # (B, T) learner log-probs
    old = logps + 0.3 * torch.randn(B, T, generator=g)                      # ratios well outside [0.8, 1.28]
    ref = logps + 0.2 * torch.randn(B, T, generator=g)
    adv = torch.randn(B, generator=g)
    lengths = torch.tensor([7, 3, 5, 1, 6, 7, 2, 4])
    mask = (torch.arange(T)[None] < lengths[:, None]).float()              # (B, T) ragged
    return logps, old, ref, adv, mask


CASES = [(lt, eh, beta, bc) for lt in ("grpo", "dr_grpo", "dapo", "bnpo") for eh in (None, 0.28)
         for beta, bc in ((0.0, False), (0.04, False), (0.04, True))]


@pytest.mark.parametrize("loss_type,eps_high,beta,bias_corr", CASES)
def test_grpo_loss_matches_trl(batch, loss_type, eps_high, beta, bias_corr):
    logps, old, ref, adv, mask = batch
    tr = make_trainer(loss_type, eps_high, beta, bias_corr)
    l_trl, g_trl = trl_loss(tr, logps, old, adv, mask, ref if beta else None)
    l_me, g_me, met = rlref_loss(logps, old, adv, mask, loss_type=loss_type, eps_low=0.2, eps_high=eps_high, beta=beta,
                                 ref_logprobs=ref if beta else None, max_len=MAX_LEN, kl_ratio_correction=bias_corr)
    assert abs(l_trl - l_me) <= TOL, (l_trl, l_me)
    assert (g_trl - g_me).abs().max() <= TOL
    assert g_me.abs().max() > 1e-3                                          # a real gradient, not zeros
    m = tr._metrics["train"]
    assert met["clip_frac_low"] > 0 and met["clip_frac_high"] > 0             # both clips are active
    assert abs(m["clip_ratio/low_mean"][-1] - met["clip_frac_low"]) <= TOL
    assert abs(m["clip_ratio/high_mean"][-1] - met["clip_frac_high"]) <= TOL
    if beta: assert abs(m["kl"][-1] - met["kl"]) <= TOL


def test_kl_bias_correction_changes_the_gradient(batch):
    "TRL's default (ratio x k3) and the paper's k3 differ, so testing both is not vacuous."
    logps, old, ref, adv, mask = batch
    _, g_paper, _ = rlref_loss(logps, old, adv, mask, loss_type="grpo", beta=0.04, ref_logprobs=ref)
    _, g_trl_default, _ = rlref_loss(logps, old, adv, mask, loss_type="grpo", beta=0.04, ref_logprobs=ref, kl_ratio_correction=True)
    assert (g_paper - g_trl_default).abs().max() > 1e-4


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "bnpo", "dr_grpo"])
def test_gradient_accumulation_vs_paper(batch, loss_type):
    "Two micro-batches of 4 with TRL's accumulation scaling, summed, vs rlref on the whole batch of 8."
    logps, old, ref, adv, mask = batch
    total = 0.0
    for sl in (slice(0, 4), slice(4, 8)):
        tr = make_trainer(loss_type, 0.28, 0.0, False, grad_accum=2, steps_per_generation=2)
        l, _ = trl_loss(tr, logps[sl], old[sl], adv[sl], mask[sl], num_items_in_batch=mask.sum())
        total += float(l)
    full, _, _ = rlref_loss(logps, old, adv, mask, loss_type=loss_type, eps_high=0.28, max_len=MAX_LEN)
    pt = clipped_surrogate(logps, old, adv, 0.2, 0.28)
    if loss_type == "bnpo":   # TRL's bnpo = mean of micro-batch token means; not the full-batch token mean
        halves = [aggregate_loss(pt[s], mask[s], "bnpo") for s in (slice(0, 4), slice(4, 8))]
        assert abs(total - float(sum(halves) / 2)) <= TOL
        assert abs(total - float(full)) > 1e-4
    else:                     # grpo, dapo (with num_items_in_batch) and dr_grpo: summed micro-batches = paper's full batch
        assert abs(total - float(full)) <= TOL, (total, float(full))


def test_bad_input_is_refused(batch):
    logps, old, ref, adv, mask = batch
    with pytest.raises(ValueError, match="must be > 0"): grpo_loss(logps, old, adv, mask, eps_low=0.0)
    with pytest.raises(ValueError, match="mask has shape"): grpo_loss(logps, old, adv, mask[:, :3])
    with pytest.raises(ValueError, match="needs ref_logprobs"): grpo_loss(logps, old, adv, mask, beta=0.1)
    with pytest.raises(ValueError, match="unknown aggregation"): grpo_loss(logps, old, adv, mask, loss_type="sum")


# ---------------------------------------------------------------------------------------------------------------------
# RLOO: TRL's RLOOTrainer (trl/trainer/rloo_trainer.py in TRL 1.16) against rloo_advantages + the loss the
# `arith-rloo` recipe uses (grpo_loss with loss_type="seq_mean_token_sum", KL as -kl_coef * sum_t k1 in the reward).
#
# TRL's own code runs unmodified on literal tensors:
#   * advantages: `_generate_and_score_completions` with `_generate` (token ids of chosen lengths), `_calculate_rewards`
#     (our reward vector) and `_get_per_token_logps_and_entropies` (our old / reference per-token log-probs) stubbed;
#     everything after that (KL in the reward, leave-one-out baseline, optional whitening) is TRL's;
#   * loss: `_compute_loss` with the per-token log-probs stub returning a leaf we differentiate.
# Differences by design (chapter 06 has the table): TRL's ratio is per *sequence* (exp of the summed log-ratio) and
# the loss is the mean over sequences; rlref clips per token and sums over tokens. With one update per batch (ratio 1)
# the gradients are identical and the loss values differ by the length factor; off-policy they differ, and TRL's
# loss is rlref's clipped_surrogate applied to sequence log-probs.
# ---------------------------------------------------------------------------------------------------------------------
from collections import deque  # noqa: E402
from trl import RLOOConfig, RLOOTrainer  # noqa: E402
from rlref.advantages import rloo_advantages  # noqa: E402

G_RLOO = 4
RLOO_LENGTHS = [7, 3, 5, 1, 6, 7, 2, 4]
RLOO_REWARDS = torch.tensor([1., 0., 0., 1., 0.5, 0.2, 0.9, 0.])


class _AccelRLOO(_Accel):
    process_index = 0
    device = torch.device("cpu")


def make_rloo_trainer(beta=0.05, normalize_advantages=False, epsilon_high=None):
    "An RLOOTrainer with only what `_generate_and_score_completions` and `_compute_loss` read, from a real RLOOConfig."
    args = RLOOConfig(output_dir="/tmp/rlref_trl_parity", use_cpu=True, bf16=False, report_to="none", beta=beta,
                      num_generations=G_RLOO, per_device_train_batch_size=B, max_completion_length=T, epsilon=0.2,
                      epsilon_high=epsilon_high, normalize_advantages=normalize_advantages)
    tr = object.__new__(RLOOTrainer)
    tr.args, tr.accelerator = args, _AccelRLOO()
    tr.model = SimpleNamespace(training=True, is_gradient_checkpointing=False)
    tr.ref_model = SimpleNamespace(training=False, is_gradient_checkpointing=False)
    tr.beta, tr.num_generations, tr.normalize_advantages = args.beta, args.num_generations, args.normalize_advantages
    tr.epsilon_low = args.epsilon
    tr.epsilon_high = args.epsilon_high if args.epsilon_high is not None else args.epsilon
    tr.reward_weights, tr.reward_clip_range, tr.reward_func_names = torch.ones(1), args.reward_clip_range, ["r"]
    tr.mask_truncated_completions, tr.pad_to_multiple_of = args.mask_truncated_completions, args.pad_to_multiple_of
    tr._tokenizer = SimpleNamespace(pad_token_id=0)
    tr.aux_loss_enabled, tr.log_multimodal = False, False
    tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    tr._logs = {"prompt": deque(), "completion": deque(), "rewards": defaultdict(deque), "advantages": deque(),
                "extra": defaultdict(deque)}
    tr._pending_extra_logs, tr._pending_metrics = defaultdict(list), defaultdict(list)
    return tr


def trl_rloo_advantages(tr, rewards, old, ref, lengths=RLOO_LENGTHS):
    "TRL's advantages (and its completion mask / summed old log-probs) from per-token old and reference log-probs."
    tr._generate = lambda prompts: ([[1] * P for _ in prompts], [[5] * L for L in lengths], ["c"] * len(prompts))
    tr._calculate_rewards = lambda inputs, prompts, completions, ids: rewards[:, None].clone()   # (B, 1 reward func)
    tr._get_per_token_logps_and_entropies = lambda model, *a, **kw: (
        (old if model is tr.model else ref).clone(), None, None)
    return tr._generate_and_score_completions([{"prompt": "p"}] * len(lengths))


def trl_rloo_loss(tr, logps, old_seq, adv, mask):
    "TRL's RLOO `_compute_loss` with per-token log-probs `logps` (a leaf we differentiate)."
    leaf = logps.detach().clone().requires_grad_()
    tr._get_per_token_logps_and_entropies = lambda model, *a, **kw: (leaf, torch.zeros_like(leaf), None)
    inputs = {"prompt_ids": torch.zeros(B, P, dtype=torch.long), "prompt_mask": torch.ones(B, P, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": mask,
              "old_logps": old_seq, "advantages": adv}
    loss = tr._compute_loss(tr.model, inputs)
    loss.backward()
    return loss.detach(), leaf.grad


@pytest.mark.parametrize("beta", [0.0, 0.05])
def test_rloo_advantages_match_trl(batch, beta):
    "KL in the reward (k1 summed over the completion, from the sampling policy's log-probs) + leave-one-out baseline."
    logps, old, ref, adv, mask = batch
    out = trl_rloo_advantages(make_rloo_trainer(beta=beta), RLOO_REWARDS, old, ref)
    assert torch.equal(out["completion_mask"].float(), mask)                                      # same ragged lengths as the batch fixture
    shaped = RLOO_REWARDS - beta * (kl_estimate(old, ref, "k1") * mask).sum(1)   # the trainer's kl_coef * sum_t k1
    mine = rloo_advantages(shaped, G_RLOO)
    assert (out["advantages"] - mine).abs().max() <= TOL, (out["advantages"], mine)
    if beta: assert (mine - rloo_advantages(RLOO_REWARDS, G_RLOO)).abs().max() > 1e-3   # the KL term is not vacuous


def test_rloo_normalize_advantages_is_a_batch_whitening(batch):
    "TRL's optional `normalize_advantages` (off by default) whitens over the batch; rlref's RLOO never does."
    logps, old, ref, adv, mask = batch
    out = trl_rloo_advantages(make_rloo_trainer(beta=0.0, normalize_advantages=True), RLOO_REWARDS, old, ref)
    a = rloo_advantages(RLOO_REWARDS, G_RLOO)
    assert (out["advantages"] - (a - a.mean()) / (a.std() + 1e-4)).abs().max() <= TOL
    assert (out["advantages"] - a).abs().max() > 1e-2


@pytest.mark.parametrize("eps_high", [None, 0.28])
def test_rloo_loss_on_policy_same_gradient(batch, eps_high):
    "One update per batch (ratio 1): TRL's sequence-level loss and rlref's seq_mean_token_sum give the same gradient."
    logps, old, ref, adv, mask = batch
    tr = make_rloo_trainer(epsilon_high=eps_high)
    l_trl, g_trl = trl_rloo_loss(tr, logps, (logps * mask).sum(1), adv, mask)
    leaf = logps.detach().clone().requires_grad_()
    l_me, _ = grpo_loss(leaf, leaf.detach(), adv, mask, loss_type="seq_mean_token_sum", eps_high=eps_high)
    l_me.backward()
    assert (g_trl - leaf.grad).abs().max() <= TOL
    assert leaf.grad.abs().max() > 1e-3
    # the values differ by design: TRL -mean(A_i), rlref -mean(A_i * L_i) (a sum of L_i ratios of 1)
    assert abs(float(l_trl) - float(-adv.mean())) <= TOL
    assert abs(l_me.item() - float(-(adv * mask.sum(1)).mean())) <= TOL


@pytest.mark.parametrize("eps_high", [None, 0.28])
def test_rloo_loss_off_policy_is_sequence_level(batch, eps_high):
    "With stale old log-probs TRL clips the sequence ratio: rlref's clipped_surrogate on (B, 1) sequence log-probs."
    logps, old, ref, adv, mask = batch
    tr = make_rloo_trainer(epsilon_high=eps_high)
    old_seq = (old * mask).sum(1)                                            # (B,)
    l_trl, g_trl = trl_rloo_loss(tr, logps, old_seq, adv, mask)
    leaf = logps.detach().clone().requires_grad_()
    seq = clipped_surrogate((leaf * mask).sum(1, keepdim=True), old_seq[:, None], adv, 0.2, eps_high)   # (B, 1)
    l_seq = aggregate_loss(seq, torch.ones_like(seq), "grpo")               # mean over sequences
    l_seq.backward()
    assert abs(float(l_trl) - l_seq.item()) <= TOL
    assert (g_trl - leaf.grad).abs().max() <= TOL
    assert g_trl.abs().max() > 1e-3                                          # some sequences are inside the clip
    m = tr._metrics["train"]
    assert m["clip_ratio/region_mean"][-1] > 0                               # the sequence clip is active here
    # rlref's per-token clipping is a different objective off-policy
    tok = logps.detach().clone().requires_grad_()
    l_tok, _ = grpo_loss(tok, old, adv, mask, loss_type="seq_mean_token_sum", eps_high=eps_high)
    l_tok.backward()
    assert (tok.grad - g_trl).abs().max() > 1e-3


# ---------------------------------------------------------------------------------------------------------------------
# Online DPO: TRL's OnlineDPOTrainer lives in trl.experimental.online_dpo in TRL 1.16 (no longer in `trl`).
# Its `training_step` runs unmodified with `_generate` (completion ids and mask), `_forward` (per-token log-probs:
# our leaf for the policy, constants for the reference) and `_calculate_rewards_from_functions` stubbed.
# TRL pairs completion i with completion i + N (two halves of the batch); rlref.online_dpo_loss takes interleaved
# pairs (2k, 2k+1). TRL keeps tied pairs (the first completion is "chosen") and averages over all pairs; rlref drops
# ties and averages over the others.
# ---------------------------------------------------------------------------------------------------------------------
import os  # noqa: E402
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
from trl.experimental.online_dpo import OnlineDPOConfig, OnlineDPOTrainer  # noqa: E402
from rlref.losses import dpo_loss, online_dpo_loss  # noqa: E402

N_PAIRS = 4
DPO_LENGTHS = torch.tensor([5, 2, 4, 1, 3, 5, 5, 2])


class _AccelDPO:
    num_processes, process_index, device = 1, 0, torch.device("cpu")
    def gather_for_metrics(self, x): return x
    def backward(self, loss, **kw): loss.backward()


@pytest.fixture(scope="module")
def dpo_batch():
    g = torch.Generator().manual_seed(1)
    lp = -torch.rand(2 * N_PAIRS, T, generator=g) * 3                         # (2N, T) policy log-probs
    ref = lp + 0.3 * torch.randn(2 * N_PAIRS, T, generator=g)                 # (2N, T) reference log-probs
    mask = (torch.arange(T)[None] < DPO_LENGTHS[:, None]).long()              # (2N, T)
    return lp, ref, mask


def trl_online_dpo(lp, ref, mask, rewards, loss_type="sigmoid", beta=0.1):
    "TRL's OnlineDPOTrainer.training_step; rows i and i + N are the two completions of prompt i."
    args = OnlineDPOConfig(output_dir="/tmp/rlref_trl_parity", use_cpu=True, bf16=False, report_to="none", beta=beta,
                           loss_type=loss_type)
    tr = object.__new__(OnlineDPOTrainer)
    tr.args, tr._beta, tr.accelerator, tr.stats = args, args.beta, _AccelDPO(), defaultdict(list)
    tr.state, tr.eos_token_ids, tr.reward_funcs = SimpleNamespace(global_step=0, epoch=0), [2], ["r"]
    tr.ref_model = object()
    tr.processing_class = SimpleNamespace(batch_decode=lambda ids, skip_special_tokens=True: ["c"] * len(ids))
    n = lp.shape[0]
    tr._generate = lambda model, prompts, images=None: (
        torch.zeros(n, P, dtype=torch.long), torch.ones(n, P, dtype=torch.long), 5 * mask, mask, None)
    leaf = lp.detach().clone().requires_grad_()
    tr._forward = lambda model, *a, **k: ref.clone() if model is tr.ref_model else leaf
    tr._calculate_rewards_from_functions = lambda prompts, completions, completion_ids_list, **kw: rewards.clone()
    loss = tr.training_step(SimpleNamespace(train=lambda: None), {"prompt": ["p"] * (n // 2)})
    return loss, leaf.grad, tr.stats


def interleave(x):
    "TRL's halves [a_0..a_{N-1}, b_0..b_{N-1}] -> rlref's pairs [a_0, b_0, a_1, b_1, ...]."
    return torch.stack(x.chunk(2), 1).reshape(-1, *x.shape[1:])


@pytest.mark.parametrize("loss_type", ["sigmoid", "ipo"])
@pytest.mark.parametrize("beta", [0.1, 0.5])
def test_online_dpo_matches_trl(dpo_batch, loss_type, beta):
    lp, ref, mask = dpo_batch
    rewards = torch.tensor([1., 0., .5, .2, 0., 1., .7, .9])                  # no ties: pair i = (i, i + 4)
    l_trl, g_trl, stats = trl_online_dpo(lp, ref, mask, rewards, loss_type, beta)
    m = mask.float()
    leaf = interleave(lp).clone().requires_grad_()
    l_me, ties = online_dpo_loss((leaf * interleave(m)).sum(1), (interleave(ref) * interleave(m)).sum(1),
                                 interleave(rewards), beta=beta, kind=loss_type)
    l_me.backward()
    assert ties == 0
    assert abs(float(l_trl) - l_me.item()) <= TOL, (l_trl, l_me)
    assert (interleave(g_trl) - leaf.grad).abs().max() <= TOL
    assert leaf.grad.abs().max() > 1e-3
    # TRL's logged implicit rewards are dpo_loss's
    seq, seq_ref = (lp * m).sum(1), (ref * m).sum(1)
    w = rewards[:N_PAIRS] >= rewards[N_PAIRS:]                               # TRL: first half chosen when >=
    ch = torch.where(w, torch.arange(N_PAIRS), torch.arange(N_PAIRS) + N_PAIRS)
    rj = torch.where(w, torch.arange(N_PAIRS) + N_PAIRS, torch.arange(N_PAIRS))
    _, r_ch, r_rj = dpo_loss(seq[ch], seq[rj], seq_ref[ch], seq_ref[rj], beta, loss_type)
    assert abs(stats["rewards/chosen"][-1] - float(r_ch.mean())) <= TOL
    assert abs(stats["rewards/rejected"][-1] - float(r_rj.mean())) <= TOL


def test_online_dpo_ties_differ_by_design(dpo_batch):
    "TRL keeps tied pairs (first completion chosen) in the mean; rlref drops them. Both reproduced from dpo_loss."
    lp, ref, mask = dpo_batch
    rewards = torch.tensor([1., .5, .5, .2, 0., .5, .5, .9])                  # pairs 1 and 2 are ties
    l_trl, _, _ = trl_online_dpo(lp, ref, mask, rewards)
    m = mask.float()
    seq, seq_ref = (lp * m).sum(1), (ref * m).sum(1)
    first, second = torch.arange(N_PAIRS), torch.arange(N_PAIRS) + N_PAIRS
    w = rewards[first] >= rewards[second]
    ch, rj = torch.where(w, first, second), torch.where(w, second, first)
    per_pair, _, _ = dpo_loss(seq[ch], seq[rj], seq_ref[ch], seq_ref[rj], 0.1)
    assert abs(float(l_trl) - float(per_pair.mean())) <= TOL                # TRL: all pairs, ties included
    l_me, ties = online_dpo_loss(interleave(seq), interleave(seq_ref), interleave(rewards), beta=0.1)
    tied = rewards[first] == rewards[second]
    assert ties == 2
    assert abs(float(l_me) - float(per_pair[~tied].mean())) <= TOL          # rlref: ties dropped
    assert abs(float(l_me) - float(l_trl)) > 1e-3
