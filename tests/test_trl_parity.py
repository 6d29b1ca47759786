"""Parity of rlref's GRPO-family loss with TRL's own `GRPOTrainer._compute_loss`.

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
