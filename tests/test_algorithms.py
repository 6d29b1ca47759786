"""The trainer's algorithms: the registry (one place per algorithm), typed hook payloads, micro-batching that does not change the
loss, per-optimizer-step NaN skipping, config validation at construction, DAPO (refill, overlong filter and penalty), and the
explicit REINFORCE++ / Online DPO choices."""
import copy, json, math
from pathlib import Path
import pytest, torch
import rlref.trainer as T
from rlref.core import masked_mean
from rlref.losses import online_dpo_loss, AGGREGATION_MODES
from rlref.rollout import completion_logprobs
from rlref.trainer import Trainer, soft_overlong_penalty, concat_rollouts
from rlref.algorithms import ALGORITHMS, Algorithm, LossContext, register_algorithm, dpo_pairs
from rlref.train.config import TrainConfig, recipe_config

SMALL = json.loads((Path(__file__).resolve().parent / "tiny_configs.json").read_text())["test_algorithms"]  # the tiny config (shared with the seed sweep behind this file's margins)

def _setup(recipe="arith-grpo", **kw):
    torch.manual_seed(0)
    return Trainer.setup(recipe_config(recipe, **(SMALL | kw)))

def _params(tr): return {n: p.detach().clone() for n, p in tr.policy.named_parameters() if p.requires_grad}

# ---------------------------------------------------------------- registry and hooks
def test_registry_declares_each_algorithm():
    assert set(ALGORITHMS) == {"grpo", "rloo", "reinforce_pp", "ppo", "online_dpo"}
    assert ALGORITHMS["ppo"].needs_critic and ALGORITHMS["online_dpo"].pairs and not ALGORITHMS["grpo"].pairs
    with pytest.raises(ValueError, match="already registered"): register_algorithm(ALGORITHMS["grpo"])
    with pytest.raises(ValueError, match="unknown default_loss_type"): register_algorithm(Algorithm("x", None, None, default_loss_type="sum"))

def test_an_algorithm_added_in_one_place_trains():
    def adv(tr, r): r.advantages = r.rewards - r.rewards.mean()
    def loss(tr, ctx): return ctx.aggregate(-ctx.mb.advantages[:, None] * ctx.logprobs, tr.cfg.loss_type), {}
    register_algorithm(Algorithm("toy_reinforce", adv, loss, default_loss_type="seq_mean_token_sum", kl=()))
    try:
        cfg = TrainConfig(algorithm="toy_reinforce", **SMALL)
        assert cfg.loss_type == "seq_mean_token_sum"
        with pytest.raises(ValueError, match="beta is not used by toy_reinforce"): TrainConfig(algorithm="toy_reinforce", beta=0.1, **SMALL)
        torch.manual_seed(0); tr = Trainer.setup(cfg)
        g = torch.Generator().manual_seed(0)  # an untrained model is never right: random rewards instead
        tr.add_hook("after_rewards", lambda t, r: setattr(r, "rewards", torch.rand(len(r), generator=g)) or r)
        before = _params(tr)
        ms = [tr.train_step() for _ in range(2)]
        # seed sweep (experiments/07_trainer/seed_sweep_test_algorithms.py, seeds 0-4): every tensor moved, by >= 3.0e-4 (one Adam step at lr 1e-3)
        assert all(math.isfinite(m["loss"]) for m in ms) and all(not torch.equal(before[n], p) for n, p in _params(tr).items())
    finally: del ALGORITHMS["toy_reinforce"]

def test_before_update_hook_does_not_force_old_logprobs():
    tr = _setup()
    seen = {}
    tr.add_hook("before_update", lambda t, r: seen.__setitem__("plain", r.extras.get("old_logprobs")))
    tr.train_step()
    assert seen["plain"] is None                               # on-policy single update: no extra forward
    tr.add_hook("before_update", lambda t, r: seen.__setitem__("asks", r.extras.get("old_logprobs")), needs_old_logprobs=True)
    tr.train_step()
    assert isinstance(seen["asks"], torch.Tensor) and seen["asks"].shape == seen["asks"].shape
    class Hook:
        needs_old_logprobs = True
        def __call__(self, t, r): seen["attr"] = r.extras.get("old_logprobs")
    tr2 = _setup(); tr2.add_hook("before_update", Hook()); tr2.train_step()
    assert isinstance(seen["attr"], torch.Tensor)

def test_loss_terms_hook_gets_a_typed_context():
    tr = _setup(steps=1)
    got = []
    tr.add_hook("loss_terms", lambda t, ctx: got.append(ctx) or {})
    tr.train_step()
    ctx = got[0]
    assert isinstance(ctx, LossContext) and ctx["mb"] is ctx.mb and ctx.logprobs.requires_grad
    assert ctx.minibatch_tokens == int(ctx.mb.completion_mask.sum()) and ctx.n_micro == 1

# ---------------------------------------------------------------- correctness of the update
def test_one_nan_minibatch_skips_only_its_optimizer_step():
    tr = _setup(minibatch_size=4, max_bad_steps=3, warmup_steps=0)        # 16 rows: 4 optimizer steps per rollout
    orig, calls = tr.loss, []
    def loss(mb, n_tok, n_micro):
        l, info = orig(mb, n_tok, n_micro); calls.append(1)
        return (l * float("nan"), info) if len(calls) == 1 else (l, info)
    tr.loss = loss
    m = tr.train_step()
    assert tr.skipped_steps == 1 and tr.bad_steps == 0 and tr.sched.last_epoch == 3
    assert math.isfinite(m["loss"]) and all(torch.isfinite(p).all() for p in tr.policy.parameters())

def _fixed_batch(loss_type, **kw):
    "A trainer and a 10-row off-policy minibatch with random advantages (5 prompts x 2 samples)."
    cfg = recipe_config("arith-grpo", **(SMALL | dict(prompts_per_step=5, samples_per_prompt=2, loss_type=loss_type, max_grad_norm=1e9,
                                                      warmup_steps=0, entropy_coef=0.01) | kw))
    torch.manual_seed(0)
    tr = Trainer.setup(cfg)
    r = tr.rollout()
    g = torch.Generator().manual_seed(1)
    r.advantages = torch.randn(len(r), generator=g)
    lp = tr.logprobs(tr.policy, r)
    r.extras["old_logprobs"] = lp - 0.3 * torch.rand(lp.shape, generator=g) * r.completion_mask  # ratios away from 1: clipping is active
    return tr, r

@pytest.mark.parametrize("loss_type", AGGREGATION_MODES)
def test_loss_and_gradient_do_not_depend_on_micro_batching(loss_type):
    tr0, r = _fixed_batch(loss_type, beta=0.04)
    state = copy.deepcopy(tr0.policy.state_dict())
    out = {}
    for micro in (None, 4, 3):                                             # 10 rows; 4+4+2 and 3+3+3+1: uneven tails
        tr0.policy.load_state_dict(state)
        tr = Trainer(copy.copy(tr0.cfg), tr0.policy, tr0.tok, tr0.task)
        tr.ref = tr0.ref
        tr.cfg.micro_batch_size = micro  # set after construction: the config refuses a 10-row minibatch of 4s
        m = tr._update(r)
        out[micro] = (m["loss"], m["policy_loss"], torch.cat([p.grad.flatten() for p in tr.policy.parameters() if p.grad is not None]))
    for micro in (4, 3):
        assert out[micro][0] == pytest.approx(out[None][0], abs=1e-6), (loss_type, micro, out[micro][0], out[None][0])
        assert out[micro][1] == pytest.approx(out[None][1], abs=1e-6)
        torch.testing.assert_close(out[micro][2], out[None][2], atol=1e-6, rtol=0)

def test_rollout_calls_the_reward_function_once():
    tr = _setup()
    f, calls = tr.task.reward_fn, []
    tr.task.reward_fn = lambda *a, **k: calls.append(1) or f(*a, **k)
    tr.rollout()
    assert len(calls) == 1

def test_learner_replays_the_samplers_top_k_top_p():
    tr = _setup(top_k=3, top_p=0.9)
    r = tr.rollout()
    torch.testing.assert_close(tr.logprobs(tr.policy, r), r.sampler_logprobs, atol=1e-4, rtol=0)
    full = completion_logprobs(tr.policy, r, tr.cfg.temperature, with_entropy=False)[0]
    # seed sweep (experiments/07_trainer/seed_sweep_test_algorithms.py, init and sampler seeds 0-4): the gap is >= 2.75, the replay error <= 3.6e-7
    assert (full - r.sampler_logprobs).abs().max() > 1e-2              # without the replay the ratio would not be 1

def test_is_knobs_reach_importance_weights(monkeypatch):
    seen = {}
    real = T.importance_weights
    monkeypatch.setattr(T, "importance_weights", lambda *a, **k: seen.update(k) or real(*a, **k))
    _setup(is_correction="token_mis", is_clip_min=0.5, is_veto=1e-3).train_step()
    assert seen["clip_min"] == 0.5 and seen["veto"] == 1e-3 and seen["clip_max"] == 2.0

# ---------------------------------------------------------------- config
def test_defaults_follow_the_algorithm_and_kl_knobs_are_explicit():
    assert TrainConfig(algorithm="grpo").loss_type == "dapo"
    assert TrainConfig(algorithm="rloo").loss_type == "seq_mean_token_sum"
    assert TrainConfig(algorithm="rloo", loss_type="grpo").loss_type == "grpo"
    assert TrainConfig(algorithm="online_dpo", samples_per_prompt=2).loss_type is None
    with pytest.raises(ValueError, match="kl_coef is not used by grpo"): TrainConfig(kl_coef=0.05)
    with pytest.raises(ValueError, match="not both"): TrainConfig(algorithm="rloo", kl_coef=0.05, beta=0.04)
    with pytest.raises(ValueError, match="beta is not used by online_dpo"): TrainConfig(algorithm="online_dpo", samples_per_prompt=2, beta=0.1)
    assert _setup(algorithm="grpo").ref is None and _setup(algorithm="rloo", kl_coef=0.05).ref is not None

BAD = [
    (dict(lr=float("inf")), "lr must be > 0 and finite"), (dict(lr=float("nan")), "lr must be > 0"), (dict(lr=0.0), "lr must be > 0"),
    (dict(max_grad_norm=-1.0), "max_grad_norm must be > 0"), (dict(max_grad_norm=0.0), "max_grad_norm must be > 0"),
    (dict(num_iterations=0), "num_iterations must be >= 1"), (dict(prompts_per_step=0), "prompts_per_step must be >= 1"),
    (dict(samples_per_prompt=0), "samples_per_prompt must be >= 1"), (dict(beta=-0.1), "beta must be >= 0"),
    (dict(algorithm="rloo", kl_coef=-0.1), "kl_coef must be >= 0"), (dict(lam=1.5), "lam must be in \\[0, 1\\]"), (dict(lam=-0.1), "lam must be in"),
    (dict(gamma=1.01), "gamma must be in"), (dict(eps_high=-0.1), "eps_high must be > 0"), (dict(eps_low=0.0), "eps_low must be > 0"),
    (dict(dual_clip=0.5), "dual_clip must be > 1"), (dict(dual_clip=1.0), "dual_clip must be > 1"),
    (dict(max_new_tokens=0), "max_new_tokens must be an int >= 1 or None"), (dict(keep_checkpoints=0), "keep_checkpoints must be >= 1"),
    (dict(max_bad_steps=0), "max_bad_steps must be >= 1"), (dict(scale_rewards="std"), "unknown scale_rewards"),
    (dict(temperature=0.0), "temperature must be > 0"), (dict(temperature=float("inf")), "temperature must be > 0 and finite"),
    (dict(eval_limit=0), "eval_limit must be >= 1"), (dict(seed=2 ** 60), "seed must be < 2\\*\\*31"), (dict(seed=-1), "seed must be >= 0"),
    (dict(sft_batch_size=0), "sft_batch_size must be >= 1"), (dict(sft_target=0.0), "sft_target must be in \\(0, 1\\]"),
    (dict(sft_target=1.5), "sft_target must be in"), (dict(weight_decay=-0.01), "weight_decay must be >= 0"),
    (dict(warmup_steps=-1), "warmup_steps must be >= 0"), (dict(is_clip=0.0), "is_clip must be > 0"),
    (dict(task_kwargs=[("n_train", 10)]), "task_kwargs must be a dict"), (dict(steps=2.5), "steps must be an int"),
    (dict(top_k=-1), "top_k must be >= 0"), (dict(top_p=0.0), "top_p must be in \\(0, 1\\]"), (dict(top_p=1.5), "top_p must be in"),
    (dict(is_veto=1.0), "is_veto must be in \\(0, 1\\)"), (dict(is_clip_min=3.0), "is_clip_min must be in \\[0, is_clip\\)"),
    (dict(max_refill_rounds=-1), "max_refill_rounds must be >= 0"), (dict(overlong_buffer=-1), "overlong_buffer must be >= 0"),
    (dict(max_new_tokens=4, overlong_buffer=5), "overlong_buffer must be <= max_new_tokens"), (dict(loss_type="sum"), "unknown loss_type"),
    (dict(minibatch_size=0), "minibatch_size must be an int >= 1"), (dict(dpo_beta=0.0), "dpo_beta must be > 0"),
    (dict(algorithm="online_dpo", samples_per_prompt=2, dpo_ties="random"), "unknown dpo_ties"),
    (dict(algorithm="online_dpo", samples_per_prompt=2, dpo_temperature=0.0), "dpo_temperature must be > 0"),
    (dict(algorithm="online_dpo", samples_per_prompt=2, loss_type="dapo"), "loss_type does not apply to online_dpo"),
    (dict(algorithm="online_dpo", samples_per_prompt=2, dynamic_sampling=True), "dynamic_sampling drops rows"),
    (dict(algorithm="online_dpo", prompts_per_step=4, samples_per_prompt=2, minibatch_size=3, micro_batch_size=1), "minibatch_size must be even"),
    (dict(algorithm="reinforce_pp", samples_per_prompt=1), "reinforce_pp_variant='baseline'.*needs samples_per_prompt >= 2"),
    (dict(algorithm="reinforce_pp", reinforce_pp_variant="rloo"), "unknown reinforce_pp_variant"),
    (dict(algorithm="reinforce_pp", reinforce_pp_variant="plain", samples_per_prompt=1, dynamic_sampling=True), "dynamic_sampling .*needs samples_per_prompt >= 2"),
    (dict(out=""), "out must be a non-empty path, or None"), (dict(out="   "), "out must be a non-empty path"),
    (dict(vf_coef=-1.0), "vf_coef must be >= 0"), (dict(value_clip=0.0), "value_clip must be > 0"), (dict(entropy_coef=float("nan")), "entropy_coef must be finite"),
]

@pytest.mark.parametrize("kwargs,msg", BAD)
def test_bad_config_is_refused_at_construction(kwargs, msg):
    assert len(BAD) >= 25
    with pytest.raises(ValueError, match=msg): TrainConfig(**kwargs)

# ---------------------------------------------------------------- DAPO
def test_soft_overlong_penalty_on_literal_lengths():
    pen = soft_overlong_penalty(torch.tensor([3, 5, 6, 7, 8, 9]), max_len=8, buffer=3)
    torch.testing.assert_close(pen, torch.tensor([0., 0., -1 / 3, -2 / 3, -1., -1.]))
    with pytest.raises(ValueError, match="buffer"): soft_overlong_penalty(torch.tensor([1]), 8, 9)

def test_overlong_penalty_is_in_the_reward_and_the_filter_drops_truncated_rows():
    tr = _setup(max_new_tokens=3, overlong_buffer=2, overlong_filter=True)  # an untrained model rarely stops within 3 tokens
    seen = {}
    tr.add_hook("before_update", lambda t, r: seen.__setitem__("truncated", r.truncated.clone()))
    r = tr.rollout()
    expect = soft_overlong_penalty(r.lengths, 3, 2)
    torch.testing.assert_close(r.extras["overlong_penalty"], expect)
    m = tr.train_step()
    assert m["overlong_filtered"] >= 1 and not seen.get("truncated", torch.zeros(0, dtype=torch.bool)).any()

def _uniform_groups(frac_kept_first: int, always: bool = False):
    "An after_rewards hook: give every group but `frac_kept_first` of the first rollout (or of every rollout) equal rewards."
    calls = []
    def hook(t, r):
        calls.append(1)
        G = t.cfg.samples_per_prompt
        rw = r.rewards.view(-1, G).clone()
        rw[:, :] = torch.arange(G, dtype=rw.dtype)                     # every group informative ...
        if always or len(calls) == 1: rw[frac_kept_first:] = 0.0       # ... except these, which are constant
        r.rewards = rw.flatten()
        return r
    return hook, calls

def test_dynamic_sampling_refills_the_batch():
    tr = _setup("arith-dapo", max_new_tokens=8)
    hook, calls = _uniform_groups(1)
    tr.add_hook("after_rewards", hook)
    rows = []
    tr.add_hook("before_update", lambda t, r: rows.append((len(r), r.group.tolist())))
    m = tr.train_step()
    P, G = tr.cfg.prompts_per_step, tr.cfg.samples_per_prompt
    assert len(calls) == 2 and m["refill_rounds"] == 1 and m["groups_dropped"] == P - 1 and m["groups_kept"] == P and m["groups_missing"] == 0
    assert rows[0][0] == P * G and rows[0][1] == [g for g in range(P) for _ in range(G)]

def test_dynamic_sampling_cap_and_nothing_left():
    tr = _setup("arith-dapo", max_new_tokens=8, max_refill_rounds=2)
    hook, calls = _uniform_groups(1, always=True)                       # one informative group per rollout
    tr.add_hook("after_rewards", hook)
    m = tr.train_step()
    assert len(calls) == 3 and m["refill_rounds"] == 2 and m["groups_kept"] == 3 and m["groups_missing"] == 1
    tr2 = _setup("arith-dapo", max_new_tokens=8, max_refill_rounds=1)
    tr2.add_hook("after_rewards", _uniform_groups(0, always=True)[0])
    with pytest.raises(RuntimeError, match="nothing to train on"): tr2.train_step()

def test_dynamic_sampling_refill_sized_to_the_shortfall():
    P = 8
    sizes = {}
    for refill in ("batch", "shortfall"):
        tr = _setup("arith-dapo", max_new_tokens=8, prompts_per_step=P, refill=refill)
        hook, calls = _uniform_groups(P - 1)                            # the first rollout lacks one informative group
        def sized(t, r, hook=hook, refill=refill):                      # record each rollout's prompts, then the hook
            sizes.setdefault(refill, []).append(len(r) // t.cfg.samples_per_prompt)
            return hook(t, r)
        tr.add_hook("after_rewards", sized)
        m = tr.train_step()
        assert m["groups_kept"] == P and m["refill_rounds"] == 1 and m["groups_missing"] == 0
        n = sum(sizes[refill])
        assert m["groups_sampled"] == n and m["groups_wasted"] == n - 1 - P
    assert sizes == {"batch": [P, P], "shortfall": [P, 2]}   # ceil(1 * 8 / 7) = 2 prompts, one of them wasted
    with pytest.raises(ValueError, match="refill"): recipe_config("arith-dapo", refill="half")

def test_arith_dapo_recipe_trains():
    cfg = recipe_config("arith-dapo")
    assert cfg.eps_high == 0.28 and cfg.dynamic_sampling and cfg.loss_type == "dapo" and cfg.overlong_buffer > 0
    tr = _setup("arith-dapo", sft_steps=60, sft_lr=3e-3, sft_target=0.5, prompts_per_step=8)  # a warm start: mixed groups
    before = _params(tr)
    ms = [tr.train_step() for _ in range(2)]
    # seed sweep (experiments/07_trainer/seed_sweep_test_algorithms.py, seeds 0-4): all 8 groups kept on every step, using at most 3 of the 4 refill rounds
    assert all(m["groups_kept"] == tr.cfg.prompts_per_step for m in ms), ms
    assert all(not torch.equal(before[n], p) for n, p in _params(tr).items()) and tr.skipped_steps == 0

def test_concat_rollouts_pads_and_renumbers():
    tr = _setup()
    a, b = tr.rollout(), tr.rollout()
    c = concat_rollouts([a.select([4, 5, 6, 7]), b.select([0, 1, 2, 3])], tr.tok.pad_token_id)
    assert len(c) == 8 and c.group.tolist() == [0] * 4 + [1] * 4
    lp = tr.logprobs(tr.policy, c)
    torch.testing.assert_close(lp[:4], tr.logprobs(tr.policy, a.select([4, 5, 6, 7]))[:, :lp.shape[1]] if lp.shape[1] <= a.completion_ids.shape[1]
                               else torch.nn.functional.pad(tr.logprobs(tr.policy, a.select([4, 5, 6, 7])), (0, lp.shape[1] - a.completion_ids.shape[1])), atol=1e-5, rtol=0)

def test_reinforce_pp_baseline_whitens_after_the_filter():
    tr = _setup(algorithm="reinforce_pp", dynamic_sampling=True)
    tr.add_hook("after_rewards", _uniform_groups(2)[0])                 # half the groups are dropped, then refilled
    seen = []
    tr.add_hook("before_update", lambda t, r: seen.append((len(r), masked_mean(r.advantages, r.completion_mask.float()).item())))
    tr.train_step()
    assert seen[0][0] == 16 and abs(seen[0][1]) < 1e-5                   # whitened over the rows that are trained on

# ---------------------------------------------------------------- REINFORCE++ and Online DPO choices
def test_reinforce_pp_variant_is_explicit():
    assert TrainConfig(algorithm="reinforce_pp").reinforce_pp_variant == "baseline"
    tr = _setup(algorithm="reinforce_pp")
    r = tr.rollout(); r.rewards = torch.arange(len(r), dtype=torch.float32)
    base = tr.advantages(copy.copy(r)).advantages.clone()
    tr.cfg.reinforce_pp_variant = "plain"
    plain = tr.advantages(r).advantages
    assert not torch.allclose(base, plain)
    TrainConfig(algorithm="reinforce_pp", reinforce_pp_variant="plain", samples_per_prompt=1)  # G = 1 works with the plain variant

def test_online_dpo_ties_on_literal_values():
    lp = torch.zeros(4)
    rw = torch.tensor([1., 0., .5, .5])
    l_drop, n = online_dpo_loss(lp, lp, rw, ties="drop")
    l_first, n2 = online_dpo_loss(torch.tensor([1., 0., 1., 0.]), lp, rw, beta=1.0, ties="first")
    assert n == n2 == 1 and l_drop.item() == pytest.approx(math.log(2))
    assert l_first.item() == pytest.approx(-torch.nn.functional.logsigmoid(torch.tensor(1.)).item())  # both pairs: winner +1 over loser
    tr = _setup(algorithm="online_dpo", samples_per_prompt=2)
    r = tr.rollout(); r.rewards = torch.tensor([1., 1., 0., 1., 0., 0., 1., 0.]); r.extras["row"] = torch.arange(8)
    assert dpo_pairs(tr, r).extras["row"].tolist() == [0, 1, 3, 2, 4, 5, 6, 7]  # a tied group gives two distinct samples, best first

def test_online_dpo_scores_at_dpo_temperature_and_keeps_pairs_together():
    assert TrainConfig(algorithm="online_dpo", samples_per_prompt=2).dpo_temperature == 1.0
    tr = _setup(algorithm="online_dpo", samples_per_prompt=2, prompts_per_step=8, temperature=0.7, minibatch_size=8, micro_batch_size=4)
    seen = []
    tr.add_hook("loss_terms", lambda t, ctx: seen.append(ctx.mb.group.view(-1, 2)) or {})
    tr.train_step()
    assert seen and all((g[:, 0] == g[:, 1]).all() for g in seen)  # rows (2k, 2k+1) are one prompt's pair in every micro-batch
    r = dpo_pairs(tr, tr.rollout())
    loss, info = tr.loss(r, int(r.completion_mask.sum()), 1)
    m = r.completion_mask
    with torch.no_grad():
        lp1 = completion_logprobs(tr.policy, r, 1.0, with_entropy=False)[0]
        ref1 = completion_logprobs(tr.ref, r, 1.0, with_entropy=False)[0]
    expect, _ = online_dpo_loss((lp1 * m).sum(1), (ref1 * m).sum(1), r.rewards, beta=tr.cfg.dpo_beta, ties="first")
    assert loss.item() == pytest.approx(expect.item(), abs=1e-6)

# ---------------------------------------------------------------- a new algorithm with a setting, in one file
TEMPERED = '''"REINFORCE with the advantage tanh(tau * (R - mean R)): one algorithm and its one setting, in one file."
from rlref.algorithms import Algorithm, Setting, register_algorithm, is_number

def advantages(tr, r): r.advantages = (tr.cfg.setting("tau") * (r.rewards - r.rewards.mean())).tanh()   # (B,)

def loss(tr, ctx): return ctx.aggregate(-ctx.mb.advantages[:, None] * ctx.logprobs, tr.cfg.loss_type), {}

register_algorithm(Algorithm("tempered", advantages, loss, default_loss_type="seq_mean_token_sum", kl=(),
                             settings=(Setting("tau", 1.0, "advantage temperature", lambda v: is_number(v) and v > 0,
                                               "> 0 and finite"),),
                             recipes={"arith-tempered": dict(lr=1e-3)}))
'''

@pytest.fixture
def tempered(tmp_path, monkeypatch):
    "The module above as one .py file on the import path; the registry and sys.modules are restored afterwards."
    import sys
    (tmp_path / "tempered_algo.py").write_text(TEMPERED)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "tempered_algo:tempered"
    ALGORITHMS.pop("tempered", None)
    sys.modules.pop("tempered_algo", None)

def test_a_new_algorithm_with_a_setting_trains_from_one_file(tempered):
    def losses(tau):
        torch.manual_seed(0)
        tr = Trainer.setup(TrainConfig(algorithm=tempered, algorithm_args={"tau": tau}, **SMALL))
        g = torch.Generator().manual_seed(0)  # an untrained model is never right: random rewards
        tr.add_hook("after_rewards", lambda t, r: setattr(r, "rewards", torch.rand(len(r), generator=g)) or r)
        return [tr.train_step()["loss"] for _ in range(2)]
    small, large = losses(0.5), losses(4.0)
    assert all(math.isfinite(x) for x in small + large)
    assert small[0] != large[0]                                     # the same rollout: tau reached the loss
    cfg = TrainConfig(algorithm=tempered, **SMALL)
    assert cfg.algorithm_args == {"tau": 1.0} and cfg.setting("tau") == 1.0 and cfg.loss_type == "seq_mean_token_sum"
    assert recipe_config("arith-tempered", **SMALL).lr == 1e-3  # its recipe, declared in the same file

@pytest.mark.parametrize("args,msg", [
    ({"tau": -1.0}, "tau must be > 0 and finite, got -1.0"), ({"tau": float("nan")}, "tau must be > 0"),
    ({"tau": "0.3"}, "tau must be > 0 and finite"), ({"tua": 1.0}, r"its settings are \['tau'\]"),
    ({"lr": 1.0}, "lr is a TrainConfig field"), ([1], "algorithm_args must be a dict")])
def test_a_bad_setting_fails_before_training(tempered, args, msg):
    with pytest.raises(ValueError, match=msg): TrainConfig(algorithm=tempered, algorithm_args=args, **SMALL)

def test_unknown_algorithm_or_module_is_one_clear_error():
    for name, msg in (("a2c", "unknown algorithm 'a2c'; choose one of"), ("no_such_module_x:a", "cannot import 'no_such_module_x'"),
                      ("rlref.losses:nope", "registers no algorithm 'nope'")):
        with pytest.raises(ValueError, match=msg): TrainConfig(algorithm=name, **SMALL)
    with pytest.raises(ValueError, match="grpo.*has no setting 'tau'"): TrainConfig(**SMALL).setting("tau")

def test_the_command_line_loads_the_module_and_its_setting(tempered, tmp_path, monkeypatch, capsys):
    from rlref.cli import main
    import rlref.train.config as C
    monkeypatch.setitem(C.RECIPES, "tiny", SMALL | dict(checkpoint_every=1))
    run = ["train", "--recipe", "tiny", "--algorithm", tempered, "--steps", "1", "--quiet", "--out"]
    with pytest.raises(SystemExit) as e: main(run + [str(tmp_path / "bad"), "--algorithm-arg", "tau=-1"])
    assert e.value.code == 2 and not (tmp_path / "bad").exists()               # refused before anything is written
    main(run + [str(tmp_path / "ok"), "--algorithm-arg", "tau=2"])
    saved = json.loads((tmp_path / "ok" / "config.json").read_text())
    assert saved["algorithm"] == tempered and saved["algorithm_args"] == {"tau": 2}
    with pytest.raises(SystemExit) as e:                           # a resume may not change a setting
        main(run + [str(tmp_path / "ok"), "--algorithm-arg", "tau=3", "--resume", "--steps", "2"])
    assert e.value.code == 2 and "algorithm_args {'tau': 2} -> {'tau': 3}" in capsys.readouterr().err
