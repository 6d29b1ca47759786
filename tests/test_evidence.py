"""rlref.evidence (nbs/07c_evidence.ipynb): run summaries, seed-paired comparisons checked against the textbook paired-t
formula, the verdict rules on literal runs (holds / fails / not settled / too few seeds / inside noise / check kind /
baseline_metric and baseline_value / direction "less"), the verdict table's shape and log rows -> run records."""
import math
import numpy as np
import pytest
from scipy import stats
from rlref.evidence import (run_score, run_auc, paired_comparison, noise_floor, hierarchical_bootstrap, hits_array,
                            Prediction, verdict, verdict_table, runs_from_log)


def test_run_score_and_auc():
    assert run_score([0.1, 0.2, 0.3, 0.7]) == pytest.approx(0.4)
    assert run_score([0.1, 0.2], last_k=5) == pytest.approx(0.15)             # k clipped to the length
    assert run_score([[0, 0.1], [10, 0.5]], last_k=1) == pytest.approx(0.5)    # (step, value) pairs
    with pytest.raises(ValueError): run_score([])
    with pytest.raises(ValueError): run_score([0.1], last_k=0)
    assert run_auc([0, 100], [0.2, 0.4]) == pytest.approx(0.3)
    assert run_auc([0, 10, 30], [0.0, 1.0, 1.0]) == pytest.approx((0.5 * 10 + 1.0 * 20) / 30)
    assert run_auc([5], [0.7]) == 0.7
    with pytest.raises(ValueError): run_auc([0, 0], [0.1, 0.2])
    with pytest.raises(ValueError): run_auc([0, 1, 2], [0.1, 0.2])


def test_paired_comparison_by_hand():
    t = {0: 0.74, 1: 0.70, 2: 0.66, 3: 0.81, 4: 0.69, 7: 0.5}
    c = {0: 0.70, 1: 0.64, 2: 0.64, 3: 0.76, 4: 0.70, 8: 0.9}
    r = paired_comparison(t, c, n_boot=2000)
    d = [0.04, 0.06, 0.02, 0.05, -0.01]
    m = sum(d) / 5
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / 4)
    half = 2.7764451051977987 * sd / math.sqrt(5)                            # t_{4, 0.975}, from a table
    assert r.seeds == [0, 1, 2, 3, 4] and r.n == 5
    assert r.diffs == pytest.approx(d) and r.mean == pytest.approx(m) and r.sd == pytest.approx(sd)
    assert r.t_ci == pytest.approx((m - half, m + half))
    assert r.t_p == pytest.approx(2 * stats.t.sf(m / (sd / math.sqrt(5)), 4))
    assert r.t_p == pytest.approx(stats.ttest_rel([t[s] for s in range(5)], [c[s] for s in range(5)]).pvalue)
    assert (r.n_pos, r.n_neg) == (4, 1)
    assert min(d) <= r.boot_ci[0] < r.boot_ci[1] <= max(d)
    assert set(r.as_dict()) >= {"seeds", "diffs", "n", "mean", "sd", "t_ci", "t_p", "boot_ci", "n_pos", "n_neg"}
    r90 = paired_comparison(t, c, n_boot=0, level=0.9)
    assert r90.t_ci[1] - r90.t_ci[0] < r.t_ci[1] - r.t_ci[0] and all(math.isnan(x) for x in r90.boot_ci)


def test_paired_comparison_edges():
    ties = paired_comparison({0: 0.5, 1: 0.6, 2: 0.7}, {0: 0.5, 1: 0.5, 2: 0.7}, n_boot=100)
    assert (ties.n_pos, ties.n_neg) == (1, 0)                                  # ties count in neither
    same = paired_comparison({0: 0.6, 1: 0.7}, {0: 0.5, 1: 0.6}, n_boot=0)    # every difference 0.1: no spread
    assert same.sd == 0 and same.t_ci == pytest.approx((0.1, 0.1)) and same.t_p == 0.0
    one = paired_comparison({0: 0.6}, {0: 0.5}, n_boot=0)
    assert one.n == 1 and math.isnan(one.t_ci[0]) and math.isnan(one.sd)
    with pytest.raises(ValueError, match="no seed"): paired_comparison({0: 1.0}, {1: 1.0})
    a = paired_comparison({0: 0.3, 1: 0.5, 2: 0.2}, {0: 0.1, 1: 0.1, 2: 0.3}, seed=3)
    assert a == paired_comparison({0: 0.3, 1: 0.5, 2: 0.2}, {0: 0.1, 1: 0.1, 2: 0.3}, seed=3)   # seeded bootstrap


def test_noise_floor_and_hierarchical_bootstrap():
    assert noise_floor({0: 0.8, 1: 0.7, 5: 0.1}, {0: 0.75, 1: 0.8}) == pytest.approx(0.075)
    with pytest.raises(ValueError): noise_floor({0: 1.0}, {1: 1.0})
    assert list(hits_array("0110")) == [0, 1, 1, 0] and hits_array("01").dtype == float
    rng = np.random.default_rng(1)
    a = {s: (rng.random(300) < p).astype(int) for s, p in enumerate([0.8, 0.75, 0.85])}
    b = {s: (rng.random(300) < 0.5).astype(int) for s in range(3)}
    lo, hi = hierarchical_bootstrap(a, b, n_boot=500)
    assert 0.15 < lo < hi < 0.45
    z = hierarchical_bootstrap(a, a, n_boot=200)
    assert z == (0.0, 0.0)                                                     # an arm against itself: no difference
    with pytest.raises(ValueError, match="equal lengths"): hierarchical_bootstrap({0: [1, 0]}, {0: [1, 0, 1]})


def _runs():
    arms = dict(grpo=[0.70, 0.64, 0.64, 0.76, 0.70], fast=[0.74, 0.70, 0.66, 0.81, 0.75],
                slow=[0.60, 0.55, 0.57, 0.66, 0.62], mixed=[0.74, 0.60, 0.70, 0.73, 0.72], two=[0.9, 0.9])
    return [dict(arm=a, seed=s, acc=v, start=0.5) for a, vals in arms.items() for s, v in enumerate(vals)]


@pytest.mark.parametrize("kw, status, reason", [
    (dict(treatment="fast", control="grpo"), "holds", "above"),
    (dict(treatment="slow", control="grpo"), "fails", "at or below"),
    (dict(treatment="mixed", control="grpo"), "not settled", "spans"),
    (dict(treatment="two", control="grpo"), "not settled", "2 paired seeds, fewer than the 3"),
    (dict(treatment="fast", control="grpo", min_seeds=6), "not settled", "fewer than the 6"),
    (dict(treatment="fast", control="grpo", noise=0.06), "not settled", "inside noise"),
    (dict(treatment="fast", control="grpo", noise=0.03), "holds", "above"),
    (dict(treatment="slow", control="grpo", direction="less"), "holds", "above"),
    (dict(treatment="fast", control="grpo", direction="less"), "fails", "at or below"),
    (dict(treatment="fast", control="grpo", refute_at=0.05), "not settled", "spans +0.05"),
    (dict(treatment="grpo", baseline_metric="start", refute_at=0.10), "holds", "above +0.1"),
    (dict(treatment="grpo", baseline_metric="start", refute_at=0.30), "fails", "at or below"),
    (dict(treatment="slow", baseline_value=0.25), "holds", "above"),
    (dict(treatment="slow", baseline_value=0.25, kind="check"), "check passes", "above"),
    (dict(treatment="slow", baseline_value=0.9, kind="check"), "check fails", "at or below"),
    (dict(treatment="mixed", control="grpo", kind="check"), "check fails", "spans"),
    (dict(treatment="two", control="grpo", kind="check"), "not settled", "fewer than the 3"),
    (dict(treatment="nobody", control="grpo"), "not settled", "no paired seed"),
])
def test_verdict_rules(kw, status, reason):
    v = verdict(Prediction("P", "a claim", "acc", **kw), _runs(), n_boot=200)
    assert v.status == status and reason in v.reason, (v.status, v.reason)
    assert (v.comparison is None) == (kw["treatment"] == "nobody")


def test_verdict_numbers_and_sign():
    runs = _runs()
    up = verdict(Prediction("P", "c", "acc", "slow", control="grpo"), runs, n_boot=0).comparison
    down = verdict(Prediction("P", "c", "acc", "slow", control="grpo", direction="less"), runs, n_boot=0).comparison
    assert down.mean == pytest.approx(-up.mean) and down.t_ci == pytest.approx((-up.t_ci[1], -up.t_ci[0]))
    assert (up.n_pos, up.n_neg) == (0, 5) and (down.n_pos, down.n_neg) == (5, 0)
    base = verdict(Prediction("P", "c", "acc", "grpo", baseline_metric="start"), runs, n_boot=0).comparison
    assert base.diffs == pytest.approx([0.20, 0.14, 0.14, 0.26, 0.20])
    val = verdict(Prediction("P", "c", "acc", "grpo", baseline_value=0.6), runs, n_boot=0).comparison
    assert val.diffs == pytest.approx([0.10, 0.04, 0.04, 0.16, 0.10])
    with pytest.raises(ValueError, match="two runs"): verdict(Prediction("P", "c", "acc", "grpo", baseline_value=0.5), runs + runs[:1])


def test_prediction_validation():
    with pytest.raises(ValueError, match="exactly one"): Prediction("P", "c", "m", "a")
    with pytest.raises(ValueError, match="exactly one"): Prediction("P", "c", "m", "a", control="b", baseline_value=0.2)
    with pytest.raises(ValueError, match="direction"): Prediction("P", "c", "m", "a", control="b", direction="more")
    with pytest.raises(ValueError, match="kind"): Prediction("P", "c", "m", "a", control="b", kind="guess")
    p = Prediction("P", "c", "m", "a", control="b")
    assert (p.direction, p.refute_at, p.noise, p.kind, p.min_seeds) == ("greater", 0.0, None, "prediction", 3)


def test_verdict_table_shape():
    preds = [Prediction("A", "fast above grpo", "acc", "fast", control="grpo"),
             Prediction("B", "slow below grpo", "acc", "slow", control="grpo", direction="less"),
             Prediction("C", "gain", "acc", "grpo", baseline_metric="start"),
             Prediction("D", "nobody", "acc", "nobody", control="grpo")]
    t = verdict_table(preds, _runs(), n_boot=200)
    assert list(t.index) == ["A", "B", "C", "D"] and t.index.name == "name"
    assert list(t.columns) == ["claim", "kind", "metric", "arms", "n seeds", "mean diff", "95% CI (t)", "bootstrap CI",
                               "sign count (+/−)", "status", "reason"]
    assert list(t["status"]) == ["holds", "holds", "holds", "not settled"]
    assert list(t["arms"]) == ["fast − grpo", "grpo − slow", "grpo − start", "nobody − grpo"]
    assert t.loc["A", "sign count (+/−)"] == "5/0" and t.loc["A", "n seeds"] == 5 and t.loc["D", "n seeds"] == 0
    assert t.loc["A", "95% CI (t)"].startswith("[+0.0") and math.isnan(t.loc["D", "mean diff"])
    assert "<table" in t._repr_html_()                                       # shows as a table in a notebook


def test_runs_from_log():
    rows = [dict(arm="a", seed=0, final=0.5, curve=[[0, 0.4], [10, 0.5]], flag=True, name="x"),
            dict(arm="b", seed=0, final=0.6, curve=[[0, 0.4], [10, 0.6]], flag=False, name="y")]
    assert runs_from_log(rows) == [dict(arm="a", seed=0, final=0.5), dict(arm="b", seed=0, final=0.6)]
    assert runs_from_log(rows, metrics=["final"]) == [dict(arm="a", seed=0, final=0.5), dict(arm="b", seed=0, final=0.6)]
    recs = runs_from_log(rows, metrics=dict(score=lambda r: run_score(r["curve"], last_k=1), f="final"))
    assert recs == [dict(arm="a", seed=0, score=0.5, f=0.5), dict(arm="b", seed=0, score=0.6, f=0.6)]
    by_name = runs_from_log(rows, arm_key=lambda r: r["name"], metrics=["final"])
    assert [r["arm"] for r in by_name] == ["x", "y"]
    with pytest.raises(ValueError, match="two rows"): runs_from_log(rows + rows[:1])
    with pytest.raises(ValueError, match="no arm"): runs_from_log([dict(seed=0)])
    v = verdict(Prediction("P", "c", "final", "b", control="a", min_seeds=2), runs_from_log(rows), n_boot=0)
    assert v.status == "not settled" and v.comparison.diffs == pytest.approx([0.1])

def test_per_seed_table_shows_the_signed_differences_behind_each_verdict():
    from rlref.evidence import per_seed_table
    runs = [dict(arm=a, seed=s, m=v) for a, vals in (("t", [0.5, 0.52, 0.54]), ("c", [0.4, 0.4, 0.4])) for s, v in enumerate(vals)]
    preds = [Prediction("up", "t above c", "m", "t", "c"), Prediction("down", "t below c", "m", "t", "c", direction="less"),
             Prediction("none", "no pair", "m", "t", "missing")]
    tab = per_seed_table(preds, runs)
    assert list(tab.index) == ["up", "down"]                                  # a prediction with no paired seed has no row
    assert tab.loc["up", "diffs"] == "+0.100 +0.120 +0.140" and tab.loc["down", "diffs"] == "-0.100 -0.120 -0.140"
    assert tab.loc["up", "signs"] == "3+ 0-" and tab.loc["up", "status"] == verdict(preds[0], runs).status == "holds"
    assert tab.loc["down", "status"] == "fails"

def test_premise_not_met_is_never_decided():
    runs = [dict(arm=a, seed=s, m=v) for a, vals in (("t", [0.5, 0.52, 0.54]), ("c", [0.4, 0.4, 0.4])) for s, v in enumerate(vals)]
    p = Prediction("up", "t above c", "m", "t", "c", premise_fails="the baseline does not move")
    v = verdict(p, runs)
    assert v.status == "premise not met" and "the baseline does not move" in v.reason and "holds" in v.reason
    assert v.comparison is not None and v.comparison.n == 3                  # the numbers stay for the reader
    assert verdict_table([p], runs).loc["up", "status"] == "premise not met"
