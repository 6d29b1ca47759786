"""Chapter 00a (RL in one page): the plain-generate sampler groups answers per prompt, the REINFORCE step's gradient is the
hand-built -A log pi, a group with equal rewards moves nothing, the held-out measure is exact_match's, and the loop learns."""
import pytest, torch
from rlref.core import masked_mean
from rlref.evaluation import exact_match, greedy_completions
from rlref.models import tokenize_prompt_and_output
from rlref.rollout import response_logprobs
from rlref.advantages import group_normalized_rewards
from rlref.onramp import (load_testbed, pair_reward, sample_responses, reinforce_step, heldout_hits, answer_logprob, onramp_run,
                          fixed_batch_gain)

PROMPTS, ANSWERS = ["12+34=", "5+7=", "60+25="], ["46", "12", "85"]

@pytest.fixture
def tb():
    torch.manual_seed(0)
    return load_testbed(0)

class Recorder:
    "An optimizer that records the gradients it is asked to apply and changes nothing."
    def __init__(self, params): self.params, self.grads = list(params), None
    def step(self): self.grads = [None if p.grad is None else p.grad.clone() for p in self.params]
    def zero_grad(self, set_to_none=True):
        for p in self.params: p.grad = None

def test_split_is_held_out_and_hits_are_exact_match(tb):
    model, tok, task = tb
    assert not set(task.test["prompt"]) & set(task.train["prompt"])
    hits = heldout_hits(model, tok, task, n=100)
    assert hits.shape == (100,) and hits.dtype == torch.bool
    assert abs(hits.float().mean().item() - exact_match(model, tok, task.test.select(range(100)), task.reward_fn, task.max_new_tokens)) < 1e-6

def test_pair_reward_is_the_strict_correctness_reward(tb):
    reward = pair_reward(tb[2])
    assert [reward(r, "46") for r in ["46", " 46", "4", "47", "The answer is 46"]] == [1.0, 1.0, 0.0, 0.0, 0.0]

def test_samples_are_grouped_per_prompt(tb):
    model, tok, task = tb
    out = sample_responses(model, tok, PROMPTS, group_size=4, temperature=1e-4, max_new_tokens=task.max_new_tokens)   # ~greedy
    greedy = greedy_completions(model, tok, PROMPTS, task.max_new_tokens)
    assert out == [g for g in greedy for _ in range(4)]
    tok.padding_side = "right"
    with pytest.raises(ValueError, match="padding_side must be 'left'"): sample_responses(model, tok, PROMPTS)

def test_step_gradient_is_minus_A_logpi_by_hand(tb):
    model, tok, task = tb
    reward, rec = pair_reward(task), Recorder(model.parameters())
    torch.manual_seed(3)
    reinforce_step(model, tok, rec, PROMPTS, ANSWERS, reward, group_size=8, max_new_tokens=task.max_new_tokens, max_grad_norm=1e9)
    torch.manual_seed(3)                                      # the same draws again, then the loss written out
    resp = sample_responses(model, tok, PROMPTS, 8, 0.7, task.max_new_tokens)
    adv, raw, _ = group_normalized_rewards(reward, resp, [a for a in ANSWERS for _ in range(8)], 8)
    assert 0 < raw.sum() < len(raw)                           # some signal, so the gradient is not trivially 0
    t = tokenize_prompt_and_output([p for p in PROMPTS for _ in range(8)], resp, tok, add_eos=True)
    lp = response_logprobs(model, t["input_ids"], t["labels"], temperature=0.7)["log_probs"]
    masked_mean(-adv[:, None] * lp, t["response_mask"], dim=1).mean().backward()
    for g, p in zip(rec.grads, model.parameters()): torch.testing.assert_close(g, p.grad, atol=1e-6, rtol=1e-5)

def test_equal_rewards_move_nothing_unless_there_is_no_baseline(tb):
    model, tok, task = tb
    w0 = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    m = reinforce_step(model, tok, opt, PROMPTS, ANSWERS, lambda r, gt: 1.0, group_size=4, max_new_tokens=task.max_new_tokens)
    assert m["zero_std_frac"] == 1.0 and m["loss"] == 0.0
    assert all(torch.equal(a, b) for a, b in zip(w0, model.parameters()))      # every advantage is 0
    reinforce_step(model, tok, opt, PROMPTS, ANSWERS, lambda r, gt: 1.0, group_size=4, max_new_tokens=task.max_new_tokens, loss_type="no_baseline")
    assert all(not torch.equal(a, b) for a, b in zip(w0, model.parameters()))  # -R log pi pushes every sample up
    with pytest.raises(ValueError, match="loss_type must be"): reinforce_step(model, tok, opt, PROMPTS, ANSWERS, lambda r, gt: 1.0, loss_type="grpo_clip")

def test_answer_logprob_by_hand(tb):
    model, tok, _ = tb
    t = tokenize_prompt_and_output(PROMPTS, ANSWERS, tok, add_eos=True)
    with torch.no_grad(): lp = response_logprobs(model, t["input_ids"], t["labels"])["log_probs"]
    assert abs(answer_logprob(model, tok, PROMPTS, ANSWERS) - ((lp * t["response_mask"]).sum() / 3).item()) < 1e-5

def test_the_loop_learns_on_a_fixed_batch():
    before, after = fixed_batch_gain(seed=0)                 # seeds 0-4: +0.24 .. +0.51 nats (experiments/00a_rl_in_one_page/seed_sweep.py)
    assert after - before >= 0.1, (before, after)

def test_onramp_run_record():
    r = onramp_run(seed=1, steps=2, prompts_per_step=4, group_size=2, eval_every=1, eval_rows=20, progress=False)
    assert [s for s, _ in r["curve"]] == [0, 1, 2] and r["n"] == 20 and len(r["reward"]) == 2
    assert r["warm_ci"][0] <= r["warm"] <= r["warm_ci"][1] and r["final_ci"][0] <= r["final"] <= r["final_ci"][1]
    assert abs(r["gain"] - (r["final"] - r["warm"])) < 1e-9 and set(r["mcnemar"]) >= {"z", "p", "n10", "n01"}
