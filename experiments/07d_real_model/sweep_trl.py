"""TRL's GRPOTrainer on SmolLM2-135M-Instruct with the settings of sweep.py (chapter 07d), one JSON line per seed, resumable.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice python experiments/07d_real_model/sweep_trl.py --seeds 0 1 2

Aligned with rlref's run: the same converted checkpoint, LoRA (r 16, alpha 16, q/k/v/o projections), 8 prompts x 4 samples
per step, 24 new tokens, temperature 0.7, lr 3e-4 constant without warm-up, dapo aggregation, group scaling, beta 0, one
optimizer step per rollout; prompts in the chat template (a conversational dataset, as TRL expects for a chat model); the
held-out curve is the same greedy evaluation of the same 100 problems, every 10 steps, its CPU time off the training clock.
"""
import sys as _sys, tempfile, time, warnings
from pathlib import Path
import torch

LOG = Path(__file__).resolve().parent / "sweep_trl.jsonl"
_sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import SETTING  # noqa: E402  (the rlref side's settings: one place)

def run(seed: int, steps: int) -> dict:
    from peft import LoraConfig
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer
    from rlref.core import seed_everything
    from rlref.models import load_policy
    from rlref.compare import trl_config, HeldOutCurve, eval_steps
    from rlref.real_model import smollm2_checkpoint, make_word_problems
    from rlref.rewards import answer_reward
    S = SETTING | dict(steps=steps)
    train, test = make_word_problems(n_train=400, n_test=100, seed=0)
    convo = train.map(lambda r: dict(prompt=[dict(role="user", content=r["prompt"])]))
    def correctness(prompts, completions, answer, **kw):                       # TRL hands a chat model's completions as messages
        return answer_reward(prompts, [c[-1]["content"] if isinstance(c, list) else c for c in completions], answer)
    curve = HeldOutCurve(test.select(range(S["eval_limit"])), answer_reward, S["max_new_tokens"], eval_steps(steps, S["eval_every"]))
    class Logs(TrainerCallback):
        def __init__(self): self.rows = []
        def on_train_begin(self, args, state, control, model=None, **kw): curve.start(); curve(model, tok, 0)
        def on_step_end(self, args, state, control, model=None, **kw): curve(model, tok, state.global_step)
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs: self.rows.append(dict(logs))
    seed_everything(seed)
    model, tok = load_policy(smollm2_checkpoint(), device="cpu", dtype="float32")
    lora = LoraConfig(r=S["lora_r"], lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                      task_type="CAUSAL_LM")
    w0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = trl_config(out, seed, steps, S["prompts_per_step"], S["samples_per_prompt"], S["lr"], S["temperature"],
                          S["max_new_tokens"])
        logs = Logs()
        tr = GRPOTrainer(model=model, reward_funcs=correctness, args=args, train_dataset=convo, processing_class=tok,
                         callbacks=[logs], peft_config=lora)
        for cb in (PrinterCallback, ProgressCallback): tr.remove_callback(cb)
        tr.train()
    pts = curve.points
    return dict(impl="trl", seed=seed, setting=S, curve=[(p["step"], p["exact_match"]) for p in pts],
                hits_start="".join(map(str, curve.first_hits)), hits_end="".join(map(str, curve.hits)),
                rewards=[float(r["reward"]) for r in logs.rows], train_cpu_seconds=round(pts[-1]["cpu_seconds"], 1),
                eval_cpu_seconds=round(curve.eval_cpu, 1), wall_seconds=round(time.perf_counter() - w0, 1),
                threads=torch.get_num_threads())

if __name__ == "__main__":
    from sweep_runner import run_pending, sweep_parser, parse_sweep_args   # on the path through sweep.py
    a, over = parse_sweep_args(sweep_parser(str(LOG), set_example="steps=20"))
    steps = over.pop("steps", SETTING["steps"])
    if over: raise SystemExit(f"sweep_trl.py takes only steps=N in --set (the other settings are sweep.py's); got {over}")
    run_pending(a.out, ("seed",), [(s,) for s in a.seeds], lambda s: run(s, steps),
                summary=lambda r: f"{r['seed']} {r['curve']} train cpu={r['train_cpu_seconds']}s", setting=SETTING | dict(steps=steps))
