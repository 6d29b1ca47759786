"Tensor-level building blocks on the data side: the shifted tokenisation, the SFT micro-step, log-probs on plain tensors, answer parsers."
import math, types
import pytest, torch
from rlref.models import (make_char_tokenizer, make_tiny_llama, tokenize_prompt_and_output, encode_pairs, sft_loss,
                          sft_microbatch_train_step)
from rlref.rollout import sample, completion_logprobs, response_logprobs
from rlref.core import token_entropy
from rlref.rewards import parse_last_number, parse_choice_letter, parse_int

@pytest.fixture(scope="module")
def tok(): return make_char_tokenizer()

@pytest.fixture(scope="module")
def model(tok): return make_tiny_llama(tok, "tiny", max_len=64, seed=0).eval()

def _ids(tok, s): return tok(s, add_special_tokens=False)["input_ids"]

# --- tokenize_prompt_and_output ---------------------------------------------------------------------------------

PROMPTS, OUTPUTS = ["1+2=", "123+4=", "5+5="], ["3", "127", "10"]

def test_shifted_format_by_hand(tok):
    bos, eos, pad = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id
    full = [[bos] + _ids(tok, p + o) for p, o in zip(PROMPTS, OUTPUTS)]         # hand-built token rows
    n_prompt = [1 + len(p) for p in PROMPTS]
    L = max(map(len, full)); assert L == 10
    padded = [r + [pad] * (L - len(r)) for r in full]
    resp = [[0] * n + [1] * (len(r) - n) + [0] * (L - len(r)) for r, n in zip(full, n_prompt)]
    t = tokenize_prompt_and_output(PROMPTS, OUTPUTS, tok)
    assert set(t) == {"input_ids", "labels", "response_mask"}
    assert all(v.shape == (3, 9) for v in t.values())
    assert t["input_ids"].tolist() == [r[:-1] for r in padded]
    assert t["labels"].tolist() == [r[1:] for r in padded]
    assert t["response_mask"].tolist() == [m[1:] for m in resp]
    assert t["response_mask"].tolist() == [[0,0,0,0,1,0,0,0,0], [0,0,0,0,0,0,1,1,1], [0,0,0,0,1,1,0,0,0]]
    # the masked labels are exactly the output tokens
    assert [t["labels"][i][t["response_mask"][i].bool()].tolist() for i in range(3)] == [_ids(tok, o) for o in OUTPUTS]

def test_shifted_format_add_eos(tok):
    t = tokenize_prompt_and_output(PROMPTS, OUTPUTS, tok, add_eos=True)
    assert all(v.shape == (3, 10) for v in t.values())
    assert [t["labels"][i][t["response_mask"][i].bool()].tolist() for i in range(3)] == [_ids(tok, o) + [tok.eos_token_id] for o in OUTPUTS]
    assert t["response_mask"].sum(1).tolist() == [2, 4, 3]

def _encode_pairs_before(tokenizer, prompts, answers):
    "encode_pairs as it was before it shared _pair_rows (the reference for bit-identical SFT batches)."
    rows, masks = [], []
    for p, a in zip(prompts, answers):
        p_ids = tokenizer(p)["input_ids"]
        a_ids = tokenizer(a, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append(p_ids + a_ids); masks.append([0] * len(p_ids) + [1] * len(a_ids))
    longest = max(map(len, rows))
    pad = lambda r, v: r + [v] * (longest - len(r))
    return dict(input_ids=torch.tensor([pad(r, tokenizer.pad_token_id) for r in rows]),
                attention_mask=torch.tensor([pad([1] * len(r), 0) for r in rows]),
                loss_mask=torch.tensor([pad(m, 0) for m in masks]))

def test_encode_pairs_unchanged_and_shifted(tok):
    prompts, answers = ["1+2=", "10+20=", "999+1=", "a"], ["3", "30", "1000", ""]
    new, old = encode_pairs(tok, prompts, answers), _encode_pairs_before(tok, prompts, answers)
    for k in old: assert torch.equal(new[k], old[k]), k
    t = tokenize_prompt_and_output(prompts, answers, tok, add_eos=True)
    assert torch.equal(t["input_ids"], new["input_ids"][:, :-1])
    assert torch.equal(t["labels"], new["input_ids"][:, 1:])
    assert torch.equal(t["response_mask"], new["loss_mask"][:, 1:])

def test_sft_loss_from_shifted_tensors(tok, model):
    enc = encode_pairs(tok, ["1+2=", "10+20="], ["3", "30"])
    t = tokenize_prompt_and_output(["1+2=", "10+20="], ["3", "30"], tok, add_eos=True)
    with torch.no_grad():
        lp = response_logprobs(model, t["input_ids"], t["labels"])["log_probs"]
        ref = sft_loss(model, enc)
    m = t["response_mask"].float()
    assert abs(((-lp * m).sum() / m.sum()).item() - ref.item()) < 1e-6

def test_tokenize_bad_input(tok):
    with pytest.raises(ValueError, match="1 prompts but 2 outputs"): tokenize_prompt_and_output(["1+2="], ["3", "4"], tok)
    with pytest.raises(ValueError, match="no prompts"): tokenize_prompt_and_output([], [], tok)
    with pytest.raises(ValueError, match="lists of strings"): tokenize_prompt_and_output("1+2=", "3", tok)
    no_pad = types.SimpleNamespace(pad_token_id=None)
    with pytest.raises(ValueError, match="no pad token"): tokenize_prompt_and_output(["1"], ["2"], no_pad)

# --- sft_microbatch_train_step -----------------------------------------------------------------------------------

def test_sft_microstep_values_by_hand():
    lp = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5, -9.0]], requires_grad=True)
    m = torch.tensor([[0, 1, 1], [1, 1, 0]])
    loss, meta = sft_microbatch_train_step(lp, m, gradient_accumulation_steps=2, normalize_constant=2.0)
    # sums 5 and 1, / c=2 -> 2.5, 0.5; mean 1.5; / G=2 -> 0.75; grad -m / (G * B * c) = -m / 8
    assert loss.item() == pytest.approx(0.75, abs=1e-7)
    torch.testing.assert_close(lp.grad, -m.float() / 8)
    torch.testing.assert_close(meta["per_example_nll"], torch.tensor([2.5, 0.5]))
    assert meta["response_tokens"].item() == 4
    # the default c = 1, G = 1 is the mean of the summed NLLs
    lp2 = lp.detach().clone().requires_grad_()
    assert sft_microbatch_train_step(lp2, m, 1)[0].item() == pytest.approx(3.0)

def test_sft_microstep_accumulation_equivalence():
    g = torch.Generator().manual_seed(0)
    lp = torch.randn(6, 5, generator=g).log_softmax(-1)
    m = (torch.rand(6, 5, generator=g) > 0.3).long()
    whole, parts = lp.clone().requires_grad_(), lp.clone().requires_grad_()
    loss_w, _ = sft_microbatch_train_step(whole, m, 1, normalize_constant=4.0)
    total = 0.0
    for rows in (slice(0, 2), slice(2, 4), slice(4, 6)):
        total += sft_microbatch_train_step(parts[rows], m[rows], 3, normalize_constant=4.0)[0].item()
    torch.testing.assert_close(parts.grad, whole.grad, atol=1e-7, rtol=0)
    assert total == pytest.approx(loss_w.item(), abs=1e-6)

def test_sft_microstep_trains_a_model_like_sft_loss(tok, model):
    "With c = response tokens per example, the micro-step's loss and gradient are sft_loss's (token mean)."
    enc = encode_pairs(tok, ["1+2=", "10+20=", "7+8="], ["3", "30", "15"])
    t = tokenize_prompt_and_output(["1+2=", "10+20=", "7+8="], ["3", "30", "15"], tok, add_eos=True)
    model.zero_grad(set_to_none=True)
    sft_loss(model, enc).backward()
    ref = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    lp = response_logprobs(model, t["input_ids"], t["labels"])["log_probs"]
    c = (t["response_mask"].sum() / 3).item()
    sft_microbatch_train_step(lp, t["response_mask"], 1, normalize_constant=c)
    for n, p in model.named_parameters(): torch.testing.assert_close(p.grad, ref[n], atol=1e-6, rtol=1e-4)
    model.zero_grad(set_to_none=True)

def test_sft_microstep_bad_input():
    lp, m = torch.zeros(2, 3, requires_grad=True), torch.ones(2, 3)
    with pytest.raises(ValueError, match="gradient_accumulation_steps"): sft_microbatch_train_step(lp, m, 0)
    with pytest.raises(ValueError, match="normalize_constant"): sft_microbatch_train_step(lp, m, 1, normalize_constant=0)
    with pytest.raises(ValueError, match="must both be"): sft_microbatch_train_step(lp, m[:, :2], 1)

# --- response_logprobs -------------------------------------------------------------------------------------------

def test_response_logprobs_equals_completion_logprobs(tok, model):
    ro = sample(model, tok, ["12+34=", "7+8=", "a1b2c3|b=", "9="], n=3, max_new_tokens=10, temperature=0.8,
                generator=torch.Generator().manual_seed(0))
    texts = [tok.decode(r[m.bool()], skip_special_tokens=False) for r, m in zip(ro.completion_ids, ro.completion_mask)]
    t = tokenize_prompt_and_output(ro.prompts, texts, tok)
    resp, cm = t["response_mask"].bool(), ro.completion_mask.bool()
    assert torch.equal(t["labels"][resp], ro.completion_ids[cm])
    with torch.no_grad():
        out = response_logprobs(model, t["input_ids"], t["labels"], return_token_entropy=True, temperature=0.8)
        lp, ent = completion_logprobs(model, ro, temperature=0.8)
    assert set(out) == {"log_probs", "token_entropy"} and out["log_probs"].shape == t["labels"].shape
    torch.testing.assert_close(out["log_probs"][resp], lp[cm], atol=1e-6, rtol=0)
    torch.testing.assert_close(out["token_entropy"][resp], ent[cm], atol=1e-5, rtol=0)
    torch.testing.assert_close(out["log_probs"][resp], ro.sampler_logprobs[cm], atol=1e-5, rtol=0)   # and the sampler's

class _FixedLogits(torch.nn.Module):
    "A stand-in causal LM whose logits are given: lets the test check log-probs and entropy by hand."
    def __init__(self, logits): super().__init__(); self.z = logits
    def forward(self, input_ids): return types.SimpleNamespace(logits=self.z)

def test_response_logprobs_and_entropy_by_hand():
    z = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]])              # (1, 2, 2): p = (1/4, 3/4), then (1/2, 1/2)
    out = response_logprobs(_FixedLogits(z), torch.zeros(1, 2, dtype=torch.long), torch.tensor([[1, 0]]), return_token_entropy=True)
    torch.testing.assert_close(out["log_probs"], torch.tensor([[math.log(0.75), math.log(0.5)]]))
    h1 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    torch.testing.assert_close(out["token_entropy"], torch.tensor([[h1, math.log(2.0)]]))
    torch.testing.assert_close(token_entropy(z), out["token_entropy"])
    hot = response_logprobs(_FixedLogits(z), torch.zeros(1, 2, dtype=torch.long), torch.tensor([[1, 0]]), temperature=0.5)
    torch.testing.assert_close(hot["log_probs"], torch.tensor([[math.log(0.9), math.log(0.5)]]))   # p ∝ (1, 9) at τ = 1/2
    assert "token_entropy" not in hot

def test_response_logprobs_bad_input(model):
    with pytest.raises(ValueError, match="must both be"): response_logprobs(model, torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"): response_logprobs(model, torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long), temperature=0)

# --- parsers -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,want", [
    ("48/2 = 24 clips, so 48+24 = 72", 72), ("It costs $1,234.50.", 1234.5), ("from -3 to -7", -7), ("46.", 46),
    ("version 2 of 3.0", 3.0), ("12,345,678 people", 12345678), ("x = 0.25, y = 10", 10), ("no digits", None), ("", None), (None, None)])
def test_parse_last_number(text, want):
    got = parse_last_number(text)
    assert got == want and type(got) is type(want)

def test_parse_last_number_vs_parse_int():
    assert parse_int("48/2 = 24 clips, so 48+24 = 72") == 48 and parse_last_number("48/2 = 24 clips, so 48+24 = 72") == 72

@pytest.mark.parametrize("text,want", [
    ("(B)", "B"), ("Answer: C", "C"), ("answer: (c)", None), ("the answer is D.", "D"), ("The final answer is [A]", "A"),
    ("B", "B"), ("B.", "B"), (" A) because 2 > 1", "A"), (r"so \boxed{C}", "C"), (r"\boxed{\text{(B)}}", "B"), (r"\boxed{42}", None),
    ("The answer is (A), not (B)", "A"), ("(A) is wrong, (B) is right", None), ("Both (C) and (C) say so", "C"),
    ("I think it's a trick", None), ("A cat sat", None), ("E", None), ("#### D", "D"), ("", None), (None, None)])
def test_parse_choice_letter(text, want):
    assert parse_choice_letter(text) == want

def test_parse_choice_letter_choices():
    assert parse_choice_letter("Answer: E", choices="ABCDE") == "E"
    assert parse_choice_letter("(E)", choices="ABCD") is None
    for bad in ("", "AAB", "A1", None):
        with pytest.raises(ValueError, match="choices must be"): parse_choice_letter("B", choices=bad)
