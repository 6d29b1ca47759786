"KV compression: exact replay of every policy's eviction record, memory falls with the budget, bad budgets."
import pytest, torch
from rlref.models import make_char_tokenizer, make_tiny_llama
from rlref.tasks import make_task
from rlref.rollout import sample, completion_logprobs
from rlref.kvcache import make_kv_policy, shadow_attention_mask, SinkWindowPolicy, H2OPolicy, SnapKVPolicy

@pytest.fixture(scope="module")
def setup():
    tok = make_char_tokenizer()
    model = make_tiny_llama(tok, "tiny", max_len=96, seed=0).eval()
    prompts = list(make_task("recall", n_pairs=16, n_train=10, n_test=6).test["prompt"]) + ["a1|a="]  # mixed lengths
    return model, tok, prompts

@pytest.mark.parametrize("name,budget,kw", [("sink", 0.25, {}), ("sink", 9, dict(sink=2)), ("h2o", 0.25, {}), ("h2o", 0.5, dict(recent=3)),
                                            ("snapkv", 0.25, {}), ("snapkv", 12, dict(window=4, sink=1))])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_shadow_mask_replays_sampler_exactly(setup, name, budget, kw, temperature):
    model, tok, prompts = setup
    ro = sample(model, tok, prompts, n=2, max_new_tokens=8, temperature=temperature, kv_policy=make_kv_policy(name, budget, **kw),
                generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        shadow, _ = completion_logprobs(model, ro, temperature=temperature, attention_mask_4d=shadow_attention_mask(ro), micro_batch_size=5)
        dense, _ = completion_logprobs(model, ro, temperature=temperature)
    torch.testing.assert_close(shadow, ro.sampler_logprobs, atol=1e-5, rtol=0)
    # seed sweep (experiments/03_rollout/seed_sweep_test_rollout_kvcache.py, init and generator seeds 0-7): smallest gap 0.175 over all 12 cases
    assert (dense - ro.sampler_logprobs).abs().max() > 1e-4  # compression really changed the context
    # every query saw at most `budget` keys (itself included)
    T = ro.input_ids.shape[1]
    vis = (shadow_attention_mask(ro)[:, 0] == 0).sum(-1)[:, :T - 1]
    assert vis.max() <= ro.extras["stats"]["kv_slots"]

def test_peak_kv_memory_falls_with_budget(setup):
    model, tok, prompts = setup
    for name in ["sink", "h2o", "snapkv"]:
        sizes = [sample(model, tok, prompts, max_new_tokens=4, greedy=True, kv_policy=make_kv_policy(name, b)).extras["stats"]["kv_bytes"]
                 for b in [1.0, 0.75, 0.5, 0.25]]
        assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 4, (name, sizes)
    dense = sample(model, tok, prompts, max_new_tokens=4, greedy=True).extras["stats"]["kv_bytes"]
    assert sizes[-1] / dense <= 0.3

def test_full_budget_equals_dense(setup):
    "A budget of the whole context evicts nothing: same tokens and log-probs as the uncompressed sampler."
    model, tok, prompts = setup
    dense = sample(model, tok, prompts, n=2, max_new_tokens=6, generator=torch.Generator().manual_seed(3))
    full = sample(model, tok, prompts, n=2, max_new_tokens=6, kv_policy=SinkWindowPolicy(1.0), generator=torch.Generator().manual_seed(3))
    assert torch.equal(dense.completion_ids, full.completion_ids)
    torch.testing.assert_close(dense.sampler_logprobs, full.sampler_logprobs, atol=1e-5, rtol=0)

def test_bad_budgets(setup):
    model, tok, prompts = setup
    with pytest.raises(ValueError, match="larger than the context"): sample(model, tok, prompts, max_new_tokens=4, kv_policy=make_kv_policy("sink", 500))
    with pytest.raises(ValueError, match="must exceed the 4 sink"): SinkWindowPolicy(4, sink=4)
    with pytest.raises(ValueError, match="must exceed the 4 sink"): sample(model, tok, ["a1="], max_new_tokens=2, kv_policy=SinkWindowPolicy(0.5, sink=4))
    with pytest.raises(ValueError, match="unknown KV policy"): make_kv_policy("lru", 0.5)
    with pytest.raises(ValueError, match="needs a budget"): make_kv_policy("h2o")
    with pytest.raises(ValueError, match="no eviction record"): shadow_attention_mask(sample(model, tok, prompts, max_new_tokens=2, greedy=True))

@pytest.mark.parametrize("name", ["sink", "h2o", "snapkv"])
def test_replay_exact_when_rows_finish_early(name):
    "Rows that hit <eos> leave the batch (cache and policy scores compacted); the eviction record must stay exact."
    tok = make_char_tokenizer()
    prompts = list(make_task("recall", n_pairs=10, n_train=10, n_test=8).test["prompt"])
    # Which rows a scaled <eos> ends early depends on the random init: with x12 alone, 3 of 8 init/sampler seeds gave <= 2
    # distinct lengths for some policy (experiments/03_rollout/seed_sweep_test_rollout_kvcache.py). So take the first scale that gives > 2;
    # seed sweep (seeds 0-7): one was found on every seed and policy (x12 on 21 of 24, x20, x30), replay error <= 2.4e-6 (atol 1e-5)
    for scale in (12, 6, 20, 30):
        model = make_tiny_llama(tok, "tiny", max_len=96, seed=1).eval()
        with torch.no_grad(): model.model.embed_tokens.weight[tok.eos_token_id] *= scale
        ro = sample(model, tok, prompts, n=2, max_new_tokens=12, kv_policy=make_kv_policy(name, 0.3), generator=torch.Generator().manual_seed(0))
        if len(set(ro.lengths.tolist())) > 2: break
    assert len(set(ro.lengths.tolist())) > 2, (scale, ro.lengths)
    with torch.no_grad(): shadow, _ = completion_logprobs(model, ro, attention_mask_4d=shadow_attention_mask(ro))
    torch.testing.assert_close(shadow, ro.sampler_logprobs, atol=1e-5, rtol=0)

def test_heldout_recall_extends_test_split_without_leaks():
    "Chapter 09a's 2048-prompt evaluation set: the task's test split first, then fresh prompts seen in neither split."
    from rlref.tasks import heldout_recall
    task = make_task("recall", n_pairs=6, n_train=500, n_test=32, seed=0)
    h = heldout_recall(task, 100)
    assert len(h) == 100 and len(set(h["prompt"])) == 100
    assert list(h["prompt"])[:32] == list(task.test["prompt"])
    assert not set(h["prompt"]) & set(task.train["prompt"])
    with pytest.raises(ValueError, match="smaller than the task's 32 test prompts"): heldout_recall(task, 10)
