"""Seed sweep for chapter 12's test-size checks that depend on training: how far each assertion is from failing, per seed.

`short` (the test-size run of "P2 at test size"): SHORT_STEPS GRPO steps of the testbed recipe from the shipped arith2 warm start
of the seed, then the held-out answer NLL (teacher-forced, 500 test sums) of the warm start, the RL model, and W_base + op(ΔW) for
rank1 / residual / sigma2 / random (base frame, and RL frame: `_rlframe`), and the mean σ₁ energy share of ΔW against Gaussian
matrices of the same shapes. The chapter asserts energy1 >= 5 * energy1_gauss (smallest ratio over seeds 0-4: 12.5, seed 3).
The line's margin_energy field is ratio - 3, a margin against a looser bound than the chapter's 5. The NLL fields are not a
check (20 steps raise the held-out NLL on every seed, by 0.004-0.13 nats), so margin_nll / margin_residual / margin_sigma2 are
recorded but not asserted.

`subst`: 4 GRPO steps with rank-1 substitution every 2 steps from the testbed warm start; checked: the second singular value of
every substituted update is <= 1e-3 of the first (margin: the largest sv1/sv0 seen, against 1e-3), and one plain step later
it is > 0.05 of the first (margin_between).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/12_rank1/seed_sweep.py --checks short subst --seeds 0 1 2 3 4
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import copy
import torch
from rlref.core import seed_everything
from rlref.models import encode_pairs, sft_loss
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.methods.rank1 import weight_deltas, apply_update, projection_frame, energy_share, recovery_ratio, Rank1Substitution, CheckpointRecorder

SHORT_STEPS = 20

def heldout_nll(model, tok, test) -> float:
    "Mean teacher-forced NLL (nats per answer token, <eos> included) of the held-out answers."
    with torch.no_grad(): return sft_loss(model.eval(), encode_pairs(tok, list(test["prompt"]), list(test["answer"]))).item()

def short(seed):
    tr = Trainer.setup(recipe_config("testbed", seed=seed, steps=SHORT_STEPS, eval_every=SHORT_STEPS, progress=False, checkpoint_every=0))
    base = copy.deepcopy(tr.policy).eval()
    test = tr.task.test.select(range(tr.cfg.eval_limit))
    seed_everything(seed); tr.fit()
    d = weight_deltas(base, tr.policy)
    nll = dict(base=heldout_nll(base, tr.tok, test), rl=heldout_nll(tr.policy, tr.tok, test))
    frame = projection_frame(base, tr.policy)
    nll |= {op: heldout_nll(apply_update(base, d, op, seed=seed), tr.tok, test) for op in ("full", "rank1", "sigma1", "rank8", "residual", "sigma2", "random")}
    nll |= {f"{op}_rlframe": heldout_nll(apply_update(frame, d, op, seed=seed), tr.tok, test) for op in ("rank1", "sigma1", "rank8", "residual", "sigma2", "random")}
    ratio = {op: recovery_ratio(nll["base"], nll["rl"], v) for op, v in nll.items() if op not in ("base", "rl")}
    g = torch.Generator().manual_seed(seed)
    e1 = sum(energy_share(v) for v in d.values()) / len(d)
    e1g = sum(energy_share(torch.randn(v.shape, generator=g)) for v in d.values()) / len(d)
    return dict(nll={k: round(v, 4) for k, v in nll.items()}, ratio={k: round(v, 3) for k, v in ratio.items()},
                energy1=round(e1, 4), energy1_gauss=round(e1g, 4), accuracy=round(tr.history[-1]["eval_accuracy"], 3),
                margin_nll=round(nll["base"] - nll["rl"] - 0.02, 4), margin_residual=round(ratio["rank1"] - ratio["residual"] - 0.2, 3),
                margin_sigma2=round(ratio["rank1"] - ratio["sigma2"] - 0.2, 3), margin_energy=round(e1 / e1g - 3, 2))

def subst(seed):
    STEPS, K = 4, 2
    tr = Trainer.setup(recipe_config("testbed", seed=seed, steps=STEPS, prompts_per_step=16, eval_every=K, eval_limit=50, progress=False, checkpoint_every=0))
    base = copy.deepcopy(tr.policy).eval()
    tr.add_hook("after_step", Rank1Substitution(base, K)); rec = CheckpointRecorder(tr.policy, 1); tr.add_hook("after_step", rec)
    seed_everything(seed); tr.fit()
    svs = [torch.linalg.svdvals(d) for d in weight_deltas(base, rec.states[STEPS]).values()]
    between = [torch.linalg.svdvals(d) for d in weight_deltas(base, rec.states[STEPS - 1]).values()]
    worst, low = max((sv[1] / sv[0]).item() for sv in svs), min((sv[1] / sv[0]).item() for sv in between)
    return dict(min_sv0=min(sv[0].item() for sv in svs), worst_sv1_over_sv0=worst, margin=1e-3 - worst,
                min_sv1_over_sv0_between=low, margin_between=low - 0.05)

CHECKS = dict(short=short, subst=subst)

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(CHECKS, "experiments/12_rank1/seed_sweep.jsonl", seeds=[0, 1, 2, 3, 4])
