"""Precision and memory at GPU scale, checked on CPU: fp32 master weights under bf16 autocast update like fp32 (pure bf16 does not),
no-grad log-prob passes whose peak memory is bounded by the micro-batch, chunked log-probs equal to the unchunked ones, gradient
checkpointing that really recomputes, the fused switch, and a LoRA reference that is the adapter-disabled base (one copy of the weights)."""
import copy, gc, warnings
import pytest, torch
from transformers import LlamaConfig, LlamaForCausalLM
import rlref.rollout as R
import rlref.fused as FU
from rlref.models import make_char_tokenizer, make_tiny_llama, add_lora
from rlref.tasks import make_task
from rlref.rollout import Rollout, completion_logprobs
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig
from rlref.train.precision import BaseReference, TensorMemory, resolve_precision

BASE = dict(sft_steps=0, prompts_per_step=8, samples_per_prompt=4, lr=1e-6, warmup_steps=0, progress=False, eval_every=0, kl_every=0)

@pytest.fixture(scope="module")
def tiny():
    tok = make_char_tokenizer()
    return tok, make_tiny_llama(tok, "tiny", max_len=64, seed=0), make_task("arith", seed=0, n_train=200, n_test=20)

def fake_rollout(B, V, P=6, C=8, G=4, seed=0):
    "B rows of random prompts (G copies each) and full-length random completions."
    g = torch.Generator().manual_seed(seed)
    pid = torch.randint(4, V, (B // G, P), generator=g).repeat_interleave(G, 0)
    cid, cm = torch.randint(4, V, (B, C), generator=g), torch.ones(B, C, dtype=torch.long)
    return Rollout(prompt_ids=pid, prompt_mask=torch.ones(B, P, dtype=torch.long), completion_ids=cid, completion_mask=cm,
                   sampler_logprobs=torch.zeros(B, C), group=torch.arange(B) // G, lengths=cm.sum(1), truncated=torch.zeros(B, dtype=torch.bool),
                   prompts=[""] * B, completions=[""] * B)

# ------------------------------------------------------------------ config
@pytest.mark.parametrize("kw,msg", [(dict(dtype="fp8"), "unknown dtype"), (dict(mixed_precision="bf17"), "unknown mixed_precision"),
                                    (dict(gradient_checkpointing=1), "gradient_checkpointing must be"), (dict(fused="yes"), "fused must be"),
                                    (dict(logprob_chunk_rows=0), "logprob_chunk_rows must be"), (dict(vocab_chunk=2.5), "vocab_chunk must be"),
                                    (dict(vocab_chunk=64, top_k=5), "vocab_chunk cannot replay")])
def test_bad_precision_and_memory_fields_fail_clearly(kw, msg):
    with pytest.raises(ValueError, match=msg): TrainConfig(**kw)

def test_resolve_precision_defaults_keep_cpu_fp32():
    assert resolve_precision("auto", "auto", "cpu") == (torch.float32, None)          # today's CPU run: fp32, no autocast
    assert resolve_precision("auto", "bf16", "cpu") == (torch.float32, torch.bfloat16)  # master weights under mixed precision
    assert resolve_precision("bfloat16", "no", "cpu") == (torch.bfloat16, None)       # pure bf16, as asked

# ------------------------------------------------------------------ precision
def test_bf16_master_weights_update_like_fp32_and_pure_bf16_does_not(tiny):
    """One optimizer step at lr 1e-6 on the same rollout and advantages. Measured (this machine): relative weight change 2.3207e-5 (fp32),
    ratio to fp32 0.99978 (bf16 autocast + fp32 master weights), 0.99998 (fp16 + scaler), 0.21 (pure bf16, which moved 1.9% of the weights)."""
    tok, model, task = tiny
    tr = Trainer(TrainConfig(**BASE), copy.deepcopy(model), tok, task)
    r = tr.rollout(); r.advantages = torch.randn(len(r), generator=torch.Generator().manual_seed(1))
    def arm(**kw):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = Trainer(TrainConfig(**BASE, **kw), copy.deepcopy(model), tok, task)
        w0 = [p.detach().float().clone() for p in t.policy.parameters()]
        t._update(r)
        d = torch.cat([(p.detach().float() - a).flatten() for a, p in zip(w0, t.policy.parameters())])
        state = [v for s in t.opt.state.values() for v in s.values() if v.dim() > 0]
        return dict(rel=(d.norm() / torch.cat([a.flatten() for a in w0]).norm()).item(), moved=(d != 0).float().mean().item(),
                    dtypes={p.dtype for p in t.policy.parameters()} | {v.dtype for v in state},
                    warned=any("master weights" in str(w.message) for w in caught))
    fp32, mixed = arm(dtype="float32", mixed_precision="no"), arm(dtype="bfloat16", mixed_precision="bf16")
    fp16, pure = arm(dtype="float16", mixed_precision="fp16"), arm(dtype="bfloat16", mixed_precision="no")
    # seed sweep (experiments/07_trainer/seed_sweep_precision.py, init seeds 0-4): mixed/fp32 0.99974-0.99978, fp16/fp32 >= 0.99997, pure/fp32 0.210-0.214 (moved 1.9-2.0%)
    assert fp32["dtypes"] == mixed["dtypes"] == fp16["dtypes"] == {torch.float32}     # weights and AdamW moments in fp32
    assert pure["dtypes"] == {torch.bfloat16} and pure["warned"] and not mixed["warned"]
    assert abs(mixed["rel"] / fp32["rel"] - 1) < 0.01 and abs(fp16["rel"] / fp32["rel"] - 1) < 0.01   # stated tolerance: 1%
    assert mixed["moved"] > 0.99 and fp32["moved"] > 0.99
    assert pure["rel"] / fp32["rel"] < 0.5 and pure["moved"] < 0.1                   # the rounding effect: most steps vanish

@pytest.mark.parametrize("fused", [None, False])
def test_sampler_and_learner_agree_in_bf16(tiny, fused):
    """Sampler and learner both run under bf16 autocast. Measured |learner - sampler| log-prob over real tokens: max 0.0104 / mean 0.00107
    (fused), 0.0107 / 0.00110 (HF path); fp32: max 9.5e-7. Stated tolerance for bf16: max < 0.05, mean < 0.005."""
    tok, model, task = tiny
    gaps = {}
    for mp in ("no", "bf16"):
        t = Trainer(TrainConfig(**BASE, mixed_precision=mp, fused=fused), copy.deepcopy(model), tok, task)
        r = t.rollout()
        d = (t.logprobs(t.policy, r) - r.sampler_logprobs)[r.completion_mask.bool()].abs()
        gaps[mp] = (d.max().item(), d.mean().item())
    assert gaps["no"][0] < 1e-5
    # seed sweep (experiments/07_trainer/seed_sweep_precision.py, init seeds 0-4, fused): bf16 max gap 0.0034-0.0105, mean 0.00102-0.00119
    assert gaps["bf16"][0] < 0.05 and gaps["bf16"][1] < 0.005
    assert gaps["bf16"][1] > 10 * gaps["no"][1]          # the bf16 run really ran in bf16

# ------------------------------------------------------------------ memory
def test_logprob_pass_peak_memory_is_bounded_by_the_micro_batch(tiny):
    """Peak live tensor bytes of Trainer.logprobs (no grad) at 64 and 256 rollout rows. Measured: micro_batch_size=32 gives 2.60 MB at
    both sizes (ratio 1.005: the (B, C) outputs); without micro-batching the peak grows with the rollout (ratio 4.0)."""
    tok, model, task = tiny
    peaks = {}
    for micro in (32, None):
        t = Trainer(TrainConfig(**(BASE | dict(prompts_per_step=16)), micro_batch_size=micro), copy.deepcopy(model), tok, task)
        for B in (64, 256):
            r = fake_rollout(B, len(tok))
            with TensorMemory() as mem: t.logprobs(t.policy, r, with_entropy=True)
            peaks[micro, B] = mem.peak
    assert peaks[32, 256] / peaks[32, 64] < 1.1
    assert peaks[None, 256] / peaks[None, 64] > 3.5      # the meter sees the unbounded pass
    assert peaks[32, 256] < peaks[None, 256] / 3

@pytest.fixture(scope="module")
def big_vocab():
    cfg = LlamaConfig(vocab_size=8192, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, intermediate_size=128,
                      max_position_embeddings=64, tie_word_embeddings=True)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg)

@pytest.mark.parametrize("fused", [None, False])
@pytest.mark.parametrize("kw", [dict(chunk_rows=7), dict(chunk_rows=1), dict(vocab_chunk=1000), dict(chunk_rows=50, vocab_chunk=3000),
                                dict(chunk_rows=7, top_k=20, top_p=0.9)])
def test_chunked_logprobs_equal_unchunked_with_gradients(big_vocab, fused, kw):
    "Values and gradients of chunked log-probs and entropies equal the unchunked ones to float rounding (measured: log-probs <= 1.9e-6, entropies <= 6.7e-6)."
    r = fake_rollout(16, 8192)
    r.completion_mask[::3, 5:] = 0                                   # ragged completions: padding is skipped by the chunked path
    trunc = {k: v for k, v in kw.items() if k in ("top_k", "top_p")}
    out = []
    for extra in ({}, kw):
        big_vocab.zero_grad()
        lp, ent = completion_logprobs(big_vocab, r, 0.7, fused=fused, micro_batch_size=8, **(trunc | extra))
        (lp.sum() + ent.sum()).backward()
        out.append((lp.detach(), ent.detach(), torch.cat([p.grad.flatten() for p in big_vocab.parameters()])))
    (lp0, e0, g0), (lp1, e1, g1) = out
    torch.testing.assert_close(lp1, lp0, atol=1e-5, rtol=0); torch.testing.assert_close(e1, e0, atol=5e-5, rtol=0)   # entropies of ~9 nats
    torch.testing.assert_close(g1, g0, atol=1e-4, rtol=1e-4)
    assert (lp1[r.completion_mask == 0] == 0).all() and (e1[r.completion_mask == 0] == 0).all()

def test_chunking_lowers_the_peak_of_a_large_vocabulary(big_vocab):
    "Measured (32-row micro-batches of 8 tokens, V = 8192): 41.9 MB unchunked, 8.5 MB with chunk_rows=64, 1.2 MB adding vocab_chunk=1024."
    r, peaks = fake_rollout(64, 8192), []
    for kw in (dict(), dict(chunk_rows=64), dict(chunk_rows=64, vocab_chunk=1024)):
        with torch.no_grad(), TensorMemory() as mem: completion_logprobs(big_vocab, r, 1.0, micro_batch_size=32, **kw)
        peaks.append(mem.peak)
    assert peaks[1] < peaks[0] / 3 and peaks[2] < peaks[1] / 3
    with pytest.raises(ValueError, match="vocab_chunk cannot replay"): completion_logprobs(big_vocab, r, vocab_chunk=64, top_k=5)
    with pytest.raises(ValueError, match="chunk_rows must be"): completion_logprobs(big_vocab, r, chunk_rows=0)

# ------------------------------------------------------------------ gradient checkpointing, fused switch
@pytest.mark.parametrize("fused", [None, False])
def test_gradient_checkpointing_recomputes_and_keeps_gradients(tiny, fused):
    "Each decoder MLP runs twice (forward + recompute) under gradient_checkpointing=True; the gradients are bitwise those without it."
    tok, model, task = tiny
    r = Trainer(TrainConfig(**BASE), copy.deepcopy(model), tok, task).rollout()
    out = {}
    for ckpt in (False, True):
        t = Trainer(TrainConfig(**BASE, gradient_checkpointing=ckpt, fused=fused), copy.deepcopy(model), tok, task)
        calls = []
        for layer in t.policy.model.layers: layer.mlp.register_forward_pre_hook(lambda *a: calls.append(1))
        t.logprobs(t.policy, r, grad=True).sum().backward()
        out[ckpt] = (len(calls), [p.grad.clone() for p in t.policy.parameters()], t.checkpointed_layers)
    n_layers = len(model.model.layers)
    assert out[True][2] == n_layers and out[False][2] == 0
    assert out[True][0] == 2 * out[False][0] > 0
    assert all(torch.equal(a, b) for a, b in zip(out[True][1], out[False][1]))

def test_fused_false_reaches_sampler_and_learner(tiny, monkeypatch):
    "With fused=False no pass asks for the fused forward (sampler, old/ref/update-KL log-probs, loss); fused=True is refused where it cannot run."
    tok, model, task = tiny
    asked = []
    real = R.decoder_parts
    for module in (R, FU):                                           # the learner asks in rollout, the sampler in fused
        monkeypatch.setattr(module, "decoder_parts", lambda m: asked.append(1) or real(m))
    kw = BASE | dict(lr=1e-3, beta=0.04, kl_every=1, num_iterations=2)
    Trainer(TrainConfig(**kw, fused=False), copy.deepcopy(model), tok, task).train_step()
    assert not asked
    Trainer(TrainConfig(**kw), copy.deepcopy(model), tok, task).train_step()
    assert asked                                                     # the control: the default does use it
    dropout = make_tiny_llama(tok, "tiny", max_len=64, seed=0); dropout.config.attention_dropout = 0.1
    with pytest.raises(ValueError, match="fused=True needs"): Trainer(TrainConfig(**BASE, fused=True), dropout, tok, task)

# ------------------------------------------------------------------ LoRA reference
def _storages_equal_to(w):
    "Distinct storages of live tensors holding exactly the values of `w`."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                                  # isinstance on some deprecated torch objects warns
        found = {t.untyped_storage().data_ptr() for t in gc.get_objects()
                 if isinstance(t, torch.Tensor) and t.shape == w.shape and t.dtype == w.dtype and torch.equal(t, w)}
    return len(found)

def test_lora_reference_is_the_adapter_disabled_base(tiny):
    tok, _, task = tiny
    base = make_tiny_llama(tok, "tiny", max_len=64, seed=1)            # weights no other test object holds
    r = Trainer(TrainConfig(**BASE), base, tok, task).rollout()
    with torch.no_grad(): base_lp, _ = completion_logprobs(base, r, 0.7)
    t = Trainer(TrainConfig(**BASE | dict(lr=1e-2, beta=0.04)), add_lora(base, r=4), tok, task)
    assert isinstance(t.ref, BaseReference) and list(t.ref.parameters()) == []
    r.advantages = torch.randn(len(r), generator=torch.Generator().manual_seed(1))
    for _ in range(2): t._update(r)                                   # adapters move away from the base (B, then A)
    ref_lp, pol_lp = t.logprobs(t.ref, r), t.logprobs(t.policy, r)
    assert torch.equal(ref_lp, base_lp)                               # bitwise the base model's log-probs
    assert (pol_lp - ref_lp).abs().max() > 1e-3                        # while the policy has moved
    w = t.policy.get_base_model().model.layers[0].self_attn.q_proj.base_layer.weight.detach()
    gc.collect()
    assert _storages_equal_to(w) == 1                                 # the base weights exist once
    extra = copy.deepcopy(t.policy)                                    # what the old deep-copy reference held: the meter sees a second copy
    gc.collect()
    assert _storages_equal_to(w) == 2
    del extra

def test_setup_with_lora_builds_the_base_reference():
    t = Trainer.setup(TrainConfig(sft_steps=5, sft_target=None, lora_r=4, beta=0.04, prompts_per_step=4, samples_per_prompt=2, eval_limit=10,
                                  progress=False, task_kwargs=dict(n_train=50, n_test=10)))
    assert isinstance(t.ref, BaseReference)

def test_fp16_run_resumes_exactly(tmp_path):
    "The fp16 loss scale is part of the checkpoint: 2 steps + resume to 3 equal 3 uninterrupted steps, weights and scale."
    kw = dict(sft_steps=5, sft_target=None, prompts_per_step=4, samples_per_prompt=4, eval_every=0, eval_limit=10, progress=False, lr=1e-3,
              format_weight=0.5, mixed_precision="fp16", checkpoint_every=1, task_kwargs=dict(n_train=50, n_test=10))
    def run(steps, out, resume=False, growing=True):
        t = Trainer.setup(TrainConfig(**kw, steps=steps, out=str(tmp_path / out)), resume=resume)
        if growing: t.scaler = torch.amp.GradScaler("cpu", growth_interval=1)   # the scale doubles after every clean step: its state matters
        t.fit(resume=resume); return t
    a = run(3, "a"); run(2, "b")
    c = run(3, "b", resume=True, growing=False)                          # the checkpoint restores the scale and growth_interval
    assert a.scaler.get_scale() == c.scaler.get_scale() > 65536.0
    assert all(p.dtype == torch.float32 for p in c.policy.parameters())
    assert all(torch.equal(x, y) for x, y in zip(a.policy.parameters(), c.policy.parameters()))

# ------------------------------------------------------------------ GPU-safe defaults at a large vocabulary
def test_large_vocabulary_defaults_chunk_and_match_unchunked(tiny):
    """A random-weight Llama with a 50,000-token head: the default ("auto") runs 8-row micro-batches and 1024-token head chunks
    (every gradient-pass head call sees <= 1024 rows of hidden states, never a (rows, C, d) block), and gives the log-probs, entropies
    and gradients of the explicit "off" (None: every row and token at once) to float rounding. A small vocabulary resolves to off."""
    tok, small, task = tiny
    cfg = LlamaConfig(vocab_size=50_000, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      intermediate_size=64, max_position_embeddings=256)
    torch.manual_seed(0)
    big = LlamaForCausalLM(cfg)
    r = fake_rollout(16, 50_000, C=140)                              # 8 rows x 140 tokens = 1120 per micro-batch: one full chunk and a tail
    r.completion_mask[::5, 100:] = 0
    out = {}
    for name, kw in (("auto", {}), ("off", dict(micro_batch_size=None, logprob_chunk_rows=None))):
        t = Trainer(TrainConfig(**BASE, **kw), big, tok, task)
        calls = []
        hook = big.get_output_embeddings().register_forward_hook(lambda m, a, o: calls.append(tuple(a[0].shape)) if torch.is_grad_enabled() else None)
        big.zero_grad()
        lp, ent = t.logprobs(t.policy, r, with_entropy=True, grad=True)
        (lp.sum() + 0.1 * ent.sum()).backward()
        hook.remove()
        out[name] = (t.resolved_memory, calls, lp.detach(), ent.detach(), torch.cat([p.grad.flatten() for p in big.parameters()]))
    (mem_a, calls_a, lp_a, ent_a, g_a), (mem_o, calls_o, lp_o, ent_o, g_o) = out["auto"], out["off"]
    assert mem_a == dict(vocab_size=50_000, micro_batch_size=8, logprob_chunk_rows=1024, vocab_chunk=None)
    assert mem_o == dict(vocab_size=50_000, micro_batch_size=None, logprob_chunk_rows=None, vocab_chunk=None)
    assert all(len(s) == 2 and s[0] <= 1024 for s in calls_a) and max(s[0] for s in calls_a) == 1024, calls_a   # chunked, and chunks fill up
    assert calls_o and all(len(s) == 3 for s in calls_o) and calls_o[0][0] == 16, calls_o                       # the whole (16, C, d) at once
    torch.testing.assert_close(lp_a, lp_o, atol=1e-5, rtol=0); torch.testing.assert_close(ent_a, ent_o, atol=5e-5, rtol=0)
    torch.testing.assert_close(g_a, g_o, atol=1e-5, rtol=1e-4)
    small_mem = Trainer(TrainConfig(**BASE), copy.deepcopy(small), tok, task).resolved_memory     # the chapters' tiny models: unchanged
    assert small_mem["vocab_size"] < 32_768 and small_mem["micro_batch_size"] is None and small_mem["logprob_chunk_rows"] is None
    assert Trainer(TrainConfig(**BASE, micro_batch_size=4, logprob_chunk_rows=64), big, tok, task).resolved_memory["logprob_chunk_rows"] == 64
