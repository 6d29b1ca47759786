"Statistics a reader can trust (issue 15): Wilson intervals, McNemar's paired test, and the trainer's held-out evaluations with their intervals."
import json, math
from pathlib import Path
import numpy as np
import pytest
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
    big = mcnemar([True] * 51 + [False] * 35, [False] * 51 + [True] * 35)     # chapter 04's failing table from the issue
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
