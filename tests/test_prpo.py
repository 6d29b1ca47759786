"""Chapter 18 (PRPO on tables): serialisation on literal rows, bad tables and settings refused with one message, the two-level
advantage on literal rewards, equal rollout budgets across arms, and one RL step that moves the weights."""
import numpy as np
import pytest, torch
from rlref.advantages import group_advantages
from rlref.methods.prpo import (check_table, load_table, split_table, k_shot_rows, quantile_edges, bin_table, make_table_tokenizer,
                                class_token_ids, serialize_row, encode_rows, random_orders, prpo_advantages, PRPOConfig, ARMS,
                                make_table_policy, rl_step)

def test_serialisation_moves_name_with_value():
    tok = make_table_tokenizer()
    assert serialize_row(np.array([3, 0, 7]), [2, 0, 1]) == "f2 b7 f0 b3 f1 b0 =>"
    ids = encode_rows(tok, np.array([[3, 0, 7]]), np.array([[1, 2, 0]]))
    assert tok.convert_ids_to_tokens(ids[0]) == ["<bos>", "f1", "b0", "f2", "b7", "f0", "b3", "=>"]
    with pytest.raises(ValueError, match="permutation"): serialize_row(np.array([1, 2]), [1, 1])
    with pytest.raises(ValueError, match="9 classes"): class_token_ids(tok, 9)
    with pytest.raises(ValueError, match="33 columns"): encode_rows(tok, np.zeros((1, 33), int), np.arange(33)[None])

def test_binning_uses_training_quantiles():
    X = np.arange(1.0, 11.0)[:, None]
    e = quantile_edges(X, n_bins=5)
    np.testing.assert_allclose(e[0], [2.8, 4.6, 6.4, 8.2])
    assert bin_table(X, e)[:, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]

def test_bad_tables():
    X, y, names = load_table("iris")
    bad = X[:5].copy(); bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="missing values"): check_table(bad, y[:5], names)
    const = X[:5].copy(); const[:, 2] = 1.0
    with pytest.raises(ValueError, match="constant column"): check_table(const, y[:5], names)
    with pytest.raises(ValueError, match="unknown dataset"): load_table("adult")
    tr, te = split_table(y, 0)
    assert len(tr) == 105 and np.bincount(y[te]).tolist() == [15, 15, 15]
    assert np.bincount(y[tr][k_shot_rows(y[tr], 8, 0)]).tolist() == [8, 8, 8]

def test_prpo_advantage_literal():
    r = torch.tensor([1.0, 1.0, 0.0, 1.0])
    a = prpo_advantages(r, 2, 2, lam=1.0)
    torch.testing.assert_close(a, group_advantages(r, 2) + group_advantages(r, 4))
    assert a[0] > 0 and a[1] > 0                       # a tied permutation still gets the pooled signal
    r2 = torch.tensor([1.0, 1, 1, 1, 0, 0, 0, 0])
    torch.testing.assert_close(prpo_advantages(r2, 2, 4), group_advantages(r2, 8))   # intra is zero when each order ties
    for M, N in ((0, 4), (2, 0), (1, 1)):
        with pytest.raises(ValueError): prpo_advantages(torch.ones(4), M, N)

def test_equal_budgets_and_bad_config():
    assert {a: np.prod(PRPOConfig(arm=a).layout) for a in ARMS} == {a: 16 for a in ARMS}
    for kw in (dict(arm="x"), dict(arm="prpo", M=3), dict(arm="prpo", M=0), dict(arm="fixed", rollouts=1), dict(steps=0)):
        with pytest.raises(ValueError): PRPOConfig(**kw)
    o = random_orders(24, 4, torch.Generator().manual_seed(1))
    assert len({tuple(r) for r in o}) == 24

def test_rl_step_moves_weights():
    torch.manual_seed(0)
    tok = make_table_tokenizer()
    X, y, _ = load_table("iris")
    B = bin_table(X, quantile_edges(X))
    rows = np.concatenate([np.arange(10), np.arange(50, 60), np.arange(100, 110)])
    for arm in ARMS:
        pol = make_table_policy(tok, seed=0)
        before = [p.detach().clone() for p in pol.parameters()]
        m = rl_step(pol, torch.optim.AdamW(pol.parameters(), lr=1e-3, weight_decay=0.0), tok, B[rows], y[rows], PRPOConfig(arm=arm, rows_per_step=30), torch.Generator().manual_seed(0))
        assert 0 <= m["zero_signal"] <= m["zero_intra"] <= 1
        assert any((p - q).abs().max() > 0 for p, q in zip(pol.parameters(), before)), arm

def test_sweep_records_what_the_chapter_reads(tmp_path):
    "The sweep script, run as the reader runs it (a process; tests never import experiment scripts), logs what the chapter reads."
    import json, subprocess, sys
    from pathlib import Path
    root, log = Path(__file__).resolve().parents[1], tmp_path / "log.jsonl"
    subprocess.run([sys.executable, str(root / "experiments" / "18_tabular_prpo" / "sweep.py"), "--datasets", "iris", "--ks", "4",
                    "--seeds", "0", "--arms", "sklearn", "sft", "fixed", "prpo", "--steps", "2", "--sft-steps", "2", "--log", str(log)],
                   check=True, cwd=root, capture_output=True, timeout=600)
    recs = [json.loads(l) for l in log.read_text().splitlines()]
    assert [r["arm"] for r in recs] == ["sklearn", "sft", "fixed", "prpo"]
    assert {"logreg_full", "hgb_full", "logreg_k", "hgb_k"} <= set(recs[0])
    for r in recs[1:]: assert {"acc_random", "acc_fixed", "consistency"} <= set(r) and r["n_test"] == 45
    assert len(recs[-1]["zero_signal"]) == 2 and len(recs[-1]["zero_intra"]) == 2