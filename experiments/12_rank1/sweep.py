"""Reader-size runs of chapter 12 (rank-1 structure of RLVR updates) on the testbed (chapter 07b).

Entries (one JSON line each in experiments/12_rank1/sweep.jsonl; an entry already in the log is skipped, so the script resumes):
  main <seed>     (seeds 0-2 by default; the chapter reads seeds 0-4: --seeds 0 1 2 3 4) GRPO "testbed" recipe (64 prompts x 8, T 0.7, lr 3e-4) from the shipped arith2 warm start of <seed>, STEPS steps,
                  a checkpoint every EVERY steps. Saved: per-prompt held-out hits (500 test sums, greedy) of the warm start, the RL model,
                  and of W_base + op(ΔW) for every operator (full-linear, rank1, sigma1, rank2/4/8/16, residual, sigma2, random); hits of
                  the RL checkpoint, its rank-1 reconstruction and its residual at every checkpoint; the same operators in the "RL
                  frame" (`ops_rlframe`: the RL model's embeddings and norms, base projections + op(ΔW)); per-layer spectra (singular values of
                  ΔW and W_base, energy shares, tail exponents); |cos| of u1/v1 of every checkpoint with the final update's; the rank-1
                  extrapolation from the first half of the run.
  sft <seed>      The SFT control: supervised steps on the same training split from the same warm start; hits of the SFT model and
                  of its rank-1, residual and random reconstructions.
  overfit <seed> <arm>   P3: GRPO on a small training set (the first N_SMALL training prompts, revisited for many epochs), arm "plain",
                  "sub" (periodic rank-1 substitution every K steps, Adam's moments of the replaced matrices reset) or "sub-keepopt"
                  (the same substitution with Adam's state kept: the control for the reset). Every K steps: greedy exact match on those training prompts and
                  on the 500 held-out sums (the same decoding), before and after the substitution; final per-prompt hits of both sets.
  alpharl <seed>  main's run again (same warm start, seed and data order; its final hits are compared with main's). Saved: hits
                  of the un-rescaled pair sigma1 / residual_plain (σ₁u₁v₁ᵀ and ΔW − σ₁u₁v₁ᵀ, which sum to ΔW), σ₂u₂v₂ᵀ, and
                  their stretched versions rank1 / residual / sigma2 (at ‖ΔW‖_F) in both frames; P5 in AlphaRL's form for
                  t_obs in T_OBS: the checkpoint W(t_obs) itself ("stop"), W(t_obs) + the rank-1 move of extrapolation_move
                  ("alpharl"), + the full-rank move ("full_linear"), + a random rank-1 move of the same norm ("random_move"),
                  all predicting step STEPS. About 1 CPU minute per entry (60-72 s wall here).
  skill2 <seed>   Property (1): a fresh tiny model SFT'd on the seed's training sums mixed with 2-digit differences a-b (a >= b),
                  stopped by arith2's rule on the sums (validation 0.5 +- 0.02); then the testbed's GRPO on sums alone, STEPS
                  steps. Saved: hits on the 500 held-out sums and on 500 held-out differences of the warm start, the RL model
                  and W_base + op(ΔW) (both frames) for the operators in S2_OPS.
                  2.5-5 minutes per entry (144-282 s wall here), most of it the SFT.

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nohup nice -n 10 python experiments/12_rank1/sweep.py > /tmp/rank1_sweep.log 2>&1 &
    python experiments/12_rank1/sweep.py --only main --seeds 0 1 2     # a subset
"""
import argparse, copy, dataclasses, json, random, time
from pathlib import Path
import torch
from datasets import Dataset, concatenate_datasets
from rlref.core import seed_everything
from rlref.models import sft_warm_start, make_tiny_llama
from rlref.evaluation import exact_match
from rlref.warm_start import WARM_STARTS, validation_split
from rlref.evaluation import greedy_completions
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.methods.rank1 import (weight_deltas, apply_update, linear_weights, layer_type, energy_share, tail_exponent,
                                 top_vector_alignment, extrapolate_rank1, extrapolation_move, random_rank1_like,
                                 CheckpointRecorder, Rank1Substitution)

OUT = Path(__file__).with_suffix(".jsonl")
STEPS, EVERY = 200, 20                 # main runs: GRPO steps, checkpoint spacing
OPS = ("full", "rank1", "sigma1", "rank2", "rank4", "rank8", "rank16", "residual", "sigma2", "random")
SFT_STEPS, SFT_LR = 30, 3e-4           # SFT control
N_SMALL, OF_STEPS, K = 256, 200, 20    # P3: training prompts, GRPO steps, substitution period (= measurement spacing)
T_OBS = (60, 100)                      # P5 in AlphaRL's form: observation times (checkpoints from EVERY to t_obs observed)
RERUN_OPS = ("rank1", "sigma1", "residual", "residual_plain", "sigma2", "sigma2_plain")   # alpharl: P1 stretched and not
N_SUB_TRAIN, N_SUB_TEST = 4000, 500    # skill2: training and held-out differences (5050 pairs a >= b exist)
S2_OPS = ("full", "rank1", "sigma1", "residual", "residual_plain", "sigma2", "random")

bits = lambda h: "".join("1" if x else "0" for x in h)

def trainer(seed, steps, eval_every):
    cfg = recipe_config("testbed", seed=seed, steps=steps, eval_every=eval_every, progress=False, checkpoint_every=0)
    tr = Trainer.setup(cfg)
    return tr

def hits_fn(tr, rows):
    "Greedy exact match per prompt of any model on `rows` (a Dataset), with the trainer's tokenizer and reward."
    prompts, extra = list(rows["prompt"]), {c: list(rows[c]) for c in rows.column_names if c != "prompt"}
    def hits(model):
        comps = greedy_completions(model.eval(), tr.tok, prompts, tr.max_new_tokens)
        return [r >= 1.0 for r in tr.correctness(prompts, comps, **extra)]
    return hits

def rl_frame(base, tuned, deltas):
    "A copy of `tuned` whose projection matrices (the keys of `deltas`) are the base's: W_frame + op(ΔW) keeps the tuned embeddings and norms."
    frame, bp = copy.deepcopy(tuned).eval(), dict(base.named_parameters())
    with torch.no_grad():
        for k, p in frame.named_parameters():
            if k in deltas: p.copy_(bp[k])
    return frame

def main(seed):
    tr = trainer(seed, STEPS, EVERY)
    base = copy.deepcopy(tr.policy).eval()
    test = tr.task.test.select(range(tr.cfg.eval_limit))
    hits = hits_fn(tr, test)
    rec = CheckpointRecorder(tr.policy, EVERY); tr.add_hook("after_step", rec)
    t0 = time.process_time(); tr.fit(); cpu = time.process_time() - t0
    rl = tr.policy.eval()
    h_rl = hits(rl)
    assert h_rl == tr.evaluate(per_prompt=True).tolist(), "hits_fn must agree with Trainer.evaluate"
    d = weight_deltas(base, rl)
    out = dict(steps=STEPS, every=EVERY, cpu_seconds_rl=round(cpu, 1), base=bits(hits(base)), rl=bits(h_rl),
               ops={op: bits(hits(apply_update(base, d, op, seed=seed))) for op in OPS},
               reward=[round(h["reward_mean"], 4) for h in tr.history])
    frame = rl_frame(base, rl, d)                                            # the RL model with its projections reset to the base's
    out["ops_rlframe"] = {op: bits(hits(apply_update(frame, d, op, seed=seed))) for op in OPS}
    agree = sum(a == b for a, b in zip(out["ops_rlframe"]["full"], out["rl"]))      # fp32 rounding of base + (rl - base) may flip a rare argmax
    assert agree >= len(out["rl"]) - 2, f"the RL frame plus the full update must be the RL model ({agree} of {len(out['rl'])} prompts agree)"
    ts = sorted(t for t in rec.states if t > 0)
    def model_at(t):
        m = copy.deepcopy(base); m.load_state_dict(rec.states[t]); return m.eval()
    out["curve"] = {}
    for t in ts:
        mt, dt = model_at(t), weight_deltas(base, rec.states[t])
        out["curve"][t] = dict(rl=bits(hits(mt)), **{op: bits(hits(apply_update(base, dt, op, seed=seed))) for op in ("full", "rank1", "residual")},
                               **{f"{op}_rlframe": bits(hits(apply_update(rl_frame(base, mt, dt), dt, op, seed=seed))) for op in ("rank1", "residual")})
    Wb, g = linear_weights(base), torch.Generator().manual_seed(seed)
    out["spectra"] = {k: dict(type=layer_type(k), shape=list(v.shape), sv_delta=[float(f"{x:.4g}") for x in torch.linalg.svdvals(v).tolist()],
                              sv_base=[float(f"{x:.4g}") for x in torch.linalg.svdvals(Wb[k]).tolist()],
                              energy1=energy_share(v), energy1_gauss=energy_share(torch.randn(v.shape, generator=g)),
                              alpha_delta=tail_exponent(v), alpha_base=tail_exponent(Wb[k]), alpha_tuned=tail_exponent(Wb[k] + v))
                      for k, v in d.items()}
    al = top_vector_alignment([weight_deltas(base, rec.states[t]) for t in ts], d)
    out["alignment"] = dict(steps=ts, layers=al["layers"], u=[[round(x, 4) for x in r] for r in al["u"].tolist()],
                            v=[[round(x, 4) for x in r] for r in al["v"].tolist()])
    obs = [t for t in ts if t <= STEPS // 2]
    pred = extrapolate_rank1([weight_deltas(base, rec.states[t]) for t in obs], obs, STEPS)
    out["extrapolation"] = dict(observed=obs, predicted=bits(hits(apply_update(base, pred, "full"))))
    return out

def sft(seed):
    tr = trainer(seed, 0, EVERY)
    base = copy.deepcopy(tr.policy).eval()
    hits = hits_fn(tr, tr.task.test.select(range(tr.cfg.eval_limit)))
    model = copy.deepcopy(base).train()
    sft_warm_start(model, tr.tok, tr.task.train, steps=SFT_STEPS, lr=SFT_LR, warmup=5, seed=seed, progress=False)
    d = weight_deltas(base, model)
    return dict(sft_steps=SFT_STEPS, sft_lr=SFT_LR, base=bits(hits(base)), sft=bits(hits(model)),
                ops={op: bits(hits(apply_update(base, d, op, seed=seed))) for op in ("full", "rank1", "residual", "sigma2", "random")},
                ops_rlframe={op: bits(hits(apply_update(rl_frame(base, model, d), d, op, seed=seed))) for op in ("full", "rank1", "residual", "sigma2", "random")},
                energy1={k: energy_share(v) for k, v in d.items()})

class Measure:
    "after_step hook: greedy exact match on the small training set and on the held-out sums every `every` steps."
    def __init__(self, hit_train, hit_test, every, tag):
        self.hit_train, self.hit_test, self.every, self.tag, self.rows = hit_train, hit_test, every, tag, []
    def __call__(self, trainer, metrics):
        if trainer.step % self.every: return None
        m = trainer.policy; was = m.training
        tr_h, te_h = self.hit_train(m), self.hit_test(m)
        m.train(was)
        self.rows.append(dict(step=trainer.step, tag=self.tag, train=sum(tr_h) / len(tr_h), test=sum(te_h) / len(te_h)))
        self.last = (tr_h, te_h)

def overfit(seed, arm):
    tr = trainer(seed, OF_STEPS, K)
    small = tr.task.train.select(range(N_SMALL))
    tr.task = dataclasses.replace(tr.task, train=small)                      # the prompt sampler draws from these N_SMALL only
    base = copy.deepcopy(tr.policy).eval()
    h_train, h_test = hits_fn(tr, small), hits_fn(tr, tr.task.test.select(range(tr.cfg.eval_limit)))
    pre = Measure(h_train, h_test, K, "pre"); tr.add_hook("after_step", pre)
    if arm != "plain": tr.add_hook("after_step", Rank1Substitution(base, K, reset_optimizer=arm == "sub"))  # sub-keepopt: Adam kept
    post = Measure(h_train, h_test, K, "post") if arm != "plain" else None
    if post: tr.add_hook("after_step", post)
    b_tr, b_te = h_train(base), h_test(base)
    tr.policy.train()
    t0 = time.process_time(); tr.fit(); cpu = time.process_time() - t0
    final = (post or pre).last
    out = dict(arm=arm, n_small=N_SMALL, steps=OF_STEPS, every=K, cpu_seconds=round(cpu, 1),
               base_train=bits(b_tr), base_test=bits(b_te), final_train=bits(final[0]), final_test=bits(final[1]),
               curve=[dict(step=0, tag="pre", train=sum(b_tr) / N_SMALL, test=sum(b_te) / len(b_te))] + pre.rows + (post.rows if post else []),
               reward=[round(h["reward_mean"], 4) for h in tr.history])
    if arm == "plain":                                                       # post-hoc rank-1 of the plain run's final update
        r1 = apply_update(base, weight_deltas(base, tr.policy), "rank1", seed=seed)
        out |= dict(rank1_train=bits(h_train(r1)), rank1_test=bits(h_test(r1)))
    return out

def alpharl(seed):
    tr = trainer(seed, STEPS, EVERY)
    base = copy.deepcopy(tr.policy).eval()
    hits = hits_fn(tr, tr.task.test.select(range(tr.cfg.eval_limit)))
    rec = CheckpointRecorder(tr.policy, EVERY); tr.add_hook("after_step", rec)
    t0 = time.process_time(); tr.fit(); cpu = time.process_time() - t0
    rl = tr.policy.eval()
    d = weight_deltas(base, rl)
    frame = rl_frame(base, rl, d)
    out = dict(steps=STEPS, every=EVERY, cpu_seconds_rl=round(cpu, 1), base=bits(hits(base)), rl=bits(hits(rl)),
               ops={op: bits(hits(apply_update(base, d, op, seed=seed))) for op in RERUN_OPS},
               ops_rlframe={op: bits(hits(apply_update(frame, d, op, seed=seed))) for op in RERUN_OPS}, p5={})
    ts = sorted(t for t in rec.states if t > 0)
    for t_obs in T_OBS:
        obs = [t for t in ts if t <= t_obs]
        dts = [weight_deltas(base, rec.states[t]) for t in obs]
        m_obs = copy.deepcopy(base); m_obs.load_state_dict(rec.states[t_obs]); m_obs.eval()
        mv1, mvf = extrapolation_move(dts, obs, STEPS), extrapolation_move(dts, obs, STEPS, rank1=False)
        g = torch.Generator().manual_seed(seed)
        mvr = {k: random_rank1_like(v, generator=g) for k, v in mv1.items()}        # same norm as the rank-1 move, per layer
        norm = lambda mv: float(sum(v.norm() for v in mv.values()) / sum(v.norm() for v in dts[-1].values()))
        out["p5"][t_obs] = dict(observed=obs, stop=bits(hits(m_obs)), alpharl=bits(hits(apply_update(m_obs, mv1, "full"))),
                                full_linear=bits(hits(apply_update(m_obs, mvf, "full"))),
                                random_move=bits(hits(apply_update(m_obs, mvr, "full"))),
                                move_norm_rank1=round(norm(mv1), 4), move_norm_full=round(norm(mvf), 4))
    return out

def subtraction_rows(seed):
    "2-digit differences a-b= with a >= b (answers 0..99), split on the pair: no held-out pair is a training pair."
    pairs = [(a, b) for a in range(100) for b in range(a + 1)]
    random.Random(f"sub-{seed}").shuffle(pairs)
    rows = lambda ps: Dataset.from_list([dict(prompt=f"{a}-{b}=", answer=str(a - b)) for a, b in ps])
    return rows(pairs[N_SUB_TEST:N_SUB_TEST + N_SUB_TRAIN]), rows(pairs[:N_SUB_TEST])

def skill2(seed):
    tr = trainer(seed, STEPS, EVERY)
    spec, (sub_train, sub_test) = WARM_STARTS["arith2"], subtraction_rows(seed)
    mix = concatenate_datasets([tr.task.train.select_columns(["prompt", "answer"]), sub_train]).shuffle(seed=seed)
    val = validation_split(tr.task)
    model = make_tiny_llama(tr.tok, spec["size"], max_len=spec["max_len"], seed=seed)
    check = lambda m: dict(exact_match=exact_match(m, tr.tok, val, tr.task.reward_fn, max_new_tokens=tr.task.max_new_tokens))
    t0 = time.process_time()
    hist = sft_warm_start(model, tr.tok, mix, steps=2 * spec["sft_steps"], batch_size=spec["sft_batch_size"], lr=spec["sft_lr"],
                          seed=seed, progress=False, eval_fn=check, eval_every=spec["eval_every"], stop_at=spec["target"],
                          stop_tol=spec["tol"])
    cpu_sft = time.process_time() - t0
    with torch.no_grad(): tr.policy.load_state_dict(model.state_dict())        # same Parameter objects: the optimizer is intact
    base = copy.deepcopy(tr.policy).eval()
    h_add, h_sub = hits_fn(tr, tr.task.test.select(range(tr.cfg.eval_limit))), hits_fn(tr, sub_test)
    tr.policy.train()
    t0 = time.process_time(); tr.fit(); cpu = time.process_time() - t0
    rl = tr.policy.eval()
    d = weight_deltas(base, rl)
    frame = rl_frame(base, rl, d)
    both = lambda m: dict(add=bits(h_add(m)), sub=bits(h_sub(m)))
    return dict(steps=STEPS, sft_steps=hist[-1]["step"], sft_val=hist[-1]["exact_match"], cpu_seconds_sft=round(cpu_sft, 1),
                cpu_seconds_rl=round(cpu, 1), n_sub_train=len(sub_train), base=both(base), rl=both(rl),
                ops={op: both(apply_update(base, d, op, seed=seed)) for op in S2_OPS},
                ops_rlframe={op: both(apply_update(frame, d, op, seed=seed)) for op in S2_OPS},
                reward=[round(h["reward_mean"], 4) for h in tr.history])

def entries(only, seeds):
    for s in seeds:
        if "main" in only: yield ("main", s), lambda s=s: main(s)
    for s in seeds:
        for arm in ("plain", "sub", "sub-keepopt"):
            if "overfit" in only: yield ("overfit", s, arm), lambda s=s, arm=arm: overfit(s, arm)
    for s in seeds:
        if "sft" in only: yield ("sft", s), lambda s=s: sft(s)
    for s in seeds:
        if "alpharl" in only: yield ("alpharl", s), lambda s=s: alpharl(s)
    for s in seeds:
        if "skill2" in only: yield ("skill2", s), lambda s=s: skill2(s)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", default=["main", "overfit", "sft", "alpharl", "skill2"]); ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    torch.set_num_threads(1)
    done = set()
    if Path(a.out).is_file():
        from rlref.core import read_jsonl
        done = {tuple(r["key"]) for r in read_jsonl(a.out)}
    for key, fn in entries(a.only, a.seeds):
        if key in done: print("skip", key, flush=True); continue
        t0 = time.time(); seed_everything(key[1])
        rec = dict(key=list(key)) | fn() | dict(wall_seconds=round(time.time() - t0, 1), torch=torch.__version__)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
        print("done", key, rec["wall_seconds"], flush=True)
