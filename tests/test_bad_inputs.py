"Bad inputs to tasks, rewards, the SFT warm start, the replay buffer and the entropy controllers: one clear error naming the problem, no hang, no silent truncation."
import json, math
import numpy as np
import pytest, torch
from datasets import Dataset
from rlref.tasks import make_task, make_arithmetic, make_countdown, make_recall, TASKS
from rlref.rewards import safe_eval, parse_int, correctness_reward, countdown_reward, recall_reward
from rlref.evaluation import exact_match
from rlref.models import make_char_tokenizer, make_tiny_llama, save_policy, load_policy, sft_warm_start

# ---------------------------------------------------------------- tasks
@pytest.mark.parametrize("name,kw,msg", [
    ("arith", dict(n_train=0), "n_train must be an integer >= 1, got 0"),
    ("arith", dict(n_test=0), "n_test must be an integer >= 1, got 0"),
    ("arith", dict(n_train=-5), "n_train must be an integer >= 1, got -5"),
    ("arith", dict(n_train=2.5), "n_train must be an integer >= 1, got 2.5"),
    ("countdown", dict(n_train=0), "n_train must be an integer >= 1"),
    ("recall", dict(n_test=-1), "n_test must be an integer >= 1"),
    ("arith", dict(foo=1), "unknown argument(s) ['foo'] for task 'arith'"),
    ("recall", dict(n_digits=2), "unknown argument(s) ['n_digits'] for task 'recall'"),
    ("countdown", dict(n_pairs=3), "unknown argument(s) ['n_pairs'] for task 'countdown'"),
    ("arith", dict(ops="++"), "each operator once, got '++'"),
    ("arith", dict(ops=""), "ops must be a non-empty subset"),
    ("arith", dict(n_digits=1, n_train=150, n_test=20), "asked for 170 problems (n_train + n_test) but only 100 distinct ones exist"),
    ("arith", dict(n_digits=1, n_train=80, n_test=20), "asked for 80 training problems but only 62 remain once the 20 test problems and their commuted twins are held out"),
    ("arith", dict(n_digits=1, ops="*", n_train=1, n_test=56), "asked for 56 test problems but only 55 exist up to commuting the operands"),
    ("recall", dict(n_pairs=1), "asked for 5500 problems (n_train + n_test) but only 520 distinct prompts exist"),
    ("countdown", dict(n_numbers=2, max_number=1, n_train=40, n_test=5), "asked for 45 distinct countdown problems but found only 2"),
    ("countdown", dict(max_target=0), "max_target must be >= 1"),
])
def test_make_task_refuses(name, kw, msg):
    with pytest.raises(ValueError) as e: make_task(name, **kw)
    assert msg in str(e.value)

def test_recall_at_the_distinct_limit_still_builds():
    tr, te = make_recall(n_pairs=1, n_train=500, n_test=20)     # 520 prompts exist: all of them
    assert len(set(tr["prompt"]) | set(te["prompt"])) == 520

@pytest.mark.parametrize("expr", ["(" * 10000 + "1" + ")" * 10000, "-" * 100000 + "1", "-" * 5000 + "1", "9" * 400 + "/1",
                                  "(" * 300 + "1" + ")" * 300])
def test_safe_eval_never_raises_on_deep_input(expr):
    assert safe_eval(expr, max_len=10**6) == (None, []) or safe_eval(expr, max_len=10**6)[0] == 1

def test_safe_eval_deep_input_is_invalid():
    assert safe_eval("-" * 100000 + "1", max_len=10**6) == (None, [])
    assert safe_eval("(" * 10000 + "1" + ")" * 10000, max_len=10**6) == (None, [])

@pytest.mark.parametrize("text", [None, 3, b"12", "", "  "])
def test_parse_int_never_raises(text): assert parse_int(text) is None

def test_countdown_format_reward_takes_none():
    t = make_task("countdown", n_train=20, n_test=5)
    assert t.format_reward_fn(None, [None, "1+2", "x"]) == [0.0, 1.0, 0.0]

@pytest.mark.parametrize("fn,cols,msg", [
    (countdown_reward, dict(target=[3], numbers=[[1, 2], [1, 2]]), "2 completions but 1 values in column 'target'"),
    (countdown_reward, dict(target=[3, 3], numbers=[[1, 2]]), "2 completions but 1 values in column 'numbers'"),
    (recall_reward, dict(answer=["1"]), "2 completions but 1 values in column 'answer'"),
    (correctness_reward, dict(answer=["3", "4", "5"]), "2 completions but 3 values in column 'answer'"),
])
def test_rewards_refuse_length_mismatch(fn, cols, msg):
    with pytest.raises(ValueError) as e: fn(None, ["1+2", "3"], **cols)
    assert msg in str(e.value)

@pytest.fixture(scope="module")
def tiny():
    tok = make_char_tokenizer()
    return make_tiny_llama(tok, max_len=64), tok

@pytest.mark.parametrize("ds,limit", [(Dataset.from_dict(dict(prompt=[], answer=[])), None),
                                      (Dataset.from_list([dict(prompt="1+1=", answer="2")]), 0)])
def test_exact_match_refuses_empty(tiny, ds, limit):
    with pytest.raises(ValueError, match="exact_match needs at least one row"): exact_match(*tiny, ds, limit=limit)

# ---------------------------------------------------------------- models: SFT warm start, load_policy
TOY = [dict(prompt="1+2=", answer="3"), dict(prompt="2+2=", answer="4")]

@pytest.mark.parametrize("kw,msg", [
    (dict(steps=0), "steps must be an integer >= 1, got 0"),
    (dict(batch_size=0), "batch_size must be an integer >= 1, got 0"),
    (dict(batch_size=-1), "batch_size must be an integer >= 1, got -1"),
    (dict(lr=float("inf")), "lr must be finite and > 0, got inf"),
    (dict(lr=float("nan")), "lr must be finite and > 0, got nan"),
    (dict(lr=0.0), "lr must be finite and > 0, got 0.0"),
    (dict(eval_every=0), "eval_every must be an integer >= 1, got 0"),
    (dict(log_every=0), "log_every must be an integer >= 1, got 0"),
    (dict(warmup=-1), "warmup must be >= 0"),
    (dict(stop_at=0.5), "stop_at needs an eval_fn"),
    (dict(stop_at=float("nan"), eval_fn=lambda m: dict(exact_match=1.0)), "stop_at must be a finite number, got nan"),
])
def test_sft_refuses_bad_settings(tiny, kw, msg):
    model, tok = tiny
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError) as e: sft_warm_start(model, tok, TOY, progress=False, **kw)
    assert msg in str(e.value)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))     # refused before any step

def test_sft_refuses_empty_dataset(tiny):
    with pytest.raises(ValueError, match="the SFT dataset is empty"): sft_warm_start(*tiny, [], steps=1, progress=False)

def test_sft_warmup_zero_and_numpy_sizes_are_allowed():
    tok = make_char_tokenizer(); m = make_tiny_llama(tok, max_len=32)
    assert sft_warm_start(m, tok, TOY, steps=2, batch_size=2, warmup=0, progress=False)[-1]["step"] == 2
    assert sft_warm_start(m, tok, TOY, steps=np.int64(2), batch_size=np.int64(2), lr=np.float32(1e-3), progress=False)[-1]["step"] == 2

def test_sft_stops_on_the_named_metric_not_dict_order():
    tok = make_char_tokenizer(); m = make_tiny_llama(tok, max_len=32)
    # the first metric (loss_eval) never reaches 0.5; the named one (exact_match) does at the first evaluation
    ev = lambda model: dict(loss_eval=0.0, exact_match=1.0)
    h = sft_warm_start(m, tok, TOY, steps=6, batch_size=2, eval_every=2, log_every=100, stop_at=0.5, progress=False, eval_fn=ev)
    assert h[-1]["step"] == 2
    h = sft_warm_start(m, tok, TOY, steps=6, batch_size=2, eval_every=2, log_every=100, stop_at=0.5, progress=False,
                       eval_fn=ev, stop_metric="loss_eval")
    assert h[-1]["step"] == 6

def test_sft_stop_metric_missing_is_named():
    tok = make_char_tokenizer(); m = make_tiny_llama(tok, max_len=32)
    with pytest.raises(ValueError, match=r"stop_at reads eval_fn's 'exact_match', but eval_fn returned \['acc'\]"):
        sft_warm_start(m, tok, TOY, steps=2, batch_size=2, eval_every=1, stop_at=0.5, progress=False, eval_fn=lambda model: dict(acc=1.0))

@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_load_policy_damaged_weights_names_the_file(tiny, tmp_path, damage):
    save_policy(*tiny, tmp_path)
    f = tmp_path / "model.safetensors"; b = f.read_bytes()
    f.write_bytes({"truncate": b[: len(b) // 2], "garbage": b"\x00" * 100, "empty": b""}[damage])
    with pytest.raises(ValueError) as e: load_policy(tmp_path, device="cpu")
    assert f"cannot load {str(f)!r}: the file is damaged or incomplete" in str(e.value) and "\n" not in str(e.value)

def test_load_policy_damaged_tokenizer_names_the_file(tiny, tmp_path):
    save_policy(*tiny, tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ValueError, match="tokenizer.json'. the file is damaged"): load_policy(tmp_path, device="cpu")

def test_load_policy_missing_dir_and_missing_weights(tiny, tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory with a config.json"): load_policy(tmp_path / "nope", device="cpu")
    save_policy(*tiny, tmp_path); (tmp_path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no file named model.safetensors"): load_policy(tmp_path, device="cpu")

def test_load_policy_round_trip_unchanged(tmp_path):
    tok = make_char_tokenizer(); model = make_tiny_llama(tok, max_len=32)
    save_policy(model, tok, tmp_path)
    m2, _ = load_policy(tmp_path, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), m2.state_dict().values()))

# ---------------------------------------------------------------- replay
from rlref.methods.replay import SumTree, ReplayBuffer, ReplayConfig, Replay

def _filled(mode="fresh", n=12, cap=16, seed=0):
    rng = np.random.default_rng(seed)
    b = ReplayBuffer(cap, mode, alpha=0.7, tau=3.0 if mode == "fresh" else None)
    for step in range(3):
        b.refresh(step)
        b.add([dict(ids=torch.arange(i + 1), reward=float(i), tag=f"s{step}") for i in range(n // 3)], rng.gamma(1.0, size=n // 3))
    return b

@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
@pytest.mark.parametrize("how", ["update_priorities", "add"])
def test_rejected_priority_leaves_the_buffer_intact(bad, how):
    b = _filled()
    before = dict(base=b.base.copy(), tree=b.tree.tree.copy()); draws = b.sample(32, np.random.default_rng(1))[0]
    with pytest.raises(ValueError, match="priorities must be finite and >= 0"):
        if how == "add": b.add(["x", "y"], [1.0, bad])          # the good first priority must not be written either
        else: b.update_priorities(np.array([0, 1]), np.array([0.5, bad]))
    assert len(b) == 12 and np.array_equal(b.base, before["base"]) and np.array_equal(b.tree.tree, before["tree"])
    b.refresh(b.step)                                           # a full refresh recomputes from the untouched base
    np.testing.assert_array_equal(b.sample(32, np.random.default_rng(1))[0], draws)

@pytest.mark.parametrize("call,msg", [
    (lambda t: t.update(0, float("nan")), "priorities must be finite and >= 0"),
    (lambda t: t.update(0, -0.5), "priorities must be finite and >= 0"),
    (lambda t: t.update(7, 1.0), "leaf index must be in [0, 5)"),
    (lambda t: t.set_all(np.array([1., 2, np.nan, 1, 1])), "priorities must be finite and >= 0"),
    (lambda t: t.set_all(np.array([1., -2, 1, 1, 1])), "priorities must be finite and >= 0"),
    (lambda t: t.set_all(np.ones(3)), "need 5 leaf values"),
])
def test_sum_tree_refuses_before_writing(call, msg):
    t = SumTree(5); t.set_all(np.array([1., 2, 3, 4, 0])); before = t.tree.copy()
    with pytest.raises(ValueError) as e: call(t)
    assert msg in str(e.value) and np.array_equal(t.tree, before)

def test_update_priorities_refuses_bad_slots():
    b = _filled()
    with pytest.raises(ValueError, match="slots must be in"): b.update_priorities(np.array([0, 14]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="2 slots but 1 priorities"): b.update_priorities(np.array([0, 1]), np.array([1.0]))

@pytest.mark.parametrize("kw,msg", [
    (dict(capacity=0), "capacity must be >= 1"), (dict(capacity=2.5), "capacity must be an integer"),
    (dict(alpha=1.5), "alpha must be in [0, 1]"), (dict(beta0=-0.1), "beta0 must be in [0, 1]"),
    (dict(tau=0.0), "tau must be > 0"), (dict(tau=None), "tau must be > 0"), (dict(priority="loss"), "unknown priority kind"),
    (dict(mode="lifo"), "unknown replay mode"), (dict(updates=-1), "updates must be >= 0, got -1"),
    (dict(batch_size=0), "batch_size must be >= 1, got 0"), (dict(beta_steps=-3), "beta_steps must be >= 0"),
    (dict(min_size=4096), "min_size must be in [0, capacity=2048]"), (dict(seed=-1), "seed must be >= 0"),
])
def test_replay_config_refuses(kw, msg):
    with pytest.raises(ValueError) as e: ReplayConfig(**kw)
    assert msg in str(e.value)

def _walk_plain(x):
    "Only dicts with str keys, lists, tensors, numpy arrays and JSON scalars."
    if isinstance(x, dict): assert all(isinstance(k, str) for k in x); [_walk_plain(v) for v in x.values()]
    elif isinstance(x, list): [_walk_plain(v) for v in x]
    else: assert x is None or isinstance(x, (torch.Tensor, np.ndarray, str, bool, int, float)), type(x)

@pytest.mark.parametrize("mode", ["fresh", "per", "uniform"])
def test_replay_buffer_state_round_trip(mode):
    b = _filled(mode)
    d = b.state_dict(); _walk_plain(d)
    c = ReplayBuffer(16, mode, alpha=0.1, tau=9.0 if mode == "fresh" else None)
    c.load_state_dict(d)
    b.add([dict(ids=torch.arange(2), reward=0.0, tag="after")], [5.0])         # the saved dict is a copy, not a view
    b2 = _filled(mode); c.add([dict(ids=torch.arange(2), reward=0.0, tag="after")], [5.0]); b2.add([dict(ids=torch.arange(2), reward=0.0, tag="after")], [5.0])
    for buf in (c, b2): buf.refresh(5)
    s1, w1, a1 = c.sample(64, np.random.default_rng(3), beta=0.5); s2, w2, a2 = b2.sample(64, np.random.default_rng(3), beta=0.5)
    np.testing.assert_array_equal(s1, s2); np.testing.assert_array_equal(w1, w2); np.testing.assert_array_equal(a1, a2)
    assert all(torch.equal(c.items[i]["ids"], b2.items[i]["ids"]) for i in range(len(c)))

def test_replay_buffer_state_refuses_other_shapes_and_objects():
    b = _filled()
    with pytest.raises(ValueError, match="replay state has capacity=16 but this buffer has capacity=8"): ReplayBuffer(8).load_state_dict(b.state_dict())
    with pytest.raises(ValueError, match="replay state has mode='fresh' but this buffer has mode='per'"): ReplayBuffer(16, "per").load_state_dict(b.state_dict())
    b.add([object()], [1.0])
    with pytest.raises(TypeError, match="cannot save a object in a replay item without pickling"): b.state_dict()

class _HookHost:
    "The part of a Trainer that Replay touches when it attaches."
    def __init__(self): self.hooks = []
    def add_hook(self, event, fn): self.hooks.append((event, fn)); return self

def test_replay_hook_state_round_trip_gives_identical_sampling():
    cfg = ReplayConfig(capacity=16, min_size=1, batch_size=8, seed=3)
    a = Replay(_HookHost(), cfg)
    a.buffer.load_state_dict(_filled().state_dict())
    a.rng.random(5)                                              # advance the generator: the state is not the seed's
    a.age_log.append((2, np.array([0, 1, 2])))
    host = _HookHost(); b = Replay(host, cfg)
    assert all(getattr(fn, "__self__", None) is b for _, fn in host.hooks)   # the protocol: the trainer finds b through fn.__self__
    d = a.state_dict(); _walk_plain(d); json.dumps(d["rng"])
    b.load_state_dict(d)
    np.testing.assert_array_equal(a.buffer.sample(16, a.rng)[0], b.buffer.sample(16, b.rng)[0])
    assert a.rng.random() == b.rng.random() and b.age_log[0][0] == 2
    none = Replay(_HookHost(), ReplayConfig(mode="none", seed=3))
    with pytest.raises(ValueError, match="disagree on mode 'none'"): none.load_state_dict(d)

# ---------------------------------------------------------------- entropy controllers
from rlref.methods.entropy import Entrocraft, ClipCov, KLCov

@pytest.mark.parametrize("make,msg", [
    (lambda: Entrocraft(low=(0.8, 0.4), high=(0.7, 0.5)), "band is empty"),
    (lambda: Entrocraft(low=(0.6, 0.6), high=(0.7, 0.5)), "band is empty"),
    (lambda: Entrocraft(low=(-0.1, 0.4)), "low must be a pair (start, end) of finite entropies >= 0"),
    (lambda: Entrocraft(high=(float("nan"), 0.5)), "high must be a pair (start, end) of finite entropies >= 0"),
    (lambda: Entrocraft(low=(0.5,)), "low must be a pair"),
    (lambda: Entrocraft(total=0), "total must be an integer >= 1"),
    (lambda: Entrocraft(schedule="step"), "unknown schedule"),
    (lambda: ClipCov(ratio=-0.1), "ratio must be in [0, 1], got -0.1"),
    (lambda: ClipCov(ratio=2.0), "ratio must be in [0, 1], got 2.0"),
    (lambda: ClipCov(cov_low=5.0, cov_high=1.0), "need cov_low < cov_high"),
    (lambda: ClipCov(cov_low=float("nan")), "need cov_low < cov_high"),
    (lambda: KLCov(ratio=1.5), "ratio must be in [0, 1]"),
    (lambda: KLCov(coef=-1.0), "coef must be finite and >= 0, got -1.0"),
    (lambda: KLCov(coef=float("inf")), "coef must be finite and >= 0"),
])
def test_entropy_controllers_refuse(make, msg):
    with pytest.raises(ValueError) as e: make()
    assert msg in str(e.value)
