"""The sync plan's learner: RLlib's PPO update in less time, the same finite-gradient
check, and the decoupled clip of the overlapped plan (rlsuite.platform.learners)."""

from __future__ import annotations

import copy
import logging
import math

import pytest
import torch

from rlsuite.platform import learners, optimizers

SMALL = dict(
    env="CartPole-v1",
    num_env_runners=0,
    num_envs_per_env_runner=4,
    train_batch_size=400,
    minibatch_size=100,
    num_epochs=2,
    seed=0,
)


def _learner(**plan_values):
    """A built learner of the sync plan, in this process (no Ray actors)."""
    import gymnasium as gym

    config = optimizers.to_rllib(optimizers.make_plan("sync", **{**SMALL, **plan_values}))
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
