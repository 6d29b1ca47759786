"""What a run saves for use (out/policy: save_pretrained, adapter-only under LoRA) and what a LoRA checkpoint holds
(the adapters and their optimizer state, with the base identified by its SHA-256)."""
import json
from pathlib import Path
import pytest, torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from peft import PeftModel
from rlref.core import read_jsonl
from rlref.rundirs import RunDirError
from rlref.rollout import completion_logprobs
from rlref.trainer import Trainer
from rlref.train.config import recipe_config
from rlref.train.checkpoints import find_checkpoint, RunInterrupted, read_manifest

from rlref.warm_start import warm_start_dir

# the shipped 50% warm start (testbed recipe): from a random model every group has equal rewards and nothing would move
TINY = dict(steps=3, prompts_per_step=4, samples_per_prompt=4, eval_every=3, eval_limit=10, kl_every=0, checkpoint_every=2, progress=False)
RECIPES = {"full": dict(), "lora": dict(lora_r=8, lr=2e-3)}
def cfg(kind, **kw): return recipe_config("testbed", **TINY | RECIPES[kind] | kw)
BASE = warm_start_dir("arith2", 0)

def rows(out): return [{k: v for k, v in r.items() if k != "seconds"} for r in read_jsonl(Path(out) / "metrics.jsonl")]

@pytest.mark.parametrize("recipe", ["full", "lora"])
def test_the_saved_policy_reloads_with_the_trainers_log_probs(tmp_path, recipe):
    tr = Trainer.setup(cfg(recipe, out=str(tmp_path / "run"))); tr.fit()
    pol = tmp_path / "run" / "policy"
    info = json.loads((pol / "rlref.json").read_text())
    assert info["step"] == 3 and info["adapter_only"] == (recipe == "lora")
    if recipe == "lora":                                          # peft's adapter only, on the run's own base
        assert not (pol / "model.safetensors").exists() and (pol / "adapter_model.safetensors").is_file()
        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(BASE), pol)
    else: model = AutoModelForCausalLM.from_pretrained(pol)
    r = tr.rollout()
    mine, theirs = tr.logprobs(tr.policy, r), completion_logprobs(model, r, tr.cfg.temperature)[0]
    assert torch.equal(mine, theirs), (mine - theirs).abs().max()
    init = AutoModelForCausalLM.from_pretrained(BASE)       # and it is the trained policy, not the warm start
    assert not torch.equal(completion_logprobs(init, r, tr.cfg.temperature)[0], mine)

def test_lora_checkpoints_hold_the_adapters_only_and_resume_exactly(tmp_path):
    ref, cut = tmp_path / "ref", tmp_path / "cut"
    Trainer.setup(cfg("lora", out=str(ref))).fit()
    tr = Trainer.setup(cfg("lora", out=str(cut)))
    def halt(t, m):
        if t.step == 3: raise KeyboardInterrupt
    tr.add_hook("after_step", halt)
    with pytest.raises(RunInterrupted): tr.fit()
    man = find_checkpoint(cut)
    stored = load_file(man.with_suffix(".safetensors"))
    frozen = tr._frozen_names()
    base_bytes = sum(v.numel() * v.element_size() for k, v in tr.policy.state_dict().items() if k in frozen)
    adapter_bytes = sum(v.numel() * v.element_size() for k, v in tr.policy.state_dict().items() if k not in frozen)
    size = man.with_suffix(".safetensors").stat().st_size
    print(f"LoRA checkpoint tensors: {size} bytes; the frozen base: {base_bytes} bytes; adapters: {adapter_bytes} bytes")
    assert not any("base_layer" in k or "embed_tokens" in k for k in stored)     # no base weight
    assert size < 3 * adapter_bytes + 64 * 1024 < base_bytes                      # adapters + 2 Adam moments + generator states
    assert len(read_manifest(man)["base_sha256"]) == 64
    Trainer.setup(cfg("lora", out=str(cut)), resume=True).fit(resume=True)
    assert rows(cut) == rows(ref)
    a, b = load_file(cut / "policy" / "adapter_model.safetensors"), load_file(ref / "policy" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

def test_a_lora_checkpoint_refuses_another_base(tmp_path):
    out = tmp_path / "run"
    Trainer.setup(cfg("lora", out=str(out), steps=2)).fit()
    tr = Trainer.setup(cfg("lora", out=str(out), steps=2), resume=True)
    with torch.no_grad(): next(p for n, p in tr.policy.named_parameters() if "base_layer" in n).mul_(1.001)
    with pytest.raises(RunDirError, match="was trained on other base weights"): tr.load_checkpoint(find_checkpoint(out))
    full = Trainer.setup(cfg("full"))               # a full fine-tuning policy cannot take an adapter checkpoint
    with pytest.raises(RunDirError, match="holds only the trainable tensors"): full.load_checkpoint(find_checkpoint(out))
