"""The sync plan's learner: RLlib's PPO update in less time, the same finite-gradient
check, and the decoupled clip of the overlapped plan (rlsuite.platform.learners)."""

from __future__ import annotations

import copy
import logging
import math

import pytest
import torch

from rlsuite.platform import learners, optimizers
from tests._plans import ppo


def _learner(**plan_values):
    """A built learner of the sync plan, in this process (no Ray actors): CartPole in 4 envs,
    batches of 400 in minibatches of 100, 2 epochs, unless ``plan_values`` say otherwise."""
    import gymnasium as gym

    plan = ppo("CartPole-v1", 400, 100, 2, num_envs_per_env_runner=4, seed=0)
    config = optimizers.to_rllib(plan.replace(**plan_values))
    return config, config.build_learner(env=gym.make("CartPole-v1"))


def _episodes(config, learner, steps: int = 400):
    """Episodes sampled in this process with the learner's current weights."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    runner = SingleAgentEnvRunner(config=config)
    try:
        runner.set_state({"rl_module": learner.module.get_state(inference_only=True)})
        return runner.sample(num_timesteps=steps, random_actions=False)
    finally:
        runner.stop()


def _weights(learner) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in learner.module["default_policy"].state_dict().items()}


def test_all_finite_sees_a_nan_or_inf_in_any_tensor():
    assert learners.all_finite([torch.ones(3, 4), torch.zeros(5)])
    assert learners.all_finite([])
    for bad in (math.nan, math.inf, -math.inf):
        t = torch.ones(5)
        t[3] = bad
        assert not learners.all_finite([torch.ones(2), t]), bad
    # finite values whose norm overflows read as not finite: the learner then tests the
    # tensors one by one, so this costs time, never a missed NaN
    assert not learners.all_finite([torch.full((4,), 3e38)])
    # tensors of several dtypes take get_total_norm's path
    t = torch.ones(5, dtype=torch.float64)
    assert learners.all_finite([torch.ones(2), t])
    t[0] = math.nan
    assert not learners.all_finite([torch.ones(2), t])


def test_sync_plan_builds_the_platform_learner_and_keeps_the_check_on():
    cfg = optimizers.to_rllib(optimizers.make_plan("sync", env="CartPole-v1"))
    assert cfg.learner_class is learners.SyncPPOLearner
    assert cfg.learner_config_dict == {
        learners.CHECK_FINITE: True,
        learners.DECOUPLED_CLIP: False,
    }
    # RLlib's per-tensor test is replaced by the learner's one test, not dropped
    assert cfg.torch_skip_nan_gradients is True
    over = optimizers.to_rllib(
        optimizers.make_plan("sync", env="CartPole-v1", overlap=True, check_finite_gradients=False)
    )
    assert over.learner_config_dict == {
        learners.CHECK_FINITE: False,
        learners.DECOUPLED_CLIP: True,
    }
    # the other RLlib plans keep RLlib's own learner and its check
    other = optimizers.to_rllib(optimizers.make_plan("async", env="CartPole-v1"))
    assert other.learner_class is not learners.SyncPPOLearner
    assert other.torch_skip_nan_gradients is False


def test_the_learner_steps_fused_adam_and_matches_rllibs_stock_learner():
    """One update from the same weights on the same episodes: the platform's learner and
    RLlib's PPOTorchLearner end at the same weights (fused Adam differs in rounding)."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    config, ours = _learner()
    optim = next(iter(ours._optimizer_parameters))
    assert type(ours) is learners.SyncPPOLearner and optim.defaults["fused"] is True
    stock_config = copy.deepcopy(config)
    stock_config.learners(learner_class=PPOTorchLearner, learner_config_dict={})
    stock_config.framework(torch_skip_nan_gradients=False)
    import gymnasium as gym

    stock = stock_config.build_learner(env=gym.make("CartPole-v1"))
    assert type(stock) is PPOTorchLearner
    stock.module["default_policy"].load_state_dict(ours.module["default_policy"].state_dict())
    before = _weights(ours)
    episodes = _episodes(config, ours)
    for learner in (ours, stock):
        learner.update(
            episodes=copy.deepcopy(episodes),
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 400},
            num_epochs=2,
            minibatch_size=100,
            shuffle_batch_per_epoch=False,
        )
    a, b = _weights(ours), _weights(stock)
    assert any(not torch.equal(before[k], a[k]) for k in a)  # the update moved the weights
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-6)


def _flat(d, prefix=()):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, prefix + (k,))
        else:
            yield prefix + (k,), v


@pytest.mark.parametrize(
    ("minibatch_size", "plan_values"),
    [(96, {}), (500, {}), (96, {"kl_coeff": 0.0, "entropy_coeff": 0.01})],
)
def test_the_lean_minibatch_loop_gives_rllibs_loop_weights_and_metrics(minibatch_size, plan_values):
    """From the same weights, episodes and numpy generator state, the lean loop and RLlib's
    own loop (the same learner with ``lean_update`` off) train the same minibatches in the
    same order (shuffled each epoch; 96 does not divide the batch, 500 exceeds it) to the
    same weights, bit for bit (the lean loop's metric-free PPO loss on all but the last
    minibatch included, with and without the KL term), and report the same metrics: steps
    trained, batch sizes, weights seq-no, off-policyness, losses."""
    import gymnasium as gym
    import numpy as np
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    config, lean = _learner(**plan_values)
    rllib_config = copy.deepcopy(config)
    rllib_config.learners(
        learner_config_dict={**config.learner_config_dict, learners.LEAN_UPDATE: False}
    )
    rllib_loop = rllib_config.build_learner(env=gym.make("CartPole-v1"))
    rllib_loop.module["default_policy"].load_state_dict(lean.module["default_policy"].state_dict())
    before = _weights(lean)
    episodes = _episodes(config, lean)
    results, calls = [], []
    for learner in (lean, rllib_loop):
        learner._update = _counting(learner._update, calls, learner)
        np.random.seed(7)
        results.append(
            learner.update(
                episodes=copy.deepcopy(episodes),
                timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: 400},
                num_epochs=3,
                minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=True,
            )
        )
    n_lean, n_rllib = calls.count(lean), calls.count(rllib_loop)
    # the train batch holds the 400 steps and one bootstrap step per episode
    assert n_lean == n_rllib >= -(-3 * 400 // minibatch_size)
    a, b = _weights(lean), _weights(rllib_loop)
    assert any(not torch.equal(before[k], a[k]) for k in a)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)
    ours, theirs = (
        {k: v.peek() if hasattr(v, "peek") else v for k, v in _flat(r)} for r in results
    )
    assert ours.keys() == theirs.keys()
    timings = ("throughput", "timer")  # wall-clock readings differ run to run
    compared = [k for k in ours if not any(t in "/".join(map(str, k)) for t in timings)]
    assert any(k[-1] == "num_module_steps_trained" for k in compared)
    assert any(k[-1] == "diff_num_grad_updates_vs_sampler_policy" for k in compared)
    for k in compared:
        assert float(ours[k]) == pytest.approx(float(theirs[k]), rel=1e-4, abs=1e-6), k


def _counting(update, calls, owner):
    def counted(batch, **kwargs):
        calls.append(owner)
        return update(batch, **kwargs)

    return counted


def test_a_non_finite_gradient_is_repaired_as_rllib_repairs_it(caplog):
    _, learner = _learner(grad_clip=None)
    refs = list(learner._params)
    grads = {ref: torch.ones_like(learner._params[ref]) for ref in refs}
    bad = grads[refs[1]].view(-1)
    bad[0], bad[1] = math.nan, math.inf
    with caplog.at_level(logging.WARNING, logger="rlsuite.platform.learners"):
        out = learner.postprocess_gradients(dict(grads))
    assert "nan/inf" in caplog.text and "default_policy." in caplog.text  # names the parameter
    assert all(torch.isfinite(g).all() for g in out.values())
    fixed = out[refs[1]].view(-1)
    assert fixed[0] == 0 and fixed[1] == torch.finfo(fixed.dtype).max  # nan_to_num
    assert torch.equal(fixed[2:], torch.ones_like(fixed[2:]))
    assert all(out[r] is grads[r] for r in refs if r is not refs[1])

    _, unchecked = _learner(grad_clip=None, check_finite_gradients=False)
    refs = list(unchecked._params)
    grads = {ref: torch.ones_like(unchecked._params[ref]) for ref in refs}
    grads[refs[0]].view(-1)[0] = math.nan
    out = unchecked.postprocess_gradients(dict(grads))
    assert torch.isnan(out[refs[0]]).any()  # check_finite_gradients=false: passed on as is


def test_decoupled_clip_centres_the_clip_on_the_learner_and_weights_by_its_ratio():
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    _, learner = _learner()
    module = learner.module["default_policy"]
    obs = torch.randn(6, 4)
    actions = torch.tensor([0, 1, 0, 1, 0, 1])
    with torch.no_grad():
        logits = module.forward_train({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
        logp = module.get_train_action_dist_cls().from_logits(logits).logp(actions)
    # the behaviour policy gave the first three actions half the learner's probability
    behaviour = logp - torch.tensor([math.log(2)] * 3 + [0.0] * 3)
    batch = {
        "default_policy": {
            Columns.OBS: obs,
            Columns.ACTIONS: actions,
            Columns.ACTION_LOGP: behaviour,
            Columns.ACTION_DIST_INPUTS: torch.zeros_like(logits),
            Postprocessing.ADVANTAGES: torch.tensor([1.0, -1.0, 0.5, 1.0, -1.0, 3.0]),
            Columns.LOSS_MASK: torch.tensor([True, True, False, True, True, True]),
        }
    }
    out = learners.DecoupledClip()(rl_module=learner.module, batch=batch, episodes=[])
    b = out["default_policy"]
    torch.testing.assert_close(
        b[Postprocessing.ADVANTAGES], torch.tensor([2.0, -2.0, 0.5, 1.0, -1.0, 3.0])
    )  # weight 2, 2, then 1 on the padded step, 1 where the policies agree
    torch.testing.assert_close(b[Columns.ACTION_LOGP], logp)
    torch.testing.assert_close(b[Columns.ACTION_DIST_INPUTS], logits)


@pytest.mark.parametrize("overlap", [False, True])
def test_only_the_overlapped_plan_adds_the_decoupled_clip(overlap):
    _, learner = _learner(overlap=overlap, num_env_runners=1)
    pieces = [type(p) for p in learner._learner_connector.connectors]
    assert (learners.DecoupledClip in pieces) is overlap
    if overlap:  # after GAE, which computes and standardises the advantages it scales
        names = [p.__name__ for p in pieces]
        assert names.index("GeneralAdvantageEstimation") < names.index("DecoupledClip")
