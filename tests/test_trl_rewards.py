"""What a TRL user brings: trl's own reward functions and a conversational dataset (message-list prompts) through rlref's Trainer,
called with TRL's keyword arguments (completion_ids, trainer_state, the dataset's columns); chat_template_kwargs; LoRA's options."""
import pytest, torch
from datasets import Dataset
from trl.rewards import think_format_reward, get_repetition_penalty_reward
from rlref.models import CHATML_TEMPLATE, make_chat_tokenizer, make_tiny_qwen2
from rlref.tasks import make_dataset_task, make_task
from rlref.trainer import Trainer
from rlref.train.config import TrainConfig
from rlref.train.rewards import completion_id_lists

THINK = CHATML_TEMPLATE.replace("'<|im_start|>assistant\\n' }}",   # Qwen3's switch: an empty thinking block when enable_thinking is false
                                "'<|im_start|>assistant\\n' }}{% if enable_thinking is defined and not enable_thinking %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}")
SMALL = dict(task="dataset", steps=2, prompts_per_step=4, samples_per_prompt=4, max_new_tokens=6, sft_steps=0, eval_every=0, kl_every=0,
             checkpoint_every=0, progress=False, lr=1e-2, temperature=1.0)

def _conversational(n=24) -> Dataset:
    "Sums as one user turn each (TRL's conversational format), an answer and an extra column the rewards get."
    return Dataset.from_list([dict(prompt=[dict(role="user", content=f"{i}+{i % 7}=")], answer=str(i + i % 7), level=i % 3) for i in range(n)])

def test_trl_reward_functions_run_unchanged_on_a_conversational_dataset():
    tok = make_chat_tokenizer(THINK)
    model = make_tiny_qwen2(tok, "tiny", max_len=128, seed=0)
    task = make_dataset_task(_conversational(), test_size=4, max_new_tokens=6)
    calls = []
    def first_id_parity(completions, completion_ids, trainer_state, level, **kwargs):   # a user's TRL-style reward, recording what it got
        calls.append(dict(completions=completions, completion_ids=completion_ids, step=trainer_state.global_step,
                          max_steps=trainer_state.max_steps, level=level, prompts=kwargs["prompts"]))
        return [float(ids[0] % 2) for ids in completion_ids]                          # varies from row to row: a signal
    rollouts = []
    cfg = TrainConfig(**SMALL, reward_funcs=[think_format_reward, get_repetition_penalty_reward(ngram_size=2), first_id_parity],
                      chat_template_kwargs=dict(enable_thinking=False))
    t = Trainer(cfg, model, tok, task).add_hook("after_rewards", lambda tr, r: rollouts.append(r))
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    t.fit()
    assert [c["step"] for c in calls] == [0, 1] and {c["max_steps"] for c in calls} == {2}   # trainer_state: RL steps done, of cfg.steps
    for c, r in zip(calls, rollouts):
        assert c["completion_ids"] == completion_id_lists(r)                           # the sampled ids, unpadded, up to the stop token
        for comp, ids, row in zip(c["completions"], c["completion_ids"], r.completion_ids.tolist()):
            assert comp == [dict(role="assistant", content=tok.decode(ids, skip_special_tokens=True))]   # a conversational completion
            assert ids == row[:len(ids)] and len(ids) >= 1
        assert all(isinstance(p, list) and p[0]["role"] == "user" for p in c["prompts"])  # the prompts as message lists
        assert c["level"] == [int(p[0]["content"].split("+")[0]) % 3 for p in c["prompts"]]   # the dataset's extra column, row by row
        text = tok.decode(r.prompt_ids[0][r.prompt_mask[0].bool()])
        assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")             # chat_template_kwargs reached the template
    names = ["think_format_reward", "repetition_penalty_reward", "first_id_parity"]
    for h in t.history:
        assert all(f"rewards/{n}/mean" in h for n in names)
        assert h["reward_mean"] == pytest.approx(sum(h[f"rewards/{n}/mean"] for n in names), abs=1e-5)
    rep = get_repetition_penalty_reward(ngram_size=2)
    for c, r in zip(calls, rollouts):                                                   # each function's column: its rewards on these rows
        assert r.extras["reward_funcs"][:, 0].tolist() == think_format_reward(completions=c["completions"])
        assert r.extras["reward_funcs"][:, 1].tolist() == pytest.approx(rep(completion_ids=c["completion_ids"]))
        assert r.extras["reward_funcs"][:, 2].std() > 0                                # a signal to learn from
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())     # an update happened

def test_a_fresh_tiny_model_refuses_message_list_prompts(tmp_path):
    _conversational().save_to_disk(str(tmp_path / "conv"))
    cfg = TrainConfig(**(SMALL | dict(task_kwargs=dict(path=str(tmp_path / "conv"), test_size=4))))
    with pytest.raises(ValueError, match="prompts are message lists, which need a chat template"): Trainer.setup(cfg)

def test_lora_options_reach_the_peft_config():
    base = dict(task="arith", task_kwargs=dict(n_train=50, n_test=8), sft_steps=0, steps=1, eval_limit=4, progress=False, checkpoint_every=0)
    adapted = lambda t: {n.split(".")[-1] for n, m in t.policy.named_modules() if hasattr(m, "lora_A")}
    lin = Trainer.setup(TrainConfig(**base, lora_r=4, lora_alpha=8, lora_dropout=0.05, lora_target_modules="all-linear"))
    pc = lin.policy.peft_config["default"]
    assert (pc.r, pc.lora_alpha, pc.lora_dropout) == (4, 8, 0.05)
    assert adapted(lin) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}   # the MLP's projections too
    assert TrainConfig(lora_r=4, lora_target_modules=["all-linear"]).lora_target_modules == "all-linear"   # the command line's one-value list
    default = Trainer.setup(TrainConfig(**base, lora_r=8)).policy.peft_config["default"]   # the defaults: today's adapters
    assert (default.r, default.lora_alpha, default.lora_dropout, default.target_modules) == (8, 16, 0.0, {"q_proj", "k_proj", "v_proj", "o_proj"})

@pytest.mark.parametrize("kwargs, msg", [
    (dict(lora_r=4, lora_alpha=0), "lora_alpha must be a finite number > 0"),
    (dict(lora_r=4, lora_dropout=1.0), r"lora_dropout must be in \[0, 1\)"),
    (dict(lora_r=4, lora_target_modules=[]), "lora_target_modules must be a non-empty list of module names"),
    (dict(lora_r=4, lora_target_modules="q_proj"), "or 'all-linear'"),
    (dict(lora_alpha=32), "lora_alpha is set, but lora_r = 0"),
    (dict(lora_target_modules="all-linear"), "lora_target_modules is set, but lora_r = 0"),
    (dict(chat_template_kwargs=["enable_thinking"]), "chat_template_kwargs must be a dict"),
    (dict(chat_template_kwargs=dict(add_generation_prompt=False)), "cannot set 'add_generation_prompt'"),
    (dict(chat_template_kwargs=dict(enable_thinking=False), chat_template=False), "chat_template=False sends prompts raw"),
    (dict(chat_template_kwargs=dict(x=object())), "chat_template_kwargs must be JSON-serialisable"),
])
def test_config_refuses_bad_lora_and_template_settings(kwargs, msg):
    with pytest.raises(ValueError, match=msg): TrainConfig(**kwargs)

def test_text_prompts_keep_their_rewards_and_calls():
    "rlref's own rewards get TRL's keywords too and score text completions as before (a message-list completion the same)."
    t = make_task("arith", n_train=20, n_test=4)
    conv = [[dict(role="assistant", content=c)] for c in ["46", "47"]]
    kw = dict(prompts=["12+34="] * 2, completion_ids=[[1], [2]], trainer_state=None)
    assert t.reward_fn(completions=["46", "47"], answer=["46"] * 2, **kw) == t.reward_fn(completions=conv, answer=["46"] * 2, **kw) == [1.0, 0.0]
