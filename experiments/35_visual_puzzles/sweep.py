"""Chapter 35's reader-size runs: SSL-R1 (self-supervised visual puzzles as verifiable rewards) with the tiny VLM of rlref.vision.

For each seed: a fresh TinyVLM warmed up on the ink tasks (rlref.vision.warm_start_vlm, built once per seed into a temporary folder), then GRPO
(G = 8, no KL) on one arm's puzzles (rlref.vision.ARMS: rotation, jigsaw exact / partial credit, inpainting, similarity, all four, and a control: rotation with its
training answers shuffled across puzzles, which tells whether a probe gain needs a reward that carries information).
The arm `warmup` trains nothing: it records the linear probe of a random-init encoder and of the warm-up encoder.
One JSON line per (arm, seed) in experiments/35_visual_puzzles/sweep.jsonl; rows already there are skipped (resumable; arm-major, so an interrupted
sweep leaves whole arms). Each RL row holds the per-step metrics, the held-out per-puzzle greedy accuracy every --eval_every steps,
the linear-probe accuracy of the frozen encoder after RL, and a gallery of the first held-out puzzles' answers.

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/35_visual_puzzles/sweep.py --seeds 0 1 2

The seed sweep behind tests/test_vision.py's rotation check (lr 3e-4, 150 steps; about 3 CPU minutes for five seeds):

    cd <repo> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/35_visual_puzzles/sweep.py --arms rotation \
        --seeds 0 1 2 3 4 --set lr=3e-4,steps=150 --out experiments/35_visual_puzzles/seed_sweep_rotation.jsonl
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import json, sys, time, tempfile
from pathlib import Path
from sweep_runner import run_pending, sweep_parser, parse_sweep_args
from rlref.models import save_policy, load_policy
from rlref.vision import ARMS, warm_start_vlm, run_arm, linear_probe, load_digit_pictures, make_tiny_vlm, make_vlm_tokenizer, puzzle_completions

CACHE = Path(tempfile.gettempdir()) / "rlref_ssl_r1_warm"

def warm(seed, steps):
    "This seed's warm-up VLM, built once per machine and then loaded (the build is deterministic: same weights either way)."
    d = CACHE / f"seed{seed}_steps{steps}"
    if not (d / "config.json").is_file():
        model, tok = warm_start_vlm(seed, steps=steps)
        save_policy(model, tok, d)
    return load_policy(d)

ORDER = ["warmup", "rotation", "jigsaw_partial", "jigsaw_exact", "multi", "inpainting", "similarity", "rotation_shuffled"]

def main():
    ap = sweep_parser("experiments/35_visual_puzzles/sweep.jsonl", "steps=100")
    ap.add_argument("--arms", nargs="+", default=ORDER)
    ap.add_argument("--warmup_steps", type=int, default=150)
    ap.add_argument("--eval_every", type=int, default=25)
    ap.add_argument("--gallery", type=int, default=8)
    a, over = parse_sweep_args(ap)
    train, test = load_digit_pictures("train"), load_digit_pictures("test")
    def run_one(arm, seed):
        t0 = time.process_time()
        model, tok = warm(seed, a.warmup_steps)
        rec = dict(arm=arm, seed=seed, overrides=over, warmup_steps=a.warmup_steps)
        if arm == "warmup":
            rec |= dict(probe_random=linear_probe(make_tiny_vlm(make_vlm_tokenizer(), seed=seed), train, test), probe=linear_probe(model, train, test))
        else:
            res = run_arm(model, tok, arm, seed, eval_every=a.eval_every, **over)
            ds = res["trainer"].task.test.select(range(a.gallery))
            rec |= dict(history=res["history"], curve=res["curve"], probe=linear_probe(model, train, test),
                        gallery=[dict(row=i, puzzle=p, answer=ans, completion=c) for i, (p, ans, c) in
                                 enumerate(zip(ds["puzzle"], ds["answer"], puzzle_completions(model, tok, ds)))])
        return rec | dict(cpu_seconds=round(time.process_time() - t0, 1))
    summary = lambda rec: f"{rec['arm']} {rec['seed']} {dict((k, v) for k, v in rec.items() if k in ('probe', 'probe_random', 'cpu_seconds'))} {rec.get('curve', [{}])[-1]}"
    run_pending(a.out, ("arm", "seed"), [(arm, s) for arm in ORDER if arm in a.arms for s in a.seeds], run_one, summary,
                overrides=over, warmup_steps=a.warmup_steps)

if __name__ == "__main__":
    main()
