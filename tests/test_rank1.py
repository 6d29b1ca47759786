"Chapter 12's operators and statistics on planted inputs, and the integrity of its committed reader-size log."
import json
from pathlib import Path
import numpy as np
import pytest
import torch
import torch.nn as nn
from rlref.methods.rank1 import (rank1_update, rank_k_update, residual_update, sigma2_update, random_rank1_like, apply_update,
                                 weight_deltas, recovery_ratio, recovery_ratio_ci, UPDATE_OPS)

LOG = Path(__file__).parents[1] / "experiments" / "12_rank1" / "sweep.jsonl"

def planted(m=40, n=24, seed=0, ranks=(5.0, 2.0, 1.0)):
    "A matrix with known singular values `ranks` and orthonormal singular vectors (plus nothing else)."
    g = torch.Generator().manual_seed(seed)
    U, _ = torch.linalg.qr(torch.randn(m, len(ranks), generator=g)); V, _ = torch.linalg.qr(torch.randn(n, len(ranks), generator=g))
    return U @ torch.diag(torch.tensor(ranks)) @ V.T, U, V

def test_rank_k_operators_on_a_planted_spectrum():
    d, U, V = planted()
    norm = d.norm()
    torch.testing.assert_close(rank_k_update(d, 1), rank1_update(d), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rank_k_update(d, 3), d, atol=1e-5, rtol=1e-5)            # all directions: ΔW itself
    torch.testing.assert_close(rank_k_update(d, 2, rescale=False), 5 * torch.outer(U[:, 0], V[:, 0]) + 2 * torch.outer(U[:, 1], V[:, 1]), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(residual_update(d, rescale=False), 2 * torch.outer(U[:, 1], V[:, 1]) + torch.outer(U[:, 2], V[:, 2]), atol=1e-5, rtol=1e-5)
    for op in (rank1_update, residual_update, sigma2_update, random_rank1_like):
        assert abs(op(d, generator=torch.Generator().manual_seed(0)).norm() - norm) < 1e-4      # every control is norm-matched
    s2 = sigma2_update(d)
    assert abs(abs(U[:, 1] @ s2 @ V[:, 1]) - norm) < 1e-4                                 # along the second direction only
    assert (rank1_update(d) * residual_update(d)).sum().abs() < 1e-4                      # the residual is orthogonal to rank-1
    with pytest.raises(ValueError, match="k >= 1"): rank_k_update(d, 0)

def test_apply_update_knows_the_new_operators():
    lin = nn.Sequential(); lin.add_module("q_proj", nn.Linear(24, 40, bias=False))
    moved = nn.Sequential(); moved.add_module("q_proj", nn.Linear(24, 40, bias=False))
    d, _, _ = planted()
    with torch.no_grad(): moved.q_proj.weight.copy_(lin.q_proj.weight + d)
    deltas = weight_deltas(lin, moved)
    for op in ("residual", "sigma2", "rank2", "rank4", "rank8", "rank16"): assert op in UPDATE_OPS
    torch.testing.assert_close(apply_update(lin, deltas, "rank4").q_proj.weight, moved.q_proj.weight, atol=1e-5, rtol=1e-5)   # 3 < 4 directions
    with pytest.raises(ValueError, match="unknown update operator"): apply_update(lin, deltas, "rank3")

def test_recovery_ratio_ci_pools_seeds_and_is_paired():
    rng = np.random.default_rng(1)
    b = rng.random((4, 500)) < 0.5; f = b | (rng.random((4, 500)) < 0.3)
    assert recovery_ratio_ci(b, f, f) == (1.0, 1.0, 1.0)                               # paired: identical hits give no spread
    v = b | (f & (rng.random((4, 500)) < 0.8))
    r, lo, hi = recovery_ratio_ci(b, f, v)
    assert abs(r - 0.8) < 0.1 and lo <= r <= hi and hi - lo < 0.12
    r0 = recovery_ratio(b.mean(), f.mean(), v.mean())
    assert abs(r - r0) < 1e-12                                                         # equal N per seed: pooled = ratio of means
    with pytest.raises(ValueError, match="same shape"): recovery_ratio_ci(b, f, v[:, :10])

@pytest.mark.skipif(not LOG.is_file(), reason="the reader-size log is not committed yet")
def test_committed_reader_size_log_is_complete():
    rows = [json.loads(l) for l in LOG.read_text().splitlines() if l.strip()]
    keys = {tuple(r["key"]) for r in rows}
    assert {("main", s) for s in range(5)} <= keys
    assert {("overfit", s, a) for s in range(5) for a in ("plain", "sub")} <= keys and {("sft", s) for s in range(5)} <= keys
    for r in rows:
        if r["key"][0] == "main":
            assert len(r["base"]) == len(r["rl"]) == 500 and set(r["ops"]) >= {"rank1", "residual", "sigma2", "random", "rank8"}
            assert all(len(h) == 500 for h in r["ops"].values())
