"Held-out means held out: no test item's canonical form (commuted operands, reordered numbers, reordered bindings) occurs in train."
import random
import pytest
from rlref.tasks import make_task, make_arithmetic, make_countdown, make_recall, canonical_form, split_leaks, arith_canonical

def _old_arith_split(n_train=5000, n_test=500, seed=0):
    "The obvious split: distinct ordered pairs, the first n_test as test."
    rng, rows = random.Random(seed), {}
    while len(rows) < n_train + n_test:
        a, b, op = rng.randrange(100), rng.randrange(100), rng.choice("+")
        rows.setdefault(f"{a}{op}{b}=", None)
    rows = [dict(prompt=p) for p in rows]
    return rows[n_test:], rows[:n_test]

def test_the_old_split_leaks():   # the check below can fail: it does on the old split
    tr, te = _old_arith_split()
    assert len(split_leaks("arith", tr, te)) == 252

@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("n_digits,ops,n_train,n_test", [(2, "+", 5000, 500), (2, "*", 3000, 300), (2, "+-*", 4000, 400),
                                                         (1, "+-", 60, 40), (1, "*", 40, 20), (3, "+", 2000, 200)])
def test_arith_split_has_no_canonical_leak(seed, n_digits, ops, n_train, n_test):
    tr, te = make_arithmetic(n_digits, ops, n_train=n_train, n_test=n_test, seed=seed)
    assert (len(tr), len(te)) == (n_train, n_test)
    assert split_leaks("arith", tr, te) == []
    assert len(set(tr["prompt"])) == n_train                                      # train prompts distinct
    assert len({canonical_form("arith", r) for r in te}) == n_test                # test forms distinct
    assert all(eval(r["prompt"][:-1]) == int(r["answer"]) for r in list(tr) + list(te))

@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("kw", [dict(), dict(n_train=300, n_test=50, max_number=5, max_target=30), dict(n_numbers=4, n_train=1000, n_test=100)])
def test_countdown_split_has_no_canonical_leak(seed, kw):
    tr, te = make_countdown(seed=seed, **kw)
    assert split_leaks("countdown", tr, te) == []
    assert len({canonical_form("countdown", r) for r in te}) == len(te)

@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("kw", [dict(n_pairs=24), dict(n_pairs=2, n_train=5000, n_test=500), dict(n_pairs=3, n_queries=2, n_train=2000, n_test=200),
                                dict(n_pairs=1, n_train=400, n_test=100)])
def test_recall_split_has_no_canonical_leak(seed, kw):
    tr, te = make_recall(seed=seed, **kw)
    assert split_leaks("recall", tr, te) == []
    assert len({canonical_form("recall", r) for r in te}) == len(te)

@pytest.mark.parametrize("name,kw", [("arith", dict(n_train=300, n_test=50)), ("arith", dict(n_digits=1, ops="*-", n_train=100, n_test=30)),
                                     ("countdown", dict(n_train=300, n_test=50)), ("recall", dict(n_pairs=2, n_train=300, n_test=50))])
def test_every_registered_task_is_held_out(name, kw):
    t = make_task(name, **kw)
    assert split_leaks(name, t.train, t.test) == []

def test_canonical_forms():
    assert arith_canonical(12, "+", 34) == arith_canonical(34, "+", 12)
    assert arith_canonical(12, "*", 34) == arith_canonical(34, "*", 12)
    assert arith_canonical(12, "-", 34) != arith_canonical(34, "-", 12)
    assert canonical_form("countdown", dict(numbers=[3, 5, 2], target=16)) == canonical_form("countdown", dict(numbers=[2, 3, 5], target=16))
    assert canonical_form("countdown", dict(numbers=[3, 5, 2], target=16)) != canonical_form("countdown", dict(numbers=[3, 5, 2], target=13))
    assert canonical_form("recall", dict(prompt="a3b7c1|c=")) == canonical_form("recall", dict(prompt="c1a3b7|c="))
    assert canonical_form("recall", dict(prompt="a3b7c1|c=")) != canonical_form("recall", dict(prompt="a3b7c1|a="))
    with pytest.raises(ValueError, match="no canonical form for task 'chess'"): canonical_form("chess", {})

def test_the_test_split_barely_moves():   # only the test's own commuted twins change: the chapters' held-out sets are nearly the old ones
    _, old_te = _old_arith_split()
    _, te = make_arithmetic()
    assert len(set(te["prompt"]) & {r["prompt"] for r in old_te}) >= 480
