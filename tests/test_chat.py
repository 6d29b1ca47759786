"""Chat models on the CPU: the chat template reaches every prompt encoder (sampler, evaluation, trainer), the sampler stops on
every id of the model's generation_config.eos_token_id, and a locally saved Qwen2 chat checkpoint round-trips and trains."""
import pytest, torch
from rlref.models import (make_char_tokenizer, make_tiny_llama, make_chat_tokenizer, make_tiny_qwen2, save_policy, load_policy,
                          chat_prompts, stop_token_ids)
from rlref.rollout import encode_prompts, sample, completion_logprobs
from rlref.fused import decoder_parts
from rlref.evaluation import greedy_completions
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig

PROMPTS = ["12+34=", "7+8=", "1+1="]

@pytest.fixture(scope="module")
def chat():
    tok = make_chat_tokenizer()
    return make_tiny_qwen2(tok, "tiny", max_len=128, seed=0).eval(), tok

def _force_at(model, token: int, call: int, then: int | None = None):
    "A forward hook on the LM head that makes `token` certain at the `call`-th head call (0 = prefill: the first new token), and `then` after it."
    calls = [0]
    def hook(mod, inp, out):
        calls[0] += 1
        if calls[0] - 1 == call: out = out.clone(); out[..., token] += 1e4
        elif calls[0] - 1 > call and then is not None: out = out.clone(); out[..., then] += 1e4
        return out
    return model.lm_head.register_forward_hook(hook)

# --- the template ------------------------------------------------------------------------------------------------------
def test_template_applied_by_default_without_a_second_bos(chat):
    model, tok = chat
    ids, mask = encode_prompts(tok, PROMPTS, n=2, system_prompt="Add.")
    for row in range(0, 6, 2):
        real = ids[row][mask[row].bool()].tolist()
        text = tok.apply_chat_template([dict(role="system", content="Add."), dict(role="user", content=PROMPTS[row // 2])],
                                       add_generation_prompt=True, tokenize=False)
        assert real == tok(text, add_special_tokens=False)["input_ids"]
        assert tok.convert_ids_to_tokens(real[:1]) == ["<|im_start|>"] and tok.decode(real).endswith("<|im_start|>assistant\n")
    bos = make_char_tokenizer()   # a template that holds the <bos> itself (Llama-3 style): exactly one <bos>
    bos.chat_template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    ids, _ = encode_prompts(bos, ["1+1="])
    assert ids[0].tolist().count(bos.bos_token_id) == 1 and ids[0].tolist() == bos("1+1=")["input_ids"]

def test_template_not_applied_and_errors(chat):
    model, tok = chat
    raw, _ = encode_prompts(tok, PROMPTS, chat_template=False)
    assert tok.decode(raw[0]) == "12+34="
    char = make_char_tokenizer()   # no template: None means raw, exactly as before
    assert torch.equal(encode_prompts(char, PROMPTS)[0], encode_prompts(char, PROMPTS, chat_template=False)[0])
    assert encode_prompts(char, ["12+34="])[0][0].tolist() == char("12+34=")["input_ids"]
    with pytest.raises(ValueError, match="the tokenizer has no chat_template"): encode_prompts(char, PROMPTS, chat_template=True)
    with pytest.raises(ValueError, match="system_prompt needs a chat template"): encode_prompts(char, PROMPTS, system_prompt="Add.")
    with pytest.raises(ValueError, match="system_prompt needs a chat template"): sample(model, tok, PROMPTS, chat_template=False, system_prompt="x")
    with pytest.raises(ValueError, match="chat_template must be True, False or None"): chat_prompts(tok, PROMPTS, chat_template="yes")
    with pytest.raises(ValueError, match="eos_token_ids must be"): sample(model, tok, PROMPTS, eos_token_ids=["<|im_end|>"])

def test_defaults_unchanged_for_a_tokenizer_without_template():
    tok = make_char_tokenizer(); model = make_tiny_llama(tok, "tiny", max_len=64, seed=0)
    with torch.no_grad(): model.model.embed_tokens.weight[tok.eos_token_id] *= 4   # some rows end at <eos>
    assert stop_token_ids(model, tok) == [tok.eos_token_id]
    a = sample(model, tok, PROMPTS, n=4, max_new_tokens=10, generator=torch.Generator().manual_seed(1))
    b = sample(model, tok, PROMPTS, n=4, max_new_tokens=10, generator=torch.Generator().manual_seed(1), chat_template=False,
               eos_token_ids=tok.eos_token_id)
    assert (~a.truncated).any() and a.truncated.any()
    for f in ("prompt_ids", "completion_ids", "completion_mask", "sampler_logprobs", "lengths", "truncated"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f

# --- stop tokens -------------------------------------------------------------------------------------------------------
def test_rows_stop_at_im_end_with_mask_and_lengths(chat):
    model, tok = chat
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert stop_token_ids(model, tok) == [tok.eos_token_id, im_end]
    h = _force_at(model, im_end, 2)   # every row's third token is <|im_end|>
    try: r = sample(model, tok, PROMPTS, n=2, max_new_tokens=10, generator=torch.Generator().manual_seed(0))
    finally: h.remove()
    assert r.completion_ids.shape[1] == 3 and (r.completion_ids[:, 2] == im_end).all()
    assert r.lengths.tolist() == [3] * 6 and r.completion_mask.tolist() == [[1, 1, 1]] * 6 and not r.truncated.any()
    h = _force_at(model, im_end, 2)   # the same with the tokenizer's <eos> as the only stop token: the rows run on
    try: past = sample(model, tok, PROMPTS, n=2, max_new_tokens=10, generator=torch.Generator().manual_seed(0), eos_token_ids=[tok.eos_token_id])
    finally: h.remove()
    assert past.completion_ids.shape[1] == 10 and (past.completion_ids[:, 2] == im_end).all() and (past.lengths > 3).all()

def test_mixed_stops_sampled(chat):
    "A +3-nat bias on <|im_end|>: some rows end there, others run on; after the first stop id a row holds only masked padding."
    model, tok = chat
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    bias = torch.zeros(len(tok)); bias[im_end] = 3.0
    h = model.lm_head.register_forward_hook(lambda mod, inp, out: out + bias)
    try: r = sample(model, tok, PROMPTS, n=4, max_new_tokens=12, generator=torch.Generator().manual_seed(0))
    finally: h.remove()
    stop = torch.isin(r.completion_ids, torch.tensor([tok.eos_token_id, im_end]))   # (B, C)
    ended = stop.any(1)
    # seed sweep (init and generator seeds 0-7, in 03_rollout's setting): 6 to 10 of 12 rows end at <|im_end|>, the rest run to 12 tokens
    assert ended.sum() >= 1 and (~ended).sum() >= 1
    first = stop.int().argmax(1)
    assert torch.equal(r.lengths[ended], first[ended] + 1) and (r.lengths[~ended] == 12).all()
    assert torch.equal(r.truncated, ~ended) and torch.equal(r.completion_mask.sum(1), r.lengths)
    after = torch.arange(r.completion_ids.shape[1])[None] >= r.lengths[:, None]   # (B, C) past each row's end
    assert (r.completion_ids[after] == tok.pad_token_id).all() and (r.sampler_logprobs[after] == 0).all()

def test_greedy_completions_use_template_and_stop_list(chat):
    "HF generate (the evaluation) and rlref's greedy sampler agree on the chat model: same template, same stop set."
    model, tok = chat
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    seven = tok.convert_tokens_to_ids("7")   # after the forced <|im_end|>, "7" would follow: only a stop shows no 7s
    h = _force_at(model, im_end, 2, then=seven)
    try: hf = greedy_completions(model, tok, PROMPTS, max_new_tokens=8, system_prompt="Add.")
    finally: h.remove()
    h = _force_at(model, im_end, 2, then=seven)
    try: ours = sample(model, tok, PROMPTS, max_new_tokens=8, greedy=True, system_prompt="Add.")
    finally: h.remove()
    assert hf == ours.completions and (ours.lengths == 3).all()   # two tokens, then <|im_end|> (decoded away)
    assert all("777" not in c for c in hf)

# --- the fused forward on Qwen2 ------------------------------------------------------------------------------------------
def test_qwen2_chat_sampler_logprobs_equal_learner(chat):
    model, tok = chat
    assert decoder_parts(model) is not None and model.model.layers[0].self_attn.k_proj.bias is not None
    r = sample(model, tok, PROMPTS, n=4, max_new_tokens=8, system_prompt="Add.", generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        for fused in (True, False):
            lp, _ = completion_logprobs(model, r, fused=fused)
            torch.testing.assert_close(lp, r.sampler_logprobs, atol=1e-5, rtol=0)

# --- save, reload, train ---------------------------------------------------------------------------------------------------
def test_save_reload_round_trip(chat, tmp_path):
    model, tok = chat
    save_policy(model, tok, tmp_path)
    model2, tok2 = load_policy(tmp_path, device="cpu")
    assert type(model2).__name__ == "Qwen2ForCausalLM" and tok2.chat_template == tok.chat_template
    assert stop_token_ids(model2, tok2) == stop_token_ids(model, tok)
    for s in ("12+34=", "a b  c\n", "héllo ×", "<|im_start|>user\n1<|im_end|>"):
        assert tok2(s)["input_ids"] == tok(s)["input_ids"], s
    assert torch.equal(encode_prompts(tok2, PROMPTS, system_prompt="Add.")[0], encode_prompts(tok, PROMPTS, system_prompt="Add.")[0])
    a = sample(model, tok, PROMPTS, n=2, max_new_tokens=6, generator=torch.Generator().manual_seed(0))
    b = sample(model2.eval(), tok2, PROMPTS, n=2, max_new_tokens=6, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a.completion_ids, b.completion_ids) and a.completions == b.completions

@pytest.mark.parametrize("kwargs,msg", [(dict(chat_template="yes"), "chat_template must be"), (dict(chat_template=1), "chat_template must be"),
                                        (dict(system_prompt="Add.", chat_template=False), "system_prompt must be"),
                                        (dict(system_prompt=3), "system_prompt must be")])
def test_config_validation(kwargs, msg):
    with pytest.raises(ValueError, match=msg): TrainConfig(**kwargs)

def test_trainer_on_saved_qwen2_chat_model(chat, tmp_path):
    model, tok = chat
    save_policy(model, tok, tmp_path / "qwen")
    cfg = TrainConfig(model=str(tmp_path / "qwen"), chat_template=True, system_prompt="Add.", steps=2, prompts_per_step=4,
                      samples_per_prompt=4, eval_every=2, eval_limit=8, checkpoint_every=0, progress=False, lr=1e-3,
                      entropy_coef=0.01,   # a random model solves nothing: the entropy bonus gives the update a gradient
                      task_kwargs=dict(n_train=50, n_test=10))
    tr = Trainer.setup(cfg)
    assert type(tr.policy).__name__ == "Qwen2ForCausalLM"
    r = tr.rollout()
    want = chat_prompts(tr.tok, r.prompts, True, "Add.")[0]
    for i in range(len(r)):
        real = r.prompt_ids[i][r.prompt_mask[i].bool()].tolist()
        assert real[:1] == [tok.convert_tokens_to_ids("<|im_start|>")] and tr.tok.decode(real) == want[i]
    before = {n: p.detach().clone() for n, p in tr.policy.named_parameters()}
    metrics = [tr.train_step() for _ in range(2)]
    assert tr.step == 2 and all(torch.isfinite(torch.tensor(m["loss"])) for m in metrics) and "eval_accuracy" in metrics[-1]
    assert any(not torch.equal(before[n], p) for n, p in tr.policy.named_parameters())
