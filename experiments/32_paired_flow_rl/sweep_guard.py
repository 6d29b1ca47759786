"""Chapter 32's reader-size runs for "(P2) again, with a reward that is not hacked": FDFO, Flow-GRPO and the true-gradient
ablation (copy_grad: d r/d x0 copied to every sampling step; chain_grad: backpropagated through the sampler), 100 epochs of
64 images, on the chapter's bold reward (class_prob + 0.5 ink) and on the guarded reward (class_prob + 0.2 ink + 1 r_art,
r_art from chapter 33's rlref.flow.hacking, detector seed 0). Base flow, classifier, judge and evaluation noise are the
chapter's (built the same way as its cells, at reader size); every 10 epochs the generator is scored by the chapter's
evaluate (reward, ink, class_prob, judge_acc), the guarded reward, and hacking_eval (r_art, nn_dist, p_real, diversity, ...).

One JSON line per (reward, method, seed) in experiments/32_paired_flow_rl/sweep_guard.jsonl; rows already there are skipped (resumable).

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/32_paired_flow_rl/sweep_guard.py --seeds 0 1 2
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import copy, json, sys, time
from dataclasses import asdict
from pathlib import Path
import torch
from sweep_runner import run_pending, sweep_parser, parse_sweep_args, rounded_history, start_end
from rlref.flow.model import pretrained_flow, sample_flow
from rlref.flow.rewards import train_classifier, class_prob_reward, ink_reward
from rlref.flow.rl import FlowRLConfig, train_flow_rl
from rlref.flow.hacking import hacking_kit, hacking_eval

def main():
    ap = sweep_parser("experiments/32_paired_flow_rl/sweep_guard.jsonl", "grad_step=0.03")
    ap.add_argument("--rewards", nargs="+", default=["guarded", "bold"])
    ap.add_argument("--methods", nargs="+", default=["fdfo", "flow_grpo", "copy_grad", "chain_grad"])
    ap.add_argument("--epochs", type=int, default=100)
    a, over = parse_sweep_args(ap)
    kit = hacking_kit(0)                                    # its classifier is chapter 32's clf (same split, seed, steps)
    X, y, perm = kit["X"], kit["y"], kit["perm"]
    clf, art = kit["classifier"], kit["art_model"]
    judge = train_classifier(X[perm[450:]], y[perm[450:]], steps=2000, hidden=256, seed=1)
    base = pretrained_flow(steps=4000, cache_dir="nbs/_artifacts")
    bold = lambda x, l: class_prob_reward(clf)(x, l) + 0.5 * ink_reward(x)
    guarded = lambda x, l: class_prob_reward(clf)(x, l) + 0.2 * ink_reward(x) + (1 - torch.sigmoid(art(x)))
    rewards = {"bold": bold, "guarded": guarded}
    eval_labels = torch.arange(10).repeat(20); eval_noise = torch.randn(200, 64, generator=torch.Generator().manual_seed(123))
    held = hacking_eval(kit)
    @torch.no_grad()
    def evaluate(model):
        x = sample_flow(model, eval_labels, noise=eval_noise)
        return dict(reward=bold(x, eval_labels).mean().item(), ink=ink_reward(x).mean().item(),
                    class_prob=class_prob_reward(clf)(x, eval_labels).mean().item(), judge_acc=(judge(x).argmax(1) == eval_labels).float().mean().item(),
                    guarded=guarded(x, eval_labels).mean().item()) | held(model)
    def run_one(reward, method, seed):
        cfg = FlowRLConfig(**(dict(method=method, epochs=a.epochs, seed=seed, eval_every=10) | over))
        t0 = time.process_time()
        hist = train_flow_rl(copy.deepcopy(base), rewards[reward], cfg, evaluate)
        return dict(reward=reward, method=method, seed=seed, epochs=a.epochs, overrides=over, config=asdict(cfg),
                    history=rounded_history(hist), cpu_seconds=round(time.process_time() - t0, 1))
    summary = lambda rec: (f"{rec['reward']} {rec['method']} seed {rec['seed']}: {start_end(rec['history'], ('reward', 'guarded', 'nn_dist', 'p_real', 'diversity'))}, "
                           f"{rec['cpu_seconds']} CPU s")
    run_pending(a.out, ("reward", "method", "seed"), [(r, m, s) for r in a.rewards for m in a.methods for s in a.seeds], run_one, summary,
                overrides=over, epochs=a.epochs)

if __name__ == "__main__": main()
