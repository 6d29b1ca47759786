"""Seed sweep for the checks in tests/test_rollout.py and tests/test_kvcache.py that depend on a randomly initialised model's
numbers (EVIDENCE.md rule 7). The tests fix the init seed and the sampling generator; here both take seed s (init = s, generator = s):

- rollout_eos (test_rollout.py::test_early_eos_rows_are_compacted_and_still_exact): with the <eos> embedding scaled by 14, the
  24 rows end at > 2 distinct lengths and < 75% are truncated; plus the learner/sampler parity error (atol 1e-5)
- kv_changed (test_kvcache.py::test_shadow_mask_replays_sampler_exactly): every policy/budget/temperature changes the dense
  log-probs by > 1e-4 and the shadow replay error stays under 1e-5
- kv_eos (test_kvcache.py::test_replay_exact_when_rows_finish_early): > 2 distinct lengths per policy

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/03_rollout/seed_sweep_test_rollout_kvcache.py --seeds 0 1 2 3 4 5 6 7
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, time
import torch
from rlref.models import make_char_tokenizer, make_tiny_llama
from rlref.rollout import sample, completion_logprobs
from rlref.tasks import make_task
from rlref.kvcache import make_kv_policy, shadow_attention_mask

PROMPTS = ["12+34=", "7+8=", "a1b2c3|b=", "9="]
KV_CASES = [("sink", 0.25, {}), ("sink", 9, dict(sink=2)), ("h2o", 0.25, {}), ("h2o", 0.5, dict(recent=3)), ("snapkv", 0.25, {}), ("snapkv", 12, dict(window=4, sink=1))]

def rollout_eos(s):
    tok = make_char_tokenizer(); model = make_tiny_llama(tok, "tiny", max_len=64, seed=s).eval()
    with torch.no_grad(): model.model.embed_tokens.weight[tok.eos_token_id] *= 14
    ro = sample(model, tok, PROMPTS * 4, n=2, max_new_tokens=12, generator=torch.Generator().manual_seed(s))
    with torch.no_grad(): lp, _ = completion_logprobs(model, ro)
    n_len, trunc = len(set(ro.lengths.tolist())), ro.truncated.float().mean().item()
    return dict(n_lengths=n_len, truncated=trunc, parity_error=(lp - ro.sampler_logprobs).abs().max().item(), margin=min(n_len - 3, 0.75 - trunc))

def kv_changed(s):
    tok = make_char_tokenizer(); model = make_tiny_llama(tok, "tiny", max_len=96, seed=s).eval()
    prompts = list(make_task("recall", n_pairs=16, n_train=10, n_test=6).test["prompt"]) + ["a1|a="]
    gaps, errs = {}, {}
    for name, budget, kw in KV_CASES:
        for temp in (1.0, 0.7):
            ro = sample(model, tok, prompts, n=2, max_new_tokens=8, temperature=temp, kv_policy=make_kv_policy(name, budget, **kw), generator=torch.Generator().manual_seed(s))
            with torch.no_grad():
                shadow, _ = completion_logprobs(model, ro, temperature=temp, attention_mask_4d=shadow_attention_mask(ro), micro_batch_size=5)
                dense, _ = completion_logprobs(model, ro, temperature=temp)
            gaps[f"{name}@{budget}/{temp}"] = (dense - ro.sampler_logprobs).abs().max().item(); errs[f"{name}@{budget}/{temp}"] = (shadow - ro.sampler_logprobs).abs().max().item()
    return dict(min_gap=min(gaps.values()), max_replay_error=max(errs.values()), margin=min(gaps.values()) - 1e-4)

def kv_eos(s):
    tok = make_char_tokenizer(); model = make_tiny_llama(tok, "tiny", max_len=96, seed=s).eval()
    with torch.no_grad(): model.model.embed_tokens.weight[tok.eos_token_id] *= 12
    prompts = list(make_task("recall", n_pairs=10, n_train=10, n_test=8).test["prompt"])
    n = {name: len(set(sample(model, tok, prompts, n=2, max_new_tokens=12, kv_policy=make_kv_policy(name, 0.3), generator=torch.Generator().manual_seed(s)).lengths.tolist()))
         for name in ["sink", "h2o", "snapkv"]}
    return dict(n_lengths=n, margin=min(n.values()) - 3)

def rollout_eos_scaled(s):
    "The test as changed after the first sweep: the first <eos> scale of EOS_SCALES that gives varied, mostly finished rows."
    tok = make_char_tokenizer()
    for scale in (14, 20, 30, 45, 8):
        model = make_tiny_llama(tok, "tiny", max_len=64, seed=s).eval()
        with torch.no_grad(): model.model.embed_tokens.weight[tok.eos_token_id] *= scale
        ro = sample(model, tok, PROMPTS * 4, n=2, max_new_tokens=12, generator=torch.Generator().manual_seed(s))
        n_len, trunc = len(set(ro.lengths.tolist())), ro.truncated.float().mean().item()
        if n_len > 2 and trunc < 0.75: break
    with torch.no_grad(): lp, _ = completion_logprobs(model, ro)
    return dict(scale=scale, n_lengths=n_len, truncated=trunc, parity_error=(lp - ro.sampler_logprobs).abs().max().item(), margin=min(n_len - 3, 0.75 - trunc))

def kv_eos_scaled(s):
    "The test as changed after the first sweep: per policy, the first <eos> scale that gives > 2 distinct lengths."
    tok = make_char_tokenizer()
    prompts = list(make_task("recall", n_pairs=10, n_train=10, n_test=8).test["prompt"])
    out = {}
    for name in ["sink", "h2o", "snapkv"]:
        for scale in (12, 6, 20, 30):
            model = make_tiny_llama(tok, "tiny", max_len=96, seed=s).eval()
            with torch.no_grad(): model.model.embed_tokens.weight[tok.eos_token_id] *= scale
            ro = sample(model, tok, prompts, n=2, max_new_tokens=12, kv_policy=make_kv_policy(name, 0.3), generator=torch.Generator().manual_seed(s))
            if len(set(ro.lengths.tolist())) > 2: break
        with torch.no_grad(): shadow, _ = completion_logprobs(model, ro, attention_mask_4d=shadow_attention_mask(ro))
        out[name] = dict(scale=scale, n_lengths=len(set(ro.lengths.tolist())), replay_error=(shadow - ro.sampler_logprobs).abs().max().item())
    return dict(per_policy=out, margin=min(v["n_lengths"] for v in out.values()) - 3)

CHECKS = dict(rollout_eos=rollout_eos, kv_changed=kv_changed, kv_eos=kv_eos, rollout_eos_scaled=rollout_eos_scaled, kv_eos_scaled=kv_eos_scaled)

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(CHECKS, "experiments/03_rollout/seed_sweep_test_rollout_kvcache.jsonl", seeds=[0, 1, 2, 3, 4, 5, 6, 7])
