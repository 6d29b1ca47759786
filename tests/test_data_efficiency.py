"""Chapter 17 (rlref.methods.data_efficiency): P0 and pass@k on literal values, band and one-shot bad input, the pass-rate tracker's
EMA, majority-vote rewards and their pseudo-label accuracy, and the hooks in a real trainer: DataMeter counts every refill's tokens,
a refill that can never fill stops with a clear message, the band filter removes out-of-band prompts from the pool and its state
survives a state_dict round trip, replay never draws a rollout older than max_age, one-shot trains on exactly k prompts."""
import numpy as np
import pytest
import torch
from rlref.methods.data_efficiency import (p_zero_signal, check_band, DataMeter, PassRateTracker, DifficultyBand,
                                           rollout_replay, few_shot_task, pass_at_k_per_prompt, majority_vote,
                                           MajorityVoteReward, taxonomy_table)
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import TrainingStopped

torch.set_num_threads(1)

def small(**kw):
    "The testbed warm start (seed 0), 4 prompts x 4 samples: seconds per step."
    return Trainer.setup(recipe_config("testbed", **(dict(seed=0, prompts_per_step=4, samples_per_prompt=4, steps=3, eval_every=0, kl_every=0,
                                                          progress=False, checkpoint_every=0) | kw)))

def test_p_zero_signal_and_pass_at_k_literals():
    np.testing.assert_allclose(p_zero_signal(np.array([0.0, 0.5, 0.9]), 8), [1.0, 2 / 256, 0.9 ** 8 + 0.1 ** 8])
    np.testing.assert_allclose(pass_at_k_per_prompt(8, np.array([0, 2, 8]), 1), [0.0, 0.25, 1.0])
    np.testing.assert_allclose(pass_at_k_per_prompt(4, 1, 2), 0.5)
    with pytest.raises(ValueError, match="G must be"): p_zero_signal(0.5, 0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"): p_zero_signal(-0.1, 4)
    with pytest.raises(ValueError, match="1 <= k <= n"): pass_at_k_per_prompt(4, 1, 5)

@pytest.mark.parametrize("low,high,msg", [(0.8, 0.2, "inverted"), (0.5, 0.5, "inverted"), (-0.1, 0.5, "low"), (0.2, 1.5, "high"), (True, 0.5, "low")])
def test_band_limits_are_checked(low, high, msg):
    with pytest.raises(ValueError, match=msg): check_band(low, high)

def test_pass_rate_tracker_ema():
    t = PassRateTracker(ema=0.25)
    assert t.update(["a"] * 4 + ["b"] * 4, [1, 1, 0, 0, 0, 0, 0, 0], G=4).tolist() == [0.5, 0.0]
    t.update(["a"] * 4, [1, 1, 1, 1], G=4, step=3)
    assert t.p_hat == {"a": 0.75 * 0.5 + 0.25 * 1.0, "b": 0.0} and t.seen == {"a": 3, "b": 0}
    u = PassRateTracker(); u.load_state_dict(t.state_dict()); assert u.p_hat == t.p_hat and u.ema == 0.25

def test_majority_vote_reward_and_pseudo_label_accuracy():
    assert majority_vote([None, 5, 4, 4, 5]) == 5 and majority_vote([]) is None
    mv = MajorityVoteReward()
    r = mv(["p"] * 3 + ["q"] * 3, ["12", "12", "13", "7", "8", "8"], answer=["13"] * 3 + ["8"] * 3)
    assert r == [1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    assert mv.last == dict(pseudo_label_acc=0.5, pseudo_reward_agree=pytest.approx(3 / 6))
    assert mv(["p"] * 2, ["x", "y"]) == [0.0, 0.0]           # no parseable answer: no label, no reward

def test_taxonomy_covers_three_levels():
    t = taxonomy_table()
    assert set(t.level) == {"data-centric", "training-centric", "framework-centric"} and t["here"].str.len().min() > 0

def test_meter_counts_refills_and_refill_that_never_fills_stops():
    tr = small(dynamic_sampling=True, max_refill_rounds=3)
    meter = DataMeter(tr)
    m = tr.train_step()
    assert m["zero_var_trained"] == 0.0 and m["generated_tokens"] == m["step_tokens"] == meter.tokens
    assert (m["refill_tokens"] > 0) == (m["refill_rounds"] > 0) and m["rollouts"] == m["refill_rounds"] + 1
    tr = small(dynamic_sampling=True, max_refill_rounds=2, reward_funcs=[lambda prompts, completions, **kw: [1.0] * len(completions)])
    meter = DataMeter(tr)
    with pytest.raises(TrainingStopped, match="equal rewards"): tr.train_step()
    assert len(meter._step) == 3 and all(n > 0 for n in meter._step)

def test_band_filter_pool_and_state():
    tr = small(prompts_per_step=8)
    band = DifficultyBand(tr, 0.2, 0.8, max_age=5)
    n_test = len(tr.task.test)
    tr.train_step()
    out = {p for p, v in band.tracker.p_hat.items() if not 0.2 <= v <= 0.8}
    pool = set(tr.task.train["prompt"])
    assert out and not (out & pool) and len(pool) == len(band.prompts) - len(out) and len(tr.task.test) == n_test
    assert all(band.keep(p, tr.step + 5) for p in out)      # expired estimates come back
    st = band.state_dict()
    tr2 = small(prompts_per_step=8); b2 = DifficultyBand(tr2, 0.2, 0.8); b2.load_state_dict(st)
    assert b2.tracker.p_hat == band.tracker.p_hat
    with pytest.raises(ValueError, match="max_age"): DifficultyBand(tr2, 0.2, 0.8, max_age=0)

def test_replay_age_is_bounded():
    tr = small()
    rep = rollout_replay(tr, fraction=0.5, max_age=1)
    assert rep.cfg.capacity == 2 * 16 and rep.cfg.batch_size == 8
    for _ in range(4): tr.train_step()
    assert len(rep.age_log) == 4 and max(a.max() for _, a in rep.age_log) <= 1
    with pytest.raises(ValueError, match="fraction"): rollout_replay(tr, fraction=1.5)

def test_one_shot_trains_on_k_prompts():
    tr = small()
    with pytest.raises(ValueError, match="empty one-shot set"): few_shot_task(tr.task, 0)
    with pytest.raises(ValueError, match="larger than"): few_shot_task(tr.task, len(tr.task.train) + 1)
    tr.task = few_shot_task(tr.task, 1, [7])
    seen = []
    tr.add_hook("after_rewards", lambda t, r: seen.extend(r.prompts))
    tr.train_step()
    assert set(seen) == {tr.task.train[0]["prompt"]} and len(seen) == 16
