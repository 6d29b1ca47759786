"Statistics a reader can trust: Wilson intervals, McNemar's paired test, and the trainer's held-out evaluations with their intervals."
import json, math
from pathlib import Path
import numpy as np
import pytest, torch
from rlref.core import wilson_interval, mcnemar

# ---------------------------------------------------------------- Wilson
def test_wilson_on_literal_values():
    "statsmodels' proportion_confint(k, n, method='wilson') numbers, and the formula by hand for 81/263 at 95% and 8/10 at 90%."
    assert wilson_interval(5, 10) == pytest.approx((0.2365931, 0.7634069), abs=1e-6)
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.2775328, abs=1e-6))
    assert wilson_interval(10, 10) == (pytest.approx(0.7224672, abs=1e-6), 1.0)
    z = 1.959963984540054; n, p = 263, 81 / 263
    c, h = (p + z * z / (2 * n)) / (1 + z * z / n), z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_interval(81, 263) == pytest.approx((c - h, c + h), abs=1e-12)
    assert wilson_interval(8, 10, confidence=0.9) == pytest.approx((0.5407928, 0.9314420), abs=1e-6)

@pytest.mark.parametrize("args, msg", [((0, 0), "needs n >= 1 trials"), ((3, -1), "needs n >= 1 trials"), ((11, 10), r"integer in \[0, n=10\]"),
                                       ((-1, 10), r"integer in \[0, n=10\]"), ((2.5, 10), r"integer in \[0, n=10\]"),
                                       ((5, 10, 1.0), r"confidence must be in \(0, 1\)")])
def test_wilson_refuses_bad_input(args, msg):
    with pytest.raises(ValueError, match=msg): wilson_interval(*args)

# exact coverage of these (from the binomial pmf): 0.9466, 0.9491, 0.9502, 0.9504, 0.9563; 2000 draws have a standard
# error of 0.005, so each check has >= 3 standard errors of margin. (Wilson's coverage oscillates with p and n: at
# p=0.1, n=100 it is 0.936, a point too close to 0.93 for a simulation check.)
@pytest.mark.parametrize("p_true, n", [(0.3, 200), (0.2, 300), (0.05, 400), (0.6, 500), (0.9, 500)])
def test_wilson_covers_the_true_rate_about_95_percent_of_the_time(p_true, n):
    rng = np.random.default_rng(0)
    draws = rng.binomial(n, p_true, size=2000)
    covered = np.mean([lo <= p_true <= hi for lo, hi in (wilson_interval(int(k), n) for k in draws)])
    assert 0.93 <= covered <= 0.97, covered

# ---------------------------------------------------------------- McNemar
def test_mcnemar_on_literal_tables():
    a = [1] * 10 + [0] * 2 + [1] * 30 + [0] * 8
    b = [0] * 10 + [1] * 2 + [1] * 30 + [0] * 8
    r = mcnemar(a, b)
    assert (r["n10"], r["n01"], r["method"]) == (10, 2, "exact")
    assert r["p"] == pytest.approx(158 / 4096) and r["z"] == pytest.approx(8 / math.sqrt(12))
    big = mcnemar([True] * 51 + [False] * 35, [False] * 51 + [True] * 35)     # chapter 09a's (then 04) failing table from the issue
    assert (big["n10"], big["n01"], big["method"]) == (51, 35, "normal-cc")
    assert big["z"] == pytest.approx(1.7253243712550146)
    assert big["p"] == pytest.approx(0.10584, abs=1e-4)      # chi2 = 15^2 / 86 = 2.616, 1 dof
    assert mcnemar(b, a)["z"] == -r["z"] and mcnemar(b, a)["p"] == r["p"]
    assert mcnemar([1, 1, 0], [1, 1, 0]) == dict(n10=0, n01=0, z=0.0, p=1.0, method="exact")
    with pytest.raises(ValueError, match="equally long, non-empty"): mcnemar([], [])
    with pytest.raises(ValueError, match="equally long, non-empty"): mcnemar([1, 0], [1])

def test_mcnemar_exact_p_is_a_valid_test():
    "Under the null (discordant prompts are fair coins) the exact p-value rejects at 5% at most 5% of the time."
    rng = np.random.default_rng(1)
    rejections = 0
    for _ in range(2000):
        both = rng.integers(0, 2, size=(40, 2))
        rejections += mcnemar(both[:, 0], both[:, 1])["p"] < 0.05
    assert rejections / 2000 <= 0.06

# ---------------------------------------------------------------- the trainer's held-out evaluations
from rlref.core import read_jsonl
from rlref.evaluation import exact_match, greedy_completions
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import RunInterrupted
from rlref.train.report import plot_report

TINY = json.loads((Path(__file__).resolve().parent / "tiny_configs.json").read_text())["test_stats"]  # the tiny config (shared with the seed sweep behind this file's margins)

def tiny(out, **kw): return recipe_config("arith-grpo", **(TINY | dict(out=None if out is None else str(out)) | kw))

def rows(out): return [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(Path(out) / "metrics.jsonl")]

def test_evaluate_per_prompt_is_the_vector_behind_the_accuracy():
    # 60 held-out sums: with 12 (the tiny recipe's eval_limit) seed 3's warm start got 11 of 12 first digits right, one short of a
    # vector with a single value; seed sweep (experiments/00b_core/seed_sweep_test_stats.py, seeds 0-7): 23 to 38 of 60 right, smallest margin 21 prompts
    N = 60
    tr = Trainer.setup(tiny(None, eval_limit=N, task_kwargs=dict(n_train=200, n_test=N)))
    em = lambda: exact_match(tr.policy, tr.tok, tr.task.test, tr.task.reward_fn, max_new_tokens=tr.max_new_tokens, limit=N)
    hits = tr.evaluate(per_prompt=True)
    assert hits.dtype == torch.bool and hits.shape == (N,)
    assert tr.evaluate() == int(hits.sum()) / N == em()
    # this tiny warm start solves few sums; a looser reward (the first digit is right) gives a vector with both values
    tr.task.reward_fn = lambda prompts, completions, answer, **kw: [float(c.strip()[:1] == a[:1]) for c, a in zip(completions, answer)]
    hits = tr.evaluate(per_prompt=True)
    assert 0 < int(hits.sum()) < N, hits
    assert tr.evaluate() == int(hits.sum()) / N == em()
    comps = greedy_completions(tr.policy, tr.tok, list(tr.task.test["prompt"][:N]), tr.max_new_tokens)
    assert hits.tolist() == [c.strip()[:1] == a[:1] for c, a in zip(comps, tr.task.test["answer"][:N])]   # prompt i's hit is at i
    assert mcnemar(hits, hits)["n10"] == 0 and mcnemar(hits, ~hits)["n10"] == int(hits.sum())

def test_every_eval_carries_its_wilson_interval_from_step_0_to_the_last_step(tmp_path):
    out = tmp_path / "run"
    s = Trainer.setup(tiny(out)).fit()
    evals = [r for r in rows(out) if "eval_accuracy" in r]
    assert [r["step"] for r in evals] == [2, 4]
    for r in evals:
        assert r["eval_n"] == 12 and r["eval_low"] <= r["eval_accuracy"] <= r["eval_high"]
        assert (r["eval_low"], r["eval_high"]) == wilson_interval(round(r["eval_accuracy"] * 12), 12)
    summary = json.loads((out / "summary.json").read_text())
    flat = lambda d: {k: v for k, v in d.items() if not isinstance(v, dict)}                # "memory" is a nested dict
    assert flat(summary) == pytest.approx(flat(s)) and summary["memory"] == s["memory"]
    assert summary["eval_n"] == 12                                                      # step 0: the warm start, with its interval
    assert summary["sft_low"] <= summary["sft_accuracy"] <= summary["sft_high"]
    assert (summary["sft_low"], summary["sft_high"]) == wilson_interval(round(summary["sft_accuracy"] * 12), 12)
    assert (summary["final_accuracy"], summary["final_low"], summary["final_high"]) == tuple(evals[-1][k] for k in ("eval_accuracy", "eval_low", "eval_high"))

def test_resume_is_still_exact_with_the_interval_columns(tmp_path):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    s_ref = Trainer.setup(tiny(ref)).fit()
    tr = Trainer.setup(tiny(cut))
    def stop(t, m):
        if m["step"] == 3: raise KeyboardInterrupt
    tr.add_hook("after_step", stop)
    with pytest.raises(RunInterrupted): tr.fit()
    s_cut = Trainer.setup(tiny(cut), resume=True).fit(resume=True)
    assert rows(cut) == rows(ref) and any("eval_low" in r for r in rows(ref))
    s_ref.pop("wall_seconds"); s_cut.pop("wall_seconds")
    assert s_cut == s_ref and s_cut["sft_low"] is not None

def test_plot_report_draws_the_heldout_curve_from_step_0_with_its_band():
    import matplotlib; matplotlib.use("Agg")
    hist = [dict(step=1, reward_mean=0.2), dict(step=2, reward_mean=0.3, eval_accuracy=0.6, eval_low=0.5, eval_high=0.7, eval_n=100)]
    fig = plot_report(hist, start=dict(sft_accuracy=0.4, sft_low=0.3, sft_high=0.5))
    ax = fig.axes[1]
    x, y = ax.lines[0].get_data()
    assert list(x) == [0, 2] and list(y) == [0.4, 0.6]
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(0.3) and band[:, 1].max() == pytest.approx(0.7) and band[:, 0].min() == 0
