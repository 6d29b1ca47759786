"""Chapter 14's reader-size runs: GRPO with a k3 KL penalty (beta in {0, 0.01, 0.1}) against GRPO on a logit-averaged
policy (alpha in {0.25, 0.5, 0.75}, beta = 0) and the SFT warm start alone, on the format task `arith_ans` (two-digit
sums answered as <ans>sum</ans>), from each seed's format warm start (rlref.methods.logit_averaging.format_warm_start,
built once into the cache).

One JSON line per (reward, arm, seed) in the design's log; rows already there are skipped (resumable). Every arm shares
the design's setting (same G, steps; lr unless the arm names one) and is evaluated every --eval_every steps on the same
500 held-out prompts at the task's full budget (15 tokens): greedy correctness (`acc`), exact-format rate (`fmt`), the
share that opens with <ans> (`tagged`), KL(pi_deployed || pi_sft) of whole completions and the centred-logit gap
||z_theta - z_ref|| on the first --kl_prompts held-out prompts x --kl_n samples at the sampling temperature.

--design v1 (the default; experiments/14_logit_averaging/sweep.jsonl, seed-major): 40 steps at lr 2e-4, the format warm
start as built by default (SFT format 0.998-1.000), rollouts at the task's budget. The tags cost nothing there, so
"beta = 0 GRPO loses the format" cannot fail or hold for a reason. Its command:

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/14_logit_averaging/sweep.py --seeds 0 1 2 \
        --rewards correct

--design v2 (experiments/14_logit_averaging/sweep_v2.jsonl, arm-major, headline arms first): the tags cost something.
Rollouts get a budget of 7 new tokens (--budget): '<ans>' takes 5, so a tagged answer of 3 digits (sums >= 100, about
half the prompts) is cut to its first 2 digits and earns nothing under the correctness-only reward, while the bare
'123' fits. The warm start leaves 20% of its SFT targets bare (format_warm_start(untagged=0.2)): the tags stay its
greedy output, but sampling at T = 0.7 leaves them often enough for GRPO to find that bare answers pay. Measured on
seeds 0-4 before any RL (500 held-out prompts greedy; 128 training prompts x 8 samples at the 7-token budget):
greedy format 1.000/1.000/1.000/0.986/0.994, accuracy 0.524/0.546/0.478/0.464/0.520 (0.238/0.226/0.198/0.232/0.178
within the budget), untagged rollouts 0.103/0.081/0.073/0.176/0.104, bare and right 0.025/0.038/0.015/0.030/0.032
(10% bare targets instead: 0.027 untagged, 0.002 bare and right on seed 0; 0%: 0.001 and 0.000). `acc_budget`
is held-out greedy correctness within the 7-token budget (what the reward pays), `acc` the same at the full budget.
Arms: sft; GRPO beta in {0, 0.01, 0.1} at lr 2e-4 and 1e-4; logit averaging alpha in {0.25, 0.5, 0.75} at lr 2e-4;
the smaller-step control beta = 0 GRPO at lr alpha x 2e-4 for every alpha (5e-5, 1e-4 = the beta = 0 arm at 1e-4,
1.5e-4). An arm is '<arm>@<lr>'. 200 steps, evaluations every 20, seeds 0-4. Its command (not run yet):

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/14_logit_averaging/sweep.py --design v2

Smoke (sweep_v2_smoke.jsonl: seed 0, 50 steps, evaluations every 10, one thread; a preview, not evidence):
    grpo_b0@2e-4    fmt 1.000 -> 0.502, acc 0.524 -> 0.708, acc_budget 0.238 -> 0.708; 0.33 train CPU s/step
    la_a0.5@2e-4    fmt 1.000 -> 0.514, acc 0.524 -> 0.702, acc_budget 0.238 -> 0.702; 0.49 train CPU s/step
    grpo_b0.1@2e-4  fmt 1.000 -> 0.520, acc 0.524 -> 0.694, acc_budget 0.238 -> 0.694; 0.46 train CPU s/step
Format falls by step 10 and settles near the share of two-digit sums: bare answers for sums >= 100, tagged ones below
(where the tags cost nothing). So P1 can fail here; at 50 steps alpha = 0.5 does not keep the format either.
An evaluation costs 0.65 CPU s (GRPO), 0.7 (KL), 1.1 (mixture). At 200 steps + 11 evaluations a run is ~73 CPU s
(beta = 0), ~100 (KL), ~111 (mixture): 20 beta = 0 runs (4 lrs) + 20 KL runs + 15 mixture runs + 5 sft rows +
5 warm-start builds (11-35 s each, 103 s) = about 5,200 CPU s (87 CPU min on one thread; two processes with
disjoint --arms and the same --out halve the wall time, as the log is appended one whole row at a time).
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import copy, time
from sweep_runner import run_pending, sweep_parser, parse_sweep_args
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.warm_start import TESTBED_TASK
from rlref.methods.logit_averaging import (format_warm_start, logit_averaging_trainer, format_eval, drift_metrics,
                                           halves, ANS_OPEN)

ARMS = ("sft", "grpo_b0", "grpo_b0.01", "grpo_b0.1", "la_a0.25", "la_a0.5", "la_a0.75")
SETTING = dict(lr=2e-4, prompts_per_step=64, samples_per_prompt=8, temperature=0.7, steps=40)   # v1's reader size
V2_ARMS = ("sft", "grpo_b0@2e-4", "la_a0.5@2e-4", "grpo_b0@1e-4",          # the headline (P1), alpha = 0.5's control
           "grpo_b0.01@2e-4", "grpo_b0.1@2e-4", "la_a0.25@2e-4", "grpo_b0@5e-5", "la_a0.75@2e-4", "grpo_b0@1.5e-4",
           "grpo_b0.01@1e-4", "grpo_b0.1@1e-4")                              # the KL arms at the smaller lr
DESIGNS = dict(
    v1=dict(arms=ARMS, setting=SETTING, seeds=(0, 1, 2), out="experiments/14_logit_averaging/sweep.jsonl",
            budget=None, warm_start={}, eval_every=10, order="seed"),
    v2=dict(arms=V2_ARMS, setting=SETTING | dict(steps=200), seeds=(0, 1, 2, 3, 4),
            out="experiments/14_logit_averaging/sweep_v2.jsonl", budget=7, warm_start=dict(untagged=0.2), eval_every=20,
            order="arm"))

def parse_arm(arm: str) -> tuple:
    "'grpo_b0.01@1e-4' -> ('grpo', 0.01, 1e-4); 'la_a0.5' -> ('la', 0.5, None); 'sft' -> ('sft', None, lr or None)."
    name, _, lr = arm.partition("@")
    lr = float(lr) if lr else None
    if name == "sft": return "sft", None, lr
    if name.startswith("grpo_b"): return "grpo", float(name[len("grpo_b"):]), lr
    if name.startswith("la_a"): return "la", float(name[len("la_a"):]), lr
    raise ValueError(f"unknown arm {arm!r}: sft, grpo_b<beta>[@lr] or la_a<alpha>[@lr]")

def config(seed, arm, reward, over, design):
    kind, value, lr = parse_arm(arm)
    if lr is not None and "lr" in over: raise ValueError(f"arm {arm} names its lr; leave lr out of --set")
    kw = dict(warm_start=None, model=str(format_warm_start(seed, **design["warm_start"])), task="arith_ans",
              task_kwargs=TESTBED_TASK["task_kwargs"], beta=value if kind == "grpo" else 0.0, eval_every=0, kl_every=0,
              progress=False, checkpoint_every=0, reward_funcs=["ans_strict"] if reward == "strict" else None,
              max_new_tokens=design["budget"])
    return recipe_config("testbed", seed=seed, **(kw | design["setting"] | ({} if lr is None else dict(lr=lr)) | over))

def tagged_share(completions) -> float:
    return sum(c.lstrip().startswith(ANS_OPEN) for c in completions) / len(completions)

def measure(tr, ref, a, step, budget):
    full = tr.task.max_new_tokens                                  # evaluated at the task's budget (not the rollouts')
    ev = format_eval(tr.policy, tr.tok, tr.task.test, limit=tr.cfg.eval_limit, max_new_tokens=full)
    prompts = list(tr.task.test["prompt"][:a.kl_prompts])
    d = drift_metrics(tr.policy, ref, tr.tok, prompts, n=a.kl_n, max_new_tokens=full, temperature=tr.cfg.temperature,
                      seed=step)
    row = dict(step=step, acc=float(ev["hits"].float().mean()), fmt=float(ev["fmt"].float().mean()), **d)
    if budget is not None:                                         # greedy is a prefix: cut it to the budget
        answers = list(tr.task.test["answer"][:len(ev["completions"])])
        cut = [tr.tok.decode(tr.tok(c, add_special_tokens=False)["input_ids"][:budget]) for c in ev["completions"]]
        row |= dict(tagged=tagged_share(ev["completions"]),
                    acc_budget=sum(tr.task.reward_fn(prompts=None, completions=cut, answer=answers)) / len(cut))
    return row, ev

def run(arm, seed, reward, over, a, design):
    cfg = config(seed, arm, reward, over, design)
    kind, value, _ = parse_arm(arm)
    t0 = time.process_time()
    tr = logit_averaging_trainer(cfg, value) if kind == "la" else Trainer.setup(cfg)
    ref = halves(tr.policy)[1] or tr.ref or copy.deepcopy(tr.policy).eval().requires_grad_(False)   # frozen SFT
    roll = {}
    def after_rewards(t, r):
        roll["fmt"] = sum(t.task.format_reward_fn(r.prompts, r.completions)) / len(r)
        roll["tagged"] = tagged_share(r.completions)
    tr.add_hook("after_rewards", after_rewards)
    tr.add_hook("after_step", lambda t, m: m | dict(rollout_format=roll["fmt"], rollout_tagged=roll["tagged"]))
    row, ev = measure(tr, ref, a, 0, design["budget"])
    curve, hist, train_cpu = [row], [], 0.0
    steps = 0 if kind == "sft" else cfg.steps
    keep = ("step", "reward_mean", "accuracy", "rollout_format", "rollout_tagged", "entropy", "zero_std_frac",
            "completion_length")
    for _ in range(steps):
        t1 = time.process_time()
        m = tr.train_step()
        train_cpu += time.process_time() - t1
        hist.append({k: round(v, 5) if isinstance(v, float) else v for k, v in m.items() if k in keep})
        if tr.step % a.eval_every == 0 or tr.step == steps:
            row, ev = measure(tr, ref, a, tr.step, design["budget"])
            curve.append(row)
    bits = lambda t: "".join("1" if h else "0" for h in t.tolist())
    return dict(arm=arm, seed=seed, reward=reward, overrides=over, design=a.design, budget=design["budget"],
                warm_start=design["warm_start"], setting={k: getattr(cfg, k) for k in SETTING} | dict(beta=cfg.beta),
                alpha=value if kind == "la" else None, curve=curve, history=hist, hits=bits(ev["hits"]),
                fmt=bits(ev["fmt"]), examples=ev["completions"][:8], kl_prompts=a.kl_prompts, kl_n=a.kl_n,
                cpu_seconds=round(time.process_time() - t0, 1), train_cpu_seconds=round(train_cpu, 1))

def cells(a) -> list:
    "The runs in order: v1 seed-major (every arm of a seed before the next seed), v2 arm-major (headline arms first)."
    if DESIGNS[a.design]["order"] == "seed": return [(r, arm, s) for r in a.rewards for s in a.seeds for arm in a.arms]
    return [(r, arm, s) for r in a.rewards for arm in a.arms for s in a.seeds]

def main():
    design_name = sys_design()
    design = DESIGNS[design_name]
    ap = sweep_parser(design["out"], "steps=40", seeds=design["seeds"])
    ap.add_argument("--design", choices=sorted(DESIGNS), default="v1")
    ap.add_argument("--arms", nargs="+", default=list(design["arms"]))
    ap.add_argument("--rewards", nargs="+", default=["correct"],
                    help="correct (correctness only) and/or strict (correctness x format)")
    ap.add_argument("--budget", type=int, default=design["budget"], help="rollout max_new_tokens (None: the task's)")
    ap.add_argument("--eval_every", type=int, default=design["eval_every"])
    ap.add_argument("--kl_prompts", type=int, default=50)
    ap.add_argument("--kl_n", type=int, default=4)
    a, over = parse_sweep_args(ap)
    design = design | dict(budget=a.budget)
    def summary(rec):
        first, last = rec["curve"][0], rec["curve"][-1]
        extra = "" if rec["budget"] is None else (f", acc@{rec['budget']} {first['acc_budget']:.3f} -> "
                                                  f"{last['acc_budget']:.3f}, tagged {first['tagged']:.3f} -> "
                                                  f"{last['tagged']:.3f}")
        return (f"{rec['reward']} {rec['arm']} seed {rec['seed']}: acc {first['acc']:.3f} -> {last['acc']:.3f}, "
                f"fmt {first['fmt']:.3f} -> {last['fmt']:.3f}{extra}, KL {last['kl']:.3f}, "
                f"gap {last['logit_gap']:.2f}, {rec['cpu_seconds']} CPU s")
    run_pending(a.out, ("reward", "arm", "seed"), cells(a),
                lambda reward, arm, seed: run(arm, seed, reward, over, a, design), summary, overrides=over)

def sys_design() -> str:
    "The --design on the command line (read before the parser, whose defaults depend on it)."
    argv = _sys.argv[1:]
    for i, x in enumerate(argv):
        if x == "--design" and i + 1 < len(argv): return argv[i + 1]
        if x.startswith("--design="): return x.split("=", 1)[1]
    return "v1"

if __name__ == "__main__": main()
