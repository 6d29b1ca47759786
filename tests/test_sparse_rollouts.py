"""Chapter 10's arms (rlref.methods.sparse_rollouts) in the trainer: what each arm puts in the PPO ratio, MIS's two-sided band,
and the shadow arm's Track 2 reusing the learner's own shadow-masked logits (two forwards per micro-batch, not three)."""
import pytest, torch
from rlref.models import make_char_tokenizer, make_tiny_llama, save_policy
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.kvcache import make_kv_policy
from rlref.methods.sparse_rollouts import SparseRolloutArm, arm_config, completion_log_softmax, shadow_distill_kl, ARMS

@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tok = make_char_tokenizer()
    return save_policy(make_tiny_llama(tok, "tiny", max_len=64, seed=0), tok, tmp_path_factory.mktemp("m") / "p")

def trainer(model_dir, arm, lam=0.1, **over):
    cfg = recipe_config("arith-grpo", model=str(model_dir), seed=0, eval_every=0, checkpoint_every=0, progress=False, steps=1,
                        prompts_per_step=4, samples_per_prompt=4, temperature=0.7, lr=1e-4, warmup_steps=0, **(arm_config(arm) | over))
    tr = Trainer.setup(cfg)
    SparseRolloutArm(arm, None if arm == "dense" else make_kv_policy("snapkv", 6, window=2), lam=lam).attach(tr)
    return tr

def test_arm_configs():
    assert arm_config("mis") == dict(is_correction="token_mis", is_clip=2.0, is_clip_min=0.5)
    assert arm_config("mis_upper") == dict(is_correction="token_mis", is_clip=2.0, is_clip_min=None)
    assert arm_config("naive") == arm_config("naive_sp") == {} and set(ARMS) >= {"naive", "naive_sp", "mis", "mis_upper"}
    with pytest.raises(ValueError, match="unknown arm"): arm_config("smd")

def test_mis_arm_refuses_a_one_sided_config(model_dir):
    cfg = recipe_config("arith-grpo", model=str(model_dir), steps=1, progress=False, checkpoint_every=0, eval_every=0, **arm_config("mis_upper"))
    with pytest.raises(ValueError, match="is_clip_min"): SparseRolloutArm("mis", make_kv_policy("snapkv", 6, window=2)).attach(Trainer.setup(cfg))

def test_ratio_is_one_for_naive_and_xi_for_naive_sp(model_dir):
    naive, naive_sp = trainer(model_dir, "naive").train_step(), trainer(model_dir, "naive_sp").train_step()
    assert naive["first_log_ratio_max"] < 1e-5                       # pi_old recomputed densely: xi is dropped
    assert naive_sp["first_log_ratio_max"] > 1e-3                    # pi_old = pi_sp: the ratio is xi
    assert naive["xi_kl"] == pytest.approx(naive_sp["xi_kl"])        # same rollout, same mismatch

def test_shadow_track2_reuses_the_learner_logits(model_dir):
    def run(lam):
        tr, calls, recomputed = trainer(model_dir, "shadow", lam=lam), [], []
        tr.policy.get_output_embeddings().register_forward_hook(lambda *a: calls.append(1))
        def recompute(t, ctx):
            n = len(calls)
            with torch.no_grad():
                sh = completion_log_softmax(t.policy, ctx.mb, 0.7, ctx.mb.extras["attention_mask_4d"]); de = completion_log_softmax(t.policy, ctx.mb, 0.7)
            recomputed.append(lam * shadow_distill_kl(de, sh, ctx.mb.completion_mask).item()); del calls[n:]
        tr.add_hook("loss_terms", recompute)
        m = tr.train_step()
        return len(calls), len(recomputed), m.get("distill_loss"), recomputed
    (n1, mb1, d1, re1), (n0, mb0, _, _) = run(0.1), run(0.0)
    assert mb1 == mb0 >= 1 and n1 - n0 == mb1                        # Track 2 adds one (dense) forward per micro-batch
    assert d1 == pytest.approx(re1[-1], abs=1e-6)                    # and equals the three-forward value

def test_mis_drop_takes_the_masked_tokens_out_of_the_denominator():
    # the testbed's warm start (rewards that vary within groups) sampled through SnapKV at 7 tokens; same seed,
    # same rollout, same weights: with the masked tokens dropped, the step's token mean divides by the kept tokens
    # only, so its loss is the kept one / (1 - masked fraction) (on-policy, one optimizer step over the rollout)
    assert arm_config("mis_drop") == arm_config("mis") | dict(is_masked_tokens="drop")
    def step(arm):
        cfg = recipe_config("testbed", seed=0, eval_every=0, checkpoint_every=0, progress=False, steps=1,
                            prompts_per_step=16, samples_per_prompt=4, lr=1e-4, warmup_steps=0, **arm_config(arm))
        tr = Trainer.setup(cfg)
        tr.kv_policy = make_kv_policy("snapkv", 7, window=2)
        return tr.train_step()
    keep, drop = step("mis"), step("mis_drop")
    frac = keep["is_frac_masked"]
    assert drop["is_frac_masked"] == frac and 0.05 < frac < 0.95     # the compressed sampler's xi leaves the band often
    assert keep["loss"] != 0 and drop["loss"] == pytest.approx(keep["loss"] / (1 - frac), rel=1e-4)

def test_sparse_rl_band_takes_its_masked_tokens_out_of_the_denominator():
    # the released Sparse-RL loss divides by the surviving tokens: with the band [0.5, 1.5], a token whose xi leaves it
    # gets weight 0 and leaves the denominator too; without the band the denominator is every token of the kept rows
    seen = {}
    for band in (None, (0.5, 1.5)):
        cfg = recipe_config("testbed", seed=0, eval_every=0, checkpoint_every=0, progress=False, steps=1,
                            prompts_per_step=16, samples_per_prompt=4, lr=1e-4, warmup_steps=0)
        tr = Trainer.setup(cfg)
        SparseRolloutArm("sparse_rl", make_kv_policy("snapkv", 7, window=2), band=band).attach(tr)
        keep = lambda t, r, band=band: seen.__setitem__(band, r) or r   # a hook that runs after the arm's
        tr.add_hook("before_update", keep)
        tr.train_step()
    plain, banded = seen[None], seen[(0.5, 1.5)]
    assert plain.loss_mask is None and torch.equal(plain.loss_tokens, plain.completion_mask)
    w = banded.extras["is_weights"]                                   # (B, C) min(xi, 1.5), 0 outside the band
    assert torch.equal(banded.loss_tokens, banded.completion_mask * (w > 0))
    assert 0 < banded.loss_tokens.sum() < banded.completion_mask.sum()   # some tokens left the band, not all
