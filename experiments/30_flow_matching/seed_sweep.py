"""Seed sweep for chapter 30's test-size checks that depend on the trained flow model (EVIDENCE.md rule 7).

Per seed s: the model's weights (seed_everything(s)), its 300 training steps (train_flow seed s) and every sampling generator
(the chapter's fixed seeds k become 100 s + k) change; the logistic-regression judge is deterministic. One JSON line per seed with
each check's quantity and margin:

- loss (cell 19): smooth[-1] < 0.8 smooth[0]; margin 0.8 smooth[0] - smooth[-1]
- gen_acc (cell 28): judge accuracy of 500 ODE samples > 0.5
- churn (cell 30): pair distance grows with gamma over gammas[1:5] (margin: smallest ratio d[i+1]/d[i] - 1) and d[1] < 0.2 independent
- sde_acc (cell 34): judge accuracy of 500 SDE samples (a = 0.7) > 0.5
- n_steps (cell 39): acc(50 Euler steps) >= acc(5) - 0.05; class changes the image more than nothing does

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 python experiments/30_flow_matching/seed_sweep.py --seeds 0 1 2 3 4 5 6 7
"""
import argparse, json, time
import numpy as np, torch
from sklearn.linear_model import LogisticRegression
from rlref.core import seed_everything
from rlref.flow.model import load_digits_tensors, FlowMLP, train_flow, sample_flow, sample_sde

def run(s, X, y, judge):
    G = lambda k: torch.Generator().manual_seed(100 * s + k)
    seed_everything(s); m = FlowMLP(); losses = train_flow(m, X, y, steps=300, seed=s)
    smooth = np.convolve(losses, np.ones(50) / 50, mode="valid")
    big = torch.arange(10).repeat(50)
    acc = lambda imgs: float((judge.predict(imgs.clamp(-1, 1).numpy()) == big.numpy()).mean())
    gen_acc = acc(sample_flow(m, big, generator=G(3)))
    gammas = [0.0, 1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3]
    noise = torch.randn(200, 64, generator=G(4)); lab = torch.arange(10).repeat(20)
    rms = lambda a, b: (a - b).pow(2).mean(1).sqrt().mean().item()
    def pair(gm):
        g = torch.Generator().manual_seed(100 * s); return rms(sample_flow(m, lab, gamma=gm, noise=noise, generator=g), sample_flow(m, lab, gamma=gm, noise=noise, generator=g))
    d = [pair(gm) for gm in gammas]
    indep = rms(sample_flow(m, lab, generator=G(1)), sample_flow(m, lab, generator=G(2)))
    sde_acc = acc(sample_sde(m, big, a=0.7, generator=G(6)))
    acc_at = lambda n: acc(sample_flow(m, big, n_steps=n, generator=G(8)))
    a50, a5 = acc_at(50), acc_at(5)
    z = torch.randn(1, 64, generator=G(9))
    three, seven = sample_flow(m, torch.tensor([3]), noise=z), sample_flow(m, torch.tensor([7]), noise=z)
    cls_diff, same_diff = (three - seven).abs().mean().item(), (three - sample_flow(m, torch.tensor([3]), noise=z)).abs().mean().item()
    return dict(loss_first=float(smooth[0]), loss_last=float(smooth[-1]), margin_loss=float(0.8 * smooth[0] - smooth[-1]),
                gen_acc=gen_acc, margin_gen_acc=gen_acc - 0.5, dists=[round(x, 5) for x in d], independent=round(indep, 4),
                margin_churn_growth=min(d2 / d1 - 1 for d1, d2 in zip(d[1:5], d[2:5])), margin_churn_local=0.2 * indep - d[1],
                sde_acc=sde_acc, margin_sde_acc=sde_acc - 0.5, acc50=a50, acc5=a5, margin_n_steps=a50 - (a5 - 0.05),
                margin_class=cls_diff - same_diff)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5, 6, 7]); ap.add_argument("--out", default="experiments/30_flow_matching/seed_sweep.jsonl")
    a = ap.parse_args()
    torch.set_num_threads(1)
    X, y = load_digits_tensors()
    judge = LogisticRegression(max_iter=2000).fit(X.numpy(), y.numpy())
    for s in a.seeds:
        t0 = time.time(); rec = dict(check="all", seed=s) | run(s, X, y, judge) | dict(seconds=round(time.time() - t0, 1))
        print(json.dumps(rec), flush=True)
        with open(a.out, "a") as f: f.write(json.dumps(rec) + "\n")
