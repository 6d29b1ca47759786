"""Chapter 14 (rlref.methods.logit_averaging): the mixture's literal values and gradient, the wrapper's exact log-probs on both
sampler and learner paths, that GRPO through the trainer moves theta and never the reference, the format rewards, bad input."""
import copy
import pytest
import torch
from rlref.methods.logit_averaging import (mix_logits, LogitAveragedPolicy, ans_correctness_reward, ans_format_reward, ans_strict_reward,
                                           logit_averaging_trainer, drift_metrics)
from rlref.models import make_char_tokenizer, make_tiny_llama
from rlref.rollout import sample, completion_logprobs
from rlref.tasks import make_task
from rlref.evaluation import greedy_completions
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig

torch.set_num_threads(1)

@pytest.fixture(scope="module")
def models():
    tok = make_char_tokenizer()
    theta = make_tiny_llama(tok, "tiny", max_len=64, seed=0)
    ref = make_tiny_llama(tok, "tiny", max_len=64, seed=1).requires_grad_(False)
    return tok, theta, ref

def test_mixture_literal_values_and_product_of_experts():
    zt, zr = torch.tensor([2.0, 0.0, -1.0]), torch.tensor([0.0, 1.0, 0.0])
    torch.testing.assert_close(mix_logits(zt, zr, 0.5), torch.tensor([1.0, 0.5, -0.5]))
    torch.testing.assert_close(mix_logits(zt, zr, 0.25), torch.tensor([0.5, 0.75, -0.25]))
    poe = zt.softmax(-1) ** 0.25 * zr.softmax(-1) ** 0.75
    torch.testing.assert_close(mix_logits(zt, zr, 0.25).softmax(-1), poe / poe.sum())
    assert torch.equal(mix_logits(zt, zr, 1.0), zt)

@pytest.mark.parametrize("alpha", [0.25, 0.5, 0.75, 1.0])
def test_gradient_scale_alpha(alpha):
    zt, zr = torch.tensor([2.0, 0.0, -1.0], requires_grad=True), torch.tensor([0.0, 1.0, 0.0], requires_grad=True)
    torch.log_softmax(mix_logits(zt, zr, alpha), -1)[1].backward()
    pbar = mix_logits(zt.detach(), zr.detach(), alpha).softmax(-1)
    torch.testing.assert_close(zt.grad, alpha * (torch.tensor([0.0, 1.0, 0.0]) - pbar))
    assert zr.grad is None

def test_kl_optimum_is_reachable():
    zr, R, beta, alpha = torch.tensor([0.0, 1.0, 0.0]), torch.tensor([1.0, 0.0, 0.5]), 0.5, 0.5
    star = zr.softmax(-1) * torch.exp(R / beta)
    torch.testing.assert_close(mix_logits(zr + R / (alpha * beta), zr, alpha).softmax(-1), star / star.sum())

@pytest.mark.parametrize("fused", [True, False])
def test_sampler_matches_learner_on_both_paths(models, fused):
    tok, theta, ref = models
    pol = LogitAveragedPolicy(theta, ref, 0.5, tok, tok)
    r = sample(pol, tok, ["12+34=", "5+6=", "99+1="], n=4, max_new_tokens=10, temperature=0.7, generator=torch.Generator().manual_seed(3), fused=fused)
    assert int(r.completion_mask.sum()) > 12
    for learner_fused in (True, False):
        with torch.no_grad(): lp, _ = completion_logprobs(pol, r, 0.7, fused=learner_fused)
        assert float((lp - r.sampler_logprobs).abs().max()) <= 1e-5
    other = sample(pol, tok, ["12+34=", "5+6=", "99+1="], n=4, max_new_tokens=10, temperature=0.7, generator=torch.Generator().manual_seed(3), fused=not fused)
    assert torch.equal(other.completion_ids, r.completion_ids)

def test_alpha_one_is_theta_and_greedy_generate(models):
    tok, theta, ref = models
    prompts = ["12+34=", "7+8="]
    assert greedy_completions(LogitAveragedPolicy(theta, ref, 1.0), tok, prompts, 10) == greedy_completions(theta, tok, prompts, 10)
    pol = LogitAveragedPolicy(theta, ref, 0.5)
    assert greedy_completions(pol, tok, prompts, 10) == sample(pol, tok, prompts, n=1, max_new_tokens=10, greedy=True).completions

def test_gradients_reach_theta_only(models):
    tok, theta, ref = models
    th = copy.deepcopy(theta)
    pol = LogitAveragedPolicy(th, ref, 0.5)
    r = sample(pol, tok, ["12+34="], n=4, max_new_tokens=8, generator=torch.Generator().manual_seed(0))
    lp, _ = completion_logprobs(pol, r, 1.0)
    lp.sum().backward()
    assert all(p.grad is not None for p in th.parameters()) and all(p.grad is None for p in ref.parameters())

def test_wrapper_trains_theta_not_ref(models):
    tok, theta, ref = models
    pol = LogitAveragedPolicy(copy.deepcopy(theta), copy.deepcopy(ref), 0.5, tok, tok)
    parity = lambda prompts, completions, **kw: [float(len(c) % 2) for c in completions]   # a reward with variance for random models
    cfg = TrainConfig(task="arith_ans", task_kwargs=dict(n_train=200, n_test=20), sft_steps=0, prompts_per_step=4, samples_per_prompt=4,
                      steps=2, eval_every=0, kl_every=0, progress=False, checkpoint_every=0, reward_funcs=[parity], seed=0)
    tr = Trainer(cfg, pol, tok, make_task("arith_ans", n_train=200, n_test=20, seed=0))
    before = {k: v.clone() for k, v in pol.state_dict().items()}
    for _ in range(2): tr.train_step()
    after = pol.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("theta."))
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith("ref."))
    r = tr.rollout()
    assert float((tr.logprobs(pol, r) - r.sampler_logprobs).abs().max()) <= 1e-5

def test_drift_is_zero_when_theta_equals_ref(models):
    tok, theta, ref = models
    d = drift_metrics(LogitAveragedPolicy(copy.deepcopy(ref).requires_grad_(True), ref, 0.5), ref, tok, ["1+2="], n=2)
    assert abs(d["kl"]) < 1e-6 and d["logit_gap"] < 1e-4

def test_format_rewards():
    comps, ans = ["<ans>57</ans>", "57", "<ans>56</ans>", "<ans>57"], ["57"] * 4
    assert ans_correctness_reward([""] * 4, comps, ans) == [1, 1, 0, 1]
    assert ans_format_reward([""] * 4, comps) == [1, 0, 1, 0]
    assert ans_strict_reward([""] * 4, comps, ans) == [1, 0, 0, 0]

def test_bad_input(models):
    tok, theta, ref = models
    for bad in (0, -1, 1.5, float("nan"), True, None):
        with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\]"): LogitAveragedPolicy(theta, ref, bad)
    with pytest.raises(ValueError, match="the reference must be frozen"): LogitAveragedPolicy(theta, copy.deepcopy(theta))
    with pytest.raises(ValueError, match="another vocabulary"):
        LogitAveragedPolicy(theta, make_tiny_llama(make_char_tokenizer("0123456789+="), "tiny", max_len=64).requires_grad_(False))
    with pytest.raises(ValueError, match="another tokenizer"):
        LogitAveragedPolicy(theta, ref, 0.5, tokenizer=tok, ref_tokenizer=make_char_tokenizer("9876543210abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ "))
    with pytest.raises(ValueError, match="same module"): LogitAveragedPolicy(theta, theta)
    with pytest.raises(ValueError, match="two"): completion_logprobs(LogitAveragedPolicy(theta, ref), sample(LogitAveragedPolicy(theta, ref), tok, ["1+1="], max_new_tokens=3), chunk_rows=2)
    cfg = lambda **kw: TrainConfig(task="arith_ans", task_kwargs=dict(n_train=50, n_test=10), sft_steps=0, progress=False, **kw)
    with pytest.raises(ValueError, match="replaces the KL term"): logit_averaging_trainer(cfg(beta=0.01))
    with pytest.raises(ValueError, match="without out"): logit_averaging_trainer(cfg(out="/tmp/x"))
    with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\]"): logit_averaging_trainer(cfg(), alpha=0)
