"""PIPO on a real trainer: literal xi, attribution and coefficients; the verification update moves the cached batch's log-probs the
way sign(xi) says; a run interrupted and resumed from its checkpoint equals the uninterrupted one (window, cached batch, reward
flips and weights included); bad settings are refused with a message naming the field."""
import copy
from pathlib import Path
import pytest, torch
from rlref.core import read_jsonl
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import RunInterrupted
from rlref.advantages import group_advantages
from rlref.methods.replay import collate_rows
from rlref.methods.pipo import (PIPO, PIPOConfig, FlipRewards, anchor_window, progress_anchor, normalised_progress, progress_attribution,
                                pipo_coefficient, verification_loss, ppo_gate)

TINY = dict(steps=5, prompts_per_step=4, samples_per_prompt=4, eval_every=0, kl_every=0, checkpoint_every=2, progress=False)
PCFG = dict(K=2, min_steps=2, loss_scale_neg=0.1)

def make(out=None, resume=False, flip=0.2, **over):
    tr = Trainer.setup(recipe_config("testbed", out=None if out is None else str(out), **TINY | ({} if out else dict(checkpoint_every=0)) | over), resume=resume)
    fl = FlipRewards(flip, seed=3); tr.add_hook("after_rewards", fl)
    return tr, fl, PIPO(tr, PIPOConfig(**PCFG))

def test_literal_xi_attribution_and_coefficient():
    means, mu = [0.40, 0.42, 0.44, 0.46], 0.50
    assert normalised_progress(mu, anchor_window(means, mu, 4)) == pytest.approx(0.07 / 0.0005 ** 0.5)
    assert anchor_window(means, mu, 4, "released") == [0.44, 0.46, 0.46, 0.50]            # mu_t inside, each mean twice
    assert progress_anchor([0.3, 0.3]) == (0.3, 1.0)
    assert normalised_progress(-7.0, [0.0, 0.0]) == -5.0
    a = progress_attribution(group_advantages(torch.tensor([1., 0, 0, 0, 1, 1, 0, 0]), 4), 4)
    torch.testing.assert_close(a, torch.tensor([2.0, -2 / 3, -2 / 3, -2 / 3, 1.0, 1.0, -1.0, -1.0]), atol=1e-4, rtol=0)
    torch.testing.assert_close(pipo_coefficient(a, -6.0), torch.tensor([-10.0, 4.0, 4.0, 4.0, -6.0, -6.0, 6.0, 6.0]), atol=1e-3, rtol=0)
    assert ppo_gate(-3.0) == -2.0 and ppo_gate(0.7) == 0.7

def test_verification_loss_caps_the_ratio_above_only():
    lp = torch.log(torch.tensor([[0.5, 1.5]])).requires_grad_()
    loss, info = verification_loss(lp, torch.zeros(1, 2), torch.tensor([-1.0]), torch.ones(1, 2), eps=0.2)
    loss.backward()
    torch.testing.assert_close(lp.grad, torch.tensor([[0.25, 0.0]]))     # C < 0: rho = 0.5 still pushed down, rho = 1.5 capped
    assert info["clip_frac"] == 0.5

def test_ppo_clip_control_bounds_both_sides():
    "clip='ppo' is PPO's pessimistic clip: for C < 0 the push stops below 1 - eps and pulls back above 1 + eps; for C > 0 it equals the released loss."
    lp = torch.log(torch.tensor([[0.5, 1.0, 1.5]])).requires_grad_()
    loss, _ = verification_loss(lp, torch.zeros(1, 3), torch.tensor([-1.0]), torch.ones(1, 3), eps=0.2, clip="ppo")
    loss.backward()
    torch.testing.assert_close(lp.grad, torch.tensor([[0.0, 1.0, 1.5]]) / 3)
    for c in (0.7, 2.0):
        a = verification_loss(lp.detach(), torch.zeros(1, 3), torch.tensor([c]), torch.ones(1, 3), clip="ppo")[0]
        b = verification_loss(lp.detach(), torch.zeros(1, 3), torch.tensor([c]), torch.ones(1, 3))[0]
        torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="unknown clip"): verification_loss(lp, torch.zeros(1, 3), torch.ones(1), torch.ones(1, 3), clip="dual")

def test_zero_coef_control_is_a_momentum_only_step():
    "With zero_coef the loss and every gradient are 0, yet the AdamW step still moves the weights (momentum of the base update)."
    tr = Trainer.setup(recipe_config("testbed", **TINY | dict(checkpoint_every=0)))
    pp = PIPO(tr, PIPOConfig(**PCFG, zero_coef=True))
    tr.train_step()
    before = copy.deepcopy(tr.policy.state_dict())
    out = pp.verification_update(tr, 3.0)
    assert out["pipo_loss"] == 0.0 and out["pipo_grad_norm"] == 0.0 and out["pipo_coef_abs"] == 0.0
    assert any(not torch.equal(before[k], v) for k, v in tr.policy.state_dict().items())

def cached_logp(tr, pp):
    "(sum of log-probs of the cached completions with A_prog > 0, with A_prog < 0, and the A_prog-weighted token mean the update ascends)."
    mb = collate_rows(pp.cache, tr.tok.pad_token_id, tr.device)
    a = progress_attribution(torch.tensor([x["advantage"] for x in pp.cache]), pp.G)
    with torch.no_grad(): s = (tr.logprobs(tr.policy, mb) * mb.completion_mask).sum(1)
    return s[a > 0].sum().item(), s[a < 0].sum().item(), (a * s).sum().item() / mb.completion_mask.sum().item()

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_verification_update_follows_sign_of_xi(seed):
    """xi = +1 vs xi = -1 from the same state (gradients +-g: the same Adam second moment, the momentum cancels in the difference): +1 ends with the
    higher A_prog-weighted log-prob of the cached batch (the objective the update ascends for xi > 0) and the A_prog < 0 completions less likely."""
    tr, _, pp = make(seed=seed, flip=0.0)
    with pytest.raises(ValueError, match="no cached batch"): pp.verification_update(tr, 1.0)
    tr.train_step()
    start = copy.deepcopy(tr.policy.state_dict()), copy.deepcopy(tr.opt.state_dict())
    after = {}
    for xi in (1.0, -1.0):
        tr.policy.load_state_dict(start[0]); tr.opt.load_state_dict(start[1])
        pp.verification_update(tr, xi); after[xi] = cached_logp(tr, pp)
    contrast = [a - b for a, b in zip(after[1.0], after[-1.0])]
    assert contrast[2] > 0 > contrast[1], (seed, contrast)

def rows(out): return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in read_jsonl(Path(out) / "metrics.jsonl")]

def test_resume_with_pipo_is_exact(tmp_path):
    ref, fref, pref = make(tmp_path / "ref"); ref.fit()
    cut, _, _ = make(tmp_path / "cut")
    def halt(t, m):
        if t.step == 3: raise KeyboardInterrupt
    cut.add_hook("after_step", halt)
    with pytest.raises(RunInterrupted): cut.fit()                   # checkpoint at step 2 (cached batch of step 2), interrupted in step 3
    res, fres, pres = make(tmp_path / "cut", resume=True)
    res.fit(resume=True)
    got, want = rows(tmp_path / "cut"), rows(tmp_path / "ref")
    assert got == want
    assert sum(r["pipo_updated"] for r in want) >= 2 and all("pipo_xi" in r for r in want[2:])   # verification ran after the resume
    assert all(torch.equal(a, b) for a, b in zip(ref.policy.state_dict().values(), res.policy.state_dict().values()))
    assert pref.means == pres.means and pref.seen == pres.seen == 5 and fref.flipped == fres.flipped
    assert all(torch.equal(a["completion_ids"], b["completion_ids"]) and torch.equal(a["behaviour_logprobs"], b["behaviour_logprobs"])
               for a, b in zip(pref.cache, pres.cache))

def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="K must be >= 2"): PIPOConfig(K=1)
    with pytest.raises(ValueError, match="min_steps must be >= K"): PIPOConfig(K=8, min_steps=7)
    with pytest.raises(ValueError, match="loss_scale_neg must be >= 0"): PIPOConfig(loss_scale_neg=-1)
    with pytest.raises(ValueError, match="flip probability p must be in"): FlipRewards(-0.1)
    tr = Trainer.setup(recipe_config("testbed", steps=1, prompts_per_step=2, samples_per_prompt=4, dynamic_sampling=True, eval_every=0, progress=False))
    with pytest.raises(ValueError, match="dynamic_sampling"): PIPO(tr, PIPOConfig())
    tr.cfg.dynamic_sampling = False
    with pytest.raises(ValueError, match="needs algorithm 'ppo'"): PIPO(tr, PIPOConfig(variant="ppo_gate"))

def test_ppo_gate_scales_advantages_not_returns():
    tr = Trainer.setup(recipe_config("testbed", algorithm="ppo", steps=3, prompts_per_step=2, samples_per_prompt=4, num_iterations=1,
                                     minibatch_size=None, eval_every=0, kl_every=0, checkpoint_every=0, progress=False))
    pp = PIPO(tr, PIPOConfig(K=2, min_steps=2, variant="ppo_gate"))
    seen = {}
    def grab(t, r): seen["adv"], seen["ret"] = r.advantages.clone(), r.extras["returns"].clone(); return None
    tr.hooks["after_advantages"].insert(0, grab)                       # before PIPO's hook: the ungated values
    for _ in range(2): tr.train_step()
    after = {}
    tr.add_hook("after_advantages", lambda t, r: after.update(adv=r.advantages.clone(), ret=r.extras["returns"].clone()))
    m = tr.train_step()
    torch.testing.assert_close(after["adv"], seen["adv"] * m["pipo_phi"])
    torch.testing.assert_close(after["ret"], seen["ret"])
    assert pp.cache is None and m["pipo_phi"] == max(-2.0, min(2.0, m["pipo_xi"]))
