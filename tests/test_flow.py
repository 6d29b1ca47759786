"Image chapters (30-32): seeded RL runs repeat exactly, and bad input fails with a clear message."
import copy
import pytest
import torch
from rlref.flow.model import FlowMLP, load_digits_tensors, train_flow, sample_flow, churn_step, sde_step_stats, time_grid
from rlref.flow.rewards import ink_reward, combine_image_rewards, register_reward
from rlref.flow.rl import FlowRLConfig, train_flow_rl, fdfo_directions, image_group_advantages

@pytest.fixture(scope="module")
def gen():
    torch.manual_seed(0); X, y = load_digits_tensors(); m = FlowMLP(hidden=64)
    train_flow(m, X, y, steps=20, batch_size=64); return m

@pytest.mark.parametrize("method", ["fdfo", "flow_grpo"])
def test_seeded_rl_run_repeats_exactly(gen, method):
    cfg = FlowRLConfig(method=method, images_per_epoch=16, epochs=2, n_steps=4, eval_every=1)
    runs = []
    for _ in range(2):
        m = copy.deepcopy(gen); train_flow_rl(m, ink_reward, cfg); runs.append(torch.cat([p.flatten() for p in m.parameters()]))
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], torch.cat([p.flatten() for p in gen.parameters()]))

def test_bad_input_messages(gen):
    with pytest.raises(ValueError, match="unknown method"): train_flow_rl(copy.deepcopy(gen), ink_reward, FlowRLConfig(method="ddpo"))
    with pytest.raises(ValueError, match="not a multiple"): train_flow_rl(copy.deepcopy(gen), ink_reward, FlowRLConfig(method="fdfo", images_per_epoch=15))
    with pytest.raises(ValueError, match="gamma must be"): churn_step(torch.zeros(1, 64), 0.0, 0.5, 0.4, gamma=-0.1)
    with pytest.raises(ValueError, match="need s < t"): sde_step_stats(torch.zeros(1, 64), torch.zeros(1, 64), 0.4, 0.5)
    with pytest.raises(ValueError, match="n_steps"): time_grid(0)
    with pytest.raises(ValueError, match="same shapes"): fdfo_directions(torch.zeros(2, 64), torch.zeros(3, 64), torch.zeros(2), torch.zeros(3))
    with pytest.raises(ValueError, match="do not split"): image_group_advantages(torch.ones(7), 4)
    with pytest.raises(ValueError, match="unknown reward"): combine_image_rewards({"nope": 1.0})
    with pytest.raises(ValueError, match="expected"):
        from rlref.flow.model import plot_digits; plot_digits(torch.zeros(3, 10))

def test_sampler_without_churn_is_deterministic(gen):
    z = torch.randn(4, 64); lab = torch.arange(4)
    assert torch.equal(sample_flow(gen, lab, noise=z, n_steps=5), sample_flow(gen, lab, noise=z, n_steps=5))

def test_plot_digits_from_the_package():
    import matplotlib; matplotlib.use("Agg")
    from rlref.flow.model import plot_digits
    ax = plot_digits(torch.zeros(12, 64), ncols=5, title="t")
    assert ax.get_title() == "t"
