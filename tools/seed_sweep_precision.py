"Seed sweep (init seeds 0-4) of tests/test_precision_memory.py: one lr-1e-6 step in four precisions vs fp32, and the bf16 sampler/learner gap."
import torch, copy, warnings
warnings.simplefilter("ignore")
from rlref.models import make_char_tokenizer, make_tiny_llama
from rlref.tasks import make_task
from rlref.trainer import Trainer, TrainConfig
tok = make_char_tokenizer(); task = make_task("arith", seed=0, n_train=200, n_test=20)
base = dict(sft_steps=0, prompts_per_step=8, samples_per_prompt=4, lr=1e-6, warmup_steps=0, progress=False, eval_every=0, kl_every=0)
for seed in range(5):
    model = make_tiny_llama(tok, "tiny", max_len=64, seed=seed)
    tr = Trainer(TrainConfig(**base, seed=seed), copy.deepcopy(model), tok, task)
    r = tr.rollout(); r.advantages = torch.randn(len(r), generator=torch.Generator().manual_seed(seed + 1))
    rel = {}
    for k, kw in dict(fp32=dict(dtype="float32", mixed_precision="no"), mixed=dict(dtype="bfloat16", mixed_precision="bf16"), fp16=dict(dtype="float16", mixed_precision="fp16"), pure=dict(dtype="bfloat16", mixed_precision="no")).items():
        t = Trainer(TrainConfig(**base, seed=seed, **kw), copy.deepcopy(model), tok, task)
        w0 = [p.detach().float().clone() for p in t.policy.parameters()]; t._update(r)
        d = torch.cat([(p.detach().float() - a).flatten() for a, p in zip(w0, t.policy.parameters())])
        rel[k] = ((d.norm() / torch.cat([a.flatten() for a in w0]).norm()).item(), (d != 0).float().mean().item())
    t = Trainer(TrainConfig(**base, seed=seed, mixed_precision="bf16"), copy.deepcopy(model), tok, task)
    rr = t.rollout(); g = (t.logprobs(t.policy, rr) - rr.sampler_logprobs)[rr.completion_mask.bool()].abs()
    print(seed, {k: round(v[0] / rel["fp32"][0], 5) for k, v in rel.items()}, "pure moved", round(rel["pure"][1], 4), "bf16 gap max/mean", round(g.max().item(), 4), round(g.mean().item(), 5))
