"""Seed sweep for the seeded Monte-Carlo checks of chapters 05 (advantages) and 06 (losses) (EVIDENCE.md rule 7).

These checks train no network, but each asserts a statistical property on one seeded draw; here the chapter's seed (0, or the
seeds 0..7 of cell 67) is replaced by s (cell 67: seeds 8 s .. 8 s + 7). Margins, one JSON line per seed:

- 05 cell 41: |mean - expected| < 4 se for no-baseline, RLOO, Dr. GRPO (margin in units of se: 4 - |z|); RLOO std < 0.5 x no-baseline std
- 06 cell 28: k1 and k3 unbiased within 4 se; k3 std < k1 std, k3 >= 0, k1 < 0 somewhere
- 06 cell 34: the sampled k1 gradient is within 4 se of 0 on every coordinate; the reverse-KL gradient exceeds 10 se somewhere
- 06 cell 44: seq_mis masks more than token_mis; seq_is_geo has a larger ESS than seq_is
- 06 cell 67: after 10 batches P(good token) with eps_high 0.28 exceeds eps_high 0.2 by > 0.05 (mean over 8 seeds)

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/06_losses/seed_sweep_estimators.py --seeds 0 1 2 3 4 5 6 7
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, time
import torch
import torch.nn.functional as F
from rlref.core import seed_everything
from rlref.advantages import rloo_advantages, group_advantages
from rlref.losses import kl_estimate, KL_ESTIMATORS, importance_weights, grpo_loss

def c05(s):
    seed_everything(s); n_groups, G, p = 4000, 8, 0.5
    a = (torch.rand(n_groups * G) < p).float(); R = 1 + a; score = a - p
    adv = {"no baseline": R, "rloo": rloo_advantages(R, G), "dr_grpo": group_advantages(R, G, "none")}
    est = {k: (A * score).view(n_groups, G).mean(1) for k, A in adv.items()}
    target = {"no baseline": p * (1 - p), "rloo": p * (1 - p), "dr_grpo": (G - 1) / G * p * (1 - p)}
    z = {k: abs(est[k].mean().item() - target[k]) / (est[k].std().item() / n_groups ** .5) for k in est}
    return dict(margin_unbiased_se=min(4 - v for v in z.values()), margin_variance=0.5 * est["no baseline"].std().item() - est["rloo"].std().item())

def c06_kl(s):
    seed_everything(s); V = 6
    theta = torch.randn(V); ref = theta + 0.5 * torch.randn(V)
    logp, logq = theta.log_softmax(0), ref.log_softmax(0); kl_true = (logp.exp() * (logp - logq)).sum().item(); N = 20000
    x = torch.multinomial(logp.exp(), N, replacement=True)
    ks = {k: kl_estimate(logp[x][None], logq[x][None], k)[0] for k in KL_ESTIMATORS}
    unb = min(4 - abs(ks[k].mean().item() - kl_true) / (ks[k].std().item() / N ** .5) for k in ("k1", "k3"))
    th = theta.clone().requires_grad_(); kl_estimate(th.log_softmax(0)[x][None], logq[x][None], "k1").mean().backward()
    se = (F.one_hot(x, V).float() - logp.exp()).std(0) / N ** .5
    thr = theta.clone().requires_grad_(); lp = thr.log_softmax(0); (lp.exp() * (lp - logq)).sum().backward()
    return dict(margin_unbiased_se=unb, margin_k3_std=ks["k1"].std().item() - ks["k3"].std().item(), k3_min=ks["k3"].min().item(), k1_min=ks["k1"].min().item(),
                margin_k1_grad_se=(4 - (th.grad.abs() / se).max()).item(), margin_rev_grad_se=((thr.grad.abs() / se).max() - 10).item())

def c06_is(s):
    seed_everything(s); Bm, Tm = 64, 32
    learner = -torch.rand(Bm, Tm) * 3; sampler = learner + 0.05 * torch.randn(Bm, Tm)
    bad = torch.rand(Bm, Tm) < 0.01; sampler[bad] -= 2.0
    mk = (torch.arange(Tm)[None] < torch.randint(8, Tm + 1, (Bm, 1))).float()
    r = {m: importance_weights(learner, sampler, mk, m, clip_max=2.0, veto=1e-4) for m in ("token_mis", "seq_mis", "seq_is", "seq_is_geo")}
    return dict(margin_mis=r["seq_mis"].frac_masked - r["token_mis"].frac_masked, margin_geo_ess=r["seq_is_geo"].ess - r["seq_is"].ess)

def train_categorical(eps_high, n_batches, mu=4, G=16, lr=0.5, seed=0):
    seed_everything(seed)
    logits = torch.zeros(10); logits[0] = 3.0; logits.requires_grad_()
    opt, probs = torch.optim.SGD([logits], lr=lr), []
    for _ in range(n_batches):
        with torch.no_grad(): x = torch.multinomial(logits.softmax(0), G, replacement=True)
        adv = group_advantages((x == 9).float(), G) if (x == 9).any() else torch.zeros(G)
        old = logits.log_softmax(0)[x].detach()[:, None]
        for _ in range(mu):
            loss, _ = grpo_loss(logits.log_softmax(0)[x][:, None], old, adv, torch.ones(G, 1), "dapo", 0.2, eps_high)
            opt.zero_grad(); loss.backward(); opt.step()
        probs.append(logits.softmax(0)[9].item())
    return probs

def c06_clip(s):
    runs = {e: torch.tensor([train_categorical(e, 10, seed=8 * s + k) for k in range(8)]).mean(0) for e in (0.2, 0.28)}
    return dict(p028=runs[0.28][9].item(), p020=runs[0.2][9].item(), margin=(runs[0.28][9] - runs[0.2][9] - 0.05).item())

CHECKS = dict(c05_baselines=c05, c06_kl=c06_kl, c06_is=c06_is, c06_clip_higher=c06_clip)

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(CHECKS, "experiments/06_losses/seed_sweep_estimators.jsonl", seeds=[0, 1, 2, 3, 4, 5, 6, 7])
