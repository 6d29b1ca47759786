"""Chapter 35 (rlref.vision): bad inputs fail with one clear message, each puzzle's answer is what its transform did, the tiny VLM
saves and reloads with identical logits, sampler and learner agree on image-conditioned log-probs (also inside the trainer),
GRPO on rotation puzzles lifts accuracy above chance (one seed here, five in the check's sweep), and the sweep script is resumable."""
import itertools, json, math, subprocess, sys, tempfile
from pathlib import Path
import pytest, torch
import torch.nn.functional as F
from rlref.models import save_policy, load_policy
from rlref.rollout import sample, completion_logprobs
from rlref.vision import (PUZZLES, CHANCE, MASK_VALUE, jitter, tiles, untile, check_picture, rotation_puzzle, jigsaw_puzzle, inpainting_puzzle,
    similarity_puzzle, make_puzzles, puzzle_correct, partial_credit, puzzle_format, make_vlm_tokenizer, make_tiny_vlm, puzzle_prompt,
    load_digit_pictures, images_of, make_warmup, warm_up, PuzzleTrainer, puzzle_task, puzzle_config, run_arm, n_image_tokens, TinyVLM)

ROOT = Path(__file__).resolve().parents[1]
torch.set_num_threads(1)
X, Y = load_digit_pictures("train")

@pytest.fixture(scope="module")
def vlm():
    tok = make_vlm_tokenizer()
    return make_tiny_vlm(tok, seed=0), tok

def corr(a, b):
    a, b = a.flatten() - a.mean(), b.flatten() - b.mean()
    return float(a @ b / (a.norm() * b.norm()))

def match(a, b):
    "The best correlation of picture `a` with `b` shifted by up to one pixel (the jitter's crop)."
    return max(corr(a, F.pad(b, (1, 1, 1, 1))[dy:dy + 16, dx:dx + 16]) for dy in range(3) for dx in range(3))

@pytest.mark.parametrize("call,msg", [
    (lambda: check_picture(torch.zeros(8, 8)), "must have shape (16, 16)"),
    (lambda: check_picture(torch.zeros(16, 16, dtype=torch.uint8)), "floating-point"),
    (lambda: check_picture([[0.0] * 16] * 16), "must be a torch.Tensor"),
    (lambda: rotation_puzzle(torch.zeros(16, 16, dtype=torch.long), torch.Generator()), "floating-point"),
    (lambda: tiles(torch.zeros(16, 16), 3), "grid 3 does not divide the 16x16 picture"),
    (lambda: tiles(torch.zeros(16, 16), 0), "grid must be an int >= 1"),
    (lambda: make_puzzles(X, "mirror", 4), "unknown puzzle 'mirror'"),
    (lambda: make_puzzles(X, [], 4), "at least one puzzle"),
    (lambda: make_puzzles(X, "rotation", 0), "n must be an int >= 1"),
    (lambda: make_puzzles(X[:, :8, :8], "rotation", 2), "shape (16, 16)"),
    (lambda: n_image_tokens(patch_size=5), "does not divide"),
    (lambda: load_digit_pictures("val"), "split must be"),
    (lambda: run_arm(None, None, "colour"), "unknown arm 'colour'"),
])
def test_bad_inputs(call, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")): call()

def test_bad_images(vlm):
    model, tok = vlm
    ids = tok([puzzle_prompt("rot")] * 2, return_tensors="pt")["input_ids"]
    pv = torch.zeros(2, 16, 32)
    for bad, msg in ((None, "no images were given"), (pv[:1], "one image per row"), (pv[:, :, :16], r"shape \(B, 16, 32\)"),
                     (pv.long(), "floating-point"), (pv.numpy(), "must be a torch.Tensor")):
        with pytest.raises(ValueError, match=msg): model(ids, pixel_values=bad)
    with pytest.raises(ValueError, match="floating-point"):
        with model.images(pv.int()): pass

def test_tiles_roundtrip():
    a = torch.arange(16.).reshape(4, 4)
    assert torch.equal(tiles(a)[3], torch.tensor([[10., 11.], [14., 15.]]))
    assert torch.equal(untile(tiles(a)), a)
    assert torch.equal(untile(tiles(X[0], 4)), X[0])

def test_puzzle_answers_undo_the_transform():
    g = torch.Generator().manual_seed(1)
    for i in range(30):
        img = X[i]
        c, k = rotation_puzzle(img, g)
        assert match(torch.rot90(c[:, :16], -int(k), (0, 1)), img) > 0.8, "undoing the answer's quarter turns restores the picture"
        assert torch.equal(c[:, 16:], torch.zeros(16, 16))
        c, perm = jigsaw_puzzle(img, g)
        assert sorted(perm) == list("0123")
        def restore(order): back = torch.empty(4, 8, 8); back[torch.tensor(order)] = tiles(c[:, :16]); return untile(back)
        assert corr(restore([int(d) for d in perm]), img) == max(corr(restore(list(o)), img) for o in itertools.permutations(range(4))), "the answer's order restores the picture best"
        pic = jitter(img, torch.Generator().set_state(g.get_state()))          # the picture the puzzle starts from (its first draws)
        c, s = inpainting_puzzle(img, g, X)
        hole = (c[:, :16] == MASK_VALUE).nonzero(); r0, c0 = hole.min(0).values.tolist()
        assert len(hole) == 16 and bool((pic[r0:r0 + 4, c0:c0 + 4].clamp(min=0).sum() > 2.0))   # one 4x4 hole, with ink in it
        slots = tiles(c[:, 16:])[:, ::2, ::2]                                  # (4, 4, 4) the candidates at picture scale
        assert [bool(torch.equal(sl, pic[r0:r0 + 4, c0:c0 + 4])) for sl in slots] == [k == int(s) for k in range(4)], "only the answer's slot holds the hidden patch"
        view = F.avg_pool2d(jitter(img, torch.Generator().set_state(g.get_state()))[None, None], 2)[0, 0]   # its first draw: the true view
        c, s = similarity_puzzle(img, g, X)
        assert [bool(torch.equal(v, view)) for v in tiles(c[:, 16:])] == [k == int(s) for k in range(4)], "only the answer's slot holds the picture's view"

def test_answers_are_uniform_and_seeded():
    a = make_puzzles(X, "rotation", 400, seed=3)["answer"]
    assert all(abs(a.count(str(k)) / 400 - 0.25) < 0.07 for k in range(4))
    assert make_puzzles(X, ["jigsaw", "inpainting"], 6, seed=4)["answer"] == make_puzzles(X, ["jigsaw", "inpainting"], 6, seed=4)["answer"]
    assert math.isclose(CHANCE["jigsaw"], 1 / 24)

def test_verifiers_literal():
    assert puzzle_correct(None, ["3", " 3\n", "03", ""], ["3"] * 4) == [1.0, 1.0, 0.0, 0.0]
    assert partial_credit(None, ["0123", "1023", "3210", "012", "01234"], ["0123"] * 5) == [1.0, 0.5, 0.0, 0.75, 1.0]
    assert puzzle_format(None, ["2", "12", "0123", "01a3", "0123"], ["1", "1", "3210", "3210", "0"]) == [1.0, 0.0, 1.0, 0.0, 0.0]

def test_save_reload_identical_logits(vlm):
    model, tok = vlm
    pv = torch.stack([rotation_puzzle(X[i], torch.Generator().manual_seed(i))[0] for i in range(3)])
    ids = tok([puzzle_prompt("rot")] * 3, return_tensors="pt")["input_ids"]
    with tempfile.TemporaryDirectory() as d:
        save_policy(model, tok, d)
        m2, t2 = load_policy(d)
        assert type(m2) is TinyVLM and t2.convert_tokens_to_ids("<image>") == tok.convert_tokens_to_ids("<image>")
        assert torch.equal(m2(ids, pixel_values=pv).logits, model(ids, pixel_values=pv).logits)

def test_sampler_learner_logprobs_match(vlm):
    model, tok = vlm
    ds = make_puzzles(X, ["rotation", "jigsaw"], 6, seed=0)
    with model.images(images_of(ds).repeat_interleave(8, 0)):
        r = sample(model, tok, list(ds["prompt"]), n=8, max_new_tokens=5, generator=torch.Generator().manual_seed(0))
        lp, _ = completion_logprobs(model, r, micro_batch_size=None)
    assert (lp - r.sampler_logprobs).abs().max() <= 1e-5

def test_trainer_uses_the_rows_images(vlm):
    model, tok = vlm
    tr = PuzzleTrainer(puzzle_config(0, steps=1, prompts_per_step=4, micro_batch_size=8), model, tok,
                       puzzle_task(make_puzzles(X, "rotation", 20, seed=1), make_puzzles(X, "rotation", 4, seed=2)))
    r = tr.rollout()
    assert r.extras["pixel_values"].shape == (32, 16, 32)
    assert (tr.logprobs(model, r) - r.sampler_logprobs).abs().max() <= 1e-5
    shuffled = r.select(torch.arange(len(r)))
    shuffled.extras["pixel_values"] = r.extras["pixel_values"].roll(8, 0)      # other prompts' images: other log-probs
    assert (tr.logprobs(model, shuffled) - r.sampler_logprobs).abs().max() > 1e-4

def test_grpo_lifts_rotation_above_chance():
    """GRPO on rotation puzzles from the 150-step warm-up lifts held-out greedy accuracy (100 fresh puzzles) above chance (1/4) by 0.1.
    The recipe is the sweep's with a lower lr over more steps (lr 3e-4, 150 steps of 16 puzzles x 8). Its seed sweep
    (experiments/35_visual_puzzles/seed_sweep_rotation.jsonl, written by sweep.py --arms rotation --set lr=3e-4,steps=150) ends at
    0.50, 0.52, 0.23, 0.47, 0.50 on seeds 0-4: seed 2 collapses onto one answer, so this check holds with margin (0.15) on the seed
    it runs and fails on one seed of five. `make test` runs seed 0 (about a CPU minute)."""
    from rlref.vision import warm_start_vlm
    model, tok = warm_start_vlm(0, steps=150)
    res = run_arm(model, tok, "rotation", 0, eval_every=1000, lr=3e-4, steps=150)
    assert res["curve"][0]["step"] == 0 and res["curve"][-1]["step"] == 150
    assert res["curve"][-1]["rotation"] >= CHANCE["rotation"] + 0.1, res["curve"]

def test_sweep_resumes_without_training(tmp_path):
    "Asked only for runs already in its log, the sweep script exits without training and leaves the log byte-identical."
    log = ROOT / "experiments" / "35_visual_puzzles" / "sweep.jsonl"
    if not log.exists(): pytest.skip("no sweep log yet")
    out = tmp_path / "log.jsonl"; out.write_bytes(log.read_bytes())
    done = [json.loads(l) for l in out.read_text().splitlines() if l.strip()]
    arm, seed = done[-1]["arm"], done[-1]["seed"]
    subprocess.run([sys.executable, str(ROOT / "experiments" / "35_visual_puzzles" / "sweep.py"), "--arms", arm, "--seeds", str(seed), "--out", str(out)],
                   check=True, cwd=ROOT, capture_output=True, timeout=300)
    assert out.read_bytes() == log.read_bytes()
