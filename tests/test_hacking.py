"Chapter 33 (rlref.flow.hacking): artifact injectors, the artifact reward, the proxies, the realism metrics, bad inputs."
import pytest, torch
from rlref.flow.model import load_digits_tensors, pretrained_flow
from rlref.flow.hacking import (ARTIFACTS, ARMS, check_images, salt_pepper, checkerboard, shifted_stroke, blotch, inject_artifacts,
                                curated_set, train_artifact_model, artifact_reward, aesthetic_reward, with_artifact_reward,
                                pairwise_accuracy, pairwise_table, PCARealism, diversity, hacking_kit, arm_reward, hacking_eval)

torch.set_num_threads(1)

@pytest.fixture(scope="module")
def digits():
    X, y = load_digits_tensors()
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    return X, y, perm

def test_injectors_literal():
    blank = torch.full((500, 64), -1.0)
    sp = salt_pepper(blank, frac=0.2, generator=torch.Generator().manual_seed(0))
    assert abs((sp > 0).float().mean().item() - 0.1) < 0.01                      # half the hits are ink
    cb = checkerboard(torch.zeros(3, 64), strength=0.3, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(cb.abs(), torch.full((3, 64), 0.3)) and (cb[:, 0] == -cb[:, 1]).all() and (cb[:, 0] == -cb[:, 8]).all()
    one = torch.full((1, 64), -1.0); one[0, 27] = 1.0
    assert (shifted_stroke(one, generator=torch.Generator().manual_seed(3)) > 0).sum().item() == 2
    assert (blotch(torch.full((4, 64), -1.0), size=2, generator=torch.Generator().manual_seed(0)) > 0).sum(1).tolist() == [4] * 4
    for fn in ARTIFACTS.values(): assert fn(torch.zeros(5, 64), generator=torch.Generator()).shape == (5, 64)

def test_inject_changes_digits(digits):
    X, _, _ = digits
    out, which = inject_artifacts(X[:200], generator=torch.Generator().manual_seed(0))
    changed = (out != X[:200]).any(1).float().mean().item()
    assert changed > 0.95 and set(which.tolist()) == {0, 1, 2, 3}
    cx, cy = curated_set(X, n=50, generator=torch.Generator().manual_seed(0))
    assert cx.shape == (100, 64) and cy.tolist() == [0.0] * 50 + [1.0] * 50

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_r_art_penalises_artifacts(digits, seed):
    "At test size (300 steps on 100 + 100 digits), r_art prefers the clean digit of a held-out pair, on every seed."
    X, y, perm = digits
    cx, cy = curated_set(X[perm[:1347]], n=100, generator=torch.Generator().manual_seed(seed))
    r_art = artifact_reward(train_artifact_model(cx, cy, steps=300, seed=seed))
    held = perm[1347:]
    corrupt, _ = inject_artifacts(X[held], generator=torch.Generator().manual_seed(100 + seed))
    gap = (r_art(X[held]).mean() - r_art(corrupt).mean()).item()
    assert gap > 0.6, gap
    assert pairwise_accuracy(r_art, X[held], corrupt, y[held]) > 0.9
    # the aesthetic proxy prefers the corrupted digit more often than not (below chance)
    assert pairwise_accuracy(aesthetic_reward, X[held], corrupt, y[held]) < 0.4

def test_pairwise_metric():
    x, lab = torch.zeros(4, 64), torch.zeros(4, dtype=torch.long)
    assert pairwise_accuracy(lambda a, l: torch.zeros(len(a)), x, x + 1, lab) == 0.5
    assert pairwise_accuracy(lambda a, l: a.mean(1), x, x + 1, lab) == 0.0
    t = pairwise_table({"neg_mean": lambda a, l: -a.mean(1)}, torch.full((3, 64), -1.0), torch.zeros(3, dtype=torch.long), torch.Generator().manual_seed(0))
    assert set(t["neg_mean"]) == set(ARTIFACTS) | {"all"}

def test_realism_and_diversity(digits):
    X, _, perm = digits
    pca = PCARealism(X[perm[:1000]])
    held = X[perm[1347:]]
    corrupt, _ = inject_artifacts(held, generator=torch.Generator().manual_seed(0))
    assert pca.nn_distance(corrupt).mean() > 1.2 * pca.nn_distance(held).mean()
    assert diversity(torch.ones(4, 64), torch.tensor([0, 0, 1, 1])) == 0.0
    assert abs(diversity(torch.stack([torch.zeros(64), torch.ones(64)]), torch.tensor([5, 5])) - 8.0) < 1e-5
    assert diversity(torch.stack([torch.ones(64), 3 * torch.ones(64)]), torch.tensor([1, 1])) == 0.0   # clamped, as the images are scored

def test_bad_inputs(digits):
    X, _, _ = digits
    with pytest.raises(ValueError, match="lam must be >= 0"): with_artifact_reward(aesthetic_reward, aesthetic_reward, -0.1)
    with pytest.raises(ValueError, match="one class only"): train_artifact_model(X[:20], torch.zeros(20))
    with pytest.raises(ValueError, match="is_artifact must hold only 0"): train_artifact_model(X[:2], torch.tensor([0.0, 2.0]))
    with pytest.raises(ValueError, match="images must be"): aesthetic_reward(torch.zeros(2, 8, 8))
    with pytest.raises(ValueError, match="images must be"): salt_pepper(torch.zeros(2, 63))
    with pytest.raises(ValueError, match="clean must be"): pairwise_accuracy(aesthetic_reward, torch.zeros(2, 32), torch.zeros(2, 64), torch.zeros(2))
    with pytest.raises(ValueError, match="must pair up"): pairwise_accuracy(aesthetic_reward, torch.zeros(2, 64), torch.zeros(3, 64), torch.zeros(2))
    with pytest.raises(ValueError, match="kinds must name"): inject_artifacts(X[:2], kinds=["jpeg"])
    with pytest.raises(ValueError, match="real must be"): PCARealism(torch.zeros(10, 8, 8))
    with pytest.raises(ValueError, match="at least two"): diversity(torch.zeros(2, 64), torch.tensor([0, 1]))

def test_kit_arms_and_eval():
    kit = hacking_kit(0, clf_steps=100, art_steps=100)
    x, lab = kit["X"][:8], kit["y"][:8]
    both = arm_reward("ensemble + 1 r_art", kit)(x, lab)
    parts = aesthetic_reward(x) + kit["registry"]["consistency"](x, lab) + kit["r_art"](x)
    assert torch.allclose(both, parts, atol=1e-6)
    assert torch.allclose(arm_reward(({"aesthetic": 1.0}, 0.5), kit)(x, lab), aesthetic_reward(x) + 0.5 * kit["r_art"](x), atol=1e-6)
    with pytest.raises(ValueError, match="unknown arm"): arm_reward("hps", kit)
    ev = hacking_eval(kit, n_per_class=3)(pretrained_flow(steps=30))
    assert set(ev) == {"aesthetic", "consistency", "r_art", "nn_dist", "p_real", "diversity"} and all(v == v for v in ev.values())
    assert set(ARMS) >= {"aesthetic", "consistency", "ensemble", "aesthetic + 0.5 r_art", "ensemble + 1 r_art"}

def test_gradient_ablation_copy_vs_chain():
    "Chapter 32's true-gradient ablation: same samples, equal directions at the last step, unit rms there; both methods train."
    import copy
    from rlref.flow.rl import gradient_rollout, FlowRLConfig, train_flow_rl
    from rlref.flow.rewards import ink_reward
    model = pretrained_flow(steps=30)
    rc = gradient_rollout(model, torch.arange(6), ink_reward, "copy", n_steps=5, generator=torch.Generator().manual_seed(0))
    rh = gradient_rollout(model, torch.arange(6), ink_reward, "chain", n_steps=5, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(rc["images"], rh["images"]) and torch.allclose(rc["g"][:, -1], rh["g"][:, -1], atol=1e-6)
    assert torch.allclose(rc["g"].pow(2).mean(2), torch.ones(6, 5), atol=1e-4)          # copied: the same unit-rms vector at every step
    assert not torch.allclose(rh["g"][:, 0], rc["g"][:, 0], atol=1e-3)                   # the chain changes the early steps
    with pytest.raises(ValueError, match="mode must be"): gradient_rollout(model, torch.arange(2), ink_reward, "reinforce")
    for method in ("copy_grad", "chain_grad"):
        m = copy.deepcopy(model)
        h = train_flow_rl(m, ink_reward, FlowRLConfig(method=method, epochs=2, images_per_epoch=8, n_steps=5, eval_every=1))
        assert len(h) == 3 and h[-1]["images"] == 16
        assert any((p - q).abs().sum() > 0 for p, q in zip(m.parameters(), model.parameters()))
    with pytest.raises(ValueError, match="unknown method"): train_flow_rl(copy.deepcopy(model), ink_reward, FlowRLConfig(method="draft"))
