"""Seed sweep for chapter 31's test-size checks that depend on trained models (EVIDENCE.md rule 7).

Per seed s the classifier (chapter seed 0 -> s), the judge (1 -> s + 1), the pretrained flow (0 -> s) and the sampling generator
(0 -> s) change; the train/test split of the digits stays the chapter's (a fixed permutation, the same on every machine). Margins:

- clf (cell 6): test accuracy > 0.9;  judge (cell 8): held-out accuracy > 0.9
- reward (cell 11): mean p(true class) on 8 test digits > 0.8, mean p(wrong class) < 0.1
- gen_acc (cell 13): classifier accuracy on 500 generated digits > 0.5
- hack (cell 21): ink ascent: ink > start + 0.2 and judge accuracy < start - 0.3; class_prob + 0.5 ink: ink > start + 0.2, class_prob > 0.5
- smooth (cell 23): smoothness ascent raises smoothness and lowers judge accuracy

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/31_image_rewards/seed_sweep.py --seeds 0 1 2 3 4 5 6 7
"""
import sys as _sys, pathlib as _pathlib
_sys.path.insert(0, str(_pathlib.Path(__file__).resolve().parents[2] / "tools"))  # the shared sweep runner
import argparse, json, time
import torch
from rlref.flow.model import load_digits_tensors, pretrained_flow, sample_flow
from rlref.flow.rewards import train_classifier, class_prob_reward, ink_reward, smoothness_reward, combine_image_rewards, register_reward

def ascend(reward_fn, images, labels, steps=200, lr=0.05):
    x = images.clone().requires_grad_(True); opt = torch.optim.Adam([x], lr=lr)
    for _ in range(steps):
        loss = -reward_fn(x, labels).mean(); opt.zero_grad(); loss.backward(); opt.step()
        with torch.no_grad(): x.clamp_(-1, 1)
    return x.detach()

def run(s):
    X, y = load_digits_tensors()
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    tr, te = perm[: 3 * len(X) // 4], perm[3 * len(X) // 4:]
    clf = train_classifier(X[tr], y[tr], steps=400, seed=s)
    with torch.no_grad(): test_acc = (clf(X[te]).argmax(1) == y[te]).float().mean().item()
    jtr = te.tolist() + tr[: len(tr) // 2].tolist()
    judge = train_classifier(X[jtr], y[jtr], steps=400, hidden=256, seed=s + 1)
    with torch.no_grad(): judge_acc = (judge(X[tr[len(tr) // 2:]]).argmax(1) == y[tr[len(tr) // 2:]]).float().mean().item()
    r_prob = class_prob_reward(clf)
    with torch.no_grad(): p_true, p_wrong = r_prob(X[te[:8]], y[te[:8]]).mean().item(), r_prob(X[te[:8]], (y[te[:8]] + 1) % 10).mean().item()
    gen = pretrained_flow(steps=300, seed=s)
    lab = torch.arange(10).repeat(50)
    with torch.no_grad():
        imgs = sample_flow(gen, lab, generator=torch.Generator().manual_seed(s))
        gen_acc = (clf(imgs).argmax(1) == lab).float().mean().item()
    register_reward("class_prob", r_prob, overwrite=True)
    bold = combine_image_rewards({"class_prob": 1.0, "ink": 0.5})
    start, lab100 = imgs[:100], lab[:100]
    def report(im):
        with torch.no_grad():
            return dict(ink=ink_reward(im).mean().item(), class_prob=r_prob(im, lab100).mean().item(), judge_acc=(judge(im).argmax(1) == lab100).float().mean().item(),
                        smooth=smoothness_reward(im).mean().item())
    st, ink_only, bold_h = report(start), report(ascend(combine_image_rewards({"ink": 1.0}), start, lab100)), report(ascend(bold, start, lab100))
    sm = report(ascend(combine_image_rewards({"smoothness": 1.0}), start, lab100))
    return dict(test_acc=test_acc, margin_clf=test_acc - 0.9, judge_acc=judge_acc, margin_judge=judge_acc - 0.9,
                p_true=p_true, p_wrong=p_wrong, margin_reward=min(p_true - 0.8, 0.1 - p_wrong), gen_acc=gen_acc, margin_gen_acc=gen_acc - 0.5,
                start=st, ink_only=ink_only, bold=bold_h, smooth=sm,
                margin_hack_ink=min(ink_only["ink"] - st["ink"] - 0.2, st["judge_acc"] - 0.3 - ink_only["judge_acc"]),
                margin_hack_bold=min(bold_h["ink"] - st["ink"] - 0.2, bold_h["class_prob"] - 0.5),
                margin_smooth=min(sm["smooth"] - st["smooth"], st["judge_acc"] - sm["judge_acc"]))

if __name__ == "__main__":
    from sweep_runner import sweep_main
    sweep_main(dict(all=run), "experiments/31_image_rewards/seed_sweep.jsonl", seeds=[0, 1, 2, 3, 4, 5, 6, 7])
