"""The layer the traffic app's vector envs share: N copies of a scalar env in ONE SUMO
simulation, as a gymnasium ``VectorEnv``.

libsumo runs one simulation per process, so RLlib cannot put several scalar SUMO envs in
one env runner, and every env step then pays RLlib's per-step cost (a batch-1 forward
pass and the connector pipeline, ~1 ms) on its own. A vector env here holds N disjoint
copies of a network in one simulation, steps them with one ``simulationStep`` and lets
the runner batch its forward pass over the copies. :class:`CopiesVectorEnv` is what every
such env does the same way: its spaces, per-copy seeding, gymnasium's next-step autoreset,
the end of an episode (all copies share one clock), a SUMO failure, and closing.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space


def seed_copies(env: Any, seed: int | list[int] | None) -> None:
    """Give each copy of a vector env (``env.num_envs`` of them) its own generator in
    ``env.rngs``. ``seed``: an int (copy ``i`` gets ``seed + i``, as gymnasium's
    SyncVectorEnv seeds its copies) or one per copy; ``None`` keeps the generators (fresh,
    unseeded ones on the first reset)."""
    if seed is not None:
        seeds = [seed + i for i in range(env.num_envs)] if isinstance(seed, int) else list(seed)
        if len(seeds) != env.num_envs:
            raise ValueError(f"reset needs {env.num_envs} seeds, got {len(seeds)}")
        env.rngs = [seeding.np_random(int(s))[0] for s in seeds]
        env._seeded = True
    elif not env._seeded:
        env.rngs = [seeding.np_random(None)[0] for _ in range(env.num_envs)]
        env._seeded = True


def check_copies(num_envs: int, most: int, what: str) -> int:
    """``num_envs`` as an int, refused outside ``[1, most]`` (``what``: the copies, in words)."""
    if not 1 <= int(num_envs) <= most:
        raise ValueError(f"num_envs ({what} in one simulation) must be in [1, {most}]")
    return int(num_envs)


class CopiesVectorEnv(gym.vector.VectorEnv):
    """N copies of a scalar traffic env stepped by one SUMO simulation (see the module doc).

    A subclass calls :meth:`_init_copies` in its ``__init__`` and gives:

    - ``_start()``: a fresh simulation of every copy, its warm-up, and ``self._obs_last``
      set to the first observations;
    - ``_step(actions)``: one controlled step, returning gymnasium's five values (with
      :meth:`_ends` for the termination and :meth:`_failed` for a SUMO failure);
    - ``_sumo()`` when its simulation is not ``self.sim``.

    Seeding: ``reset(seed=s)`` gives copy ``i`` its own generator seeded ``s + i`` (or
    one seed per copy), from which it draws what its scalar env draws. Autoreset is
    gymnasium's next-step mode (what RLlib's runners expect): the step after the episodes
    end restarts the simulation and returns the first observations with zero reward.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    reason_key = "termination_reason"
    """The ``info`` key that says why copies terminated."""
    workdir_prefix = "rlsuite-traffic-vec-"
    """Prefix of the temporary folder of the episode files."""

    def _init_copies(
        self, num_envs: int, observation_space: gym.Space, action_space: gym.Space
    ) -> None:
        """The spaces of ``num_envs`` copies with these single spaces, and fresh state."""
        self.num_envs = num_envs
        self.single_observation_space = observation_space
        self.single_action_space = action_space
        self.observation_space = batch_space(observation_space, num_envs)
        self.action_space = batch_space(action_space, num_envs)
        self.rngs = [np.random.default_rng() for _ in range(num_envs)]
        self._seeded = False
        self._dir: str | None = None
        self._needs_reset = True
        self.closed = False
        self._obs_last = np.zeros(self.observation_space.shape, np.float32)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """Restart the simulation with every copy. ``seed``: an int (copy ``i`` gets
        ``seed + i``, as gymnasium's SyncVectorEnv seeds its copies) or one per copy."""
        seed_copies(self, seed)
        self._restart()
        return self._obs_last, self._reset_info()

    def step(self, actions):
        if self._needs_reset:  # next-step autoreset: the episodes ended last step
            self._restart()
            z = np.zeros(self.num_envs, dtype=bool)
            return self._obs_last, np.zeros(self.num_envs), z, z.copy(), {}
        obs, reward, terminated, truncated, info = self._step(actions)
        self._obs_last = obs
        return obs, reward, terminated, truncated, info

    def _restart(self) -> None:
        self.closed = False  # a reset after close() starts a new simulation
        self._start()
        self._needs_reset = False

    def _reset_info(self) -> dict[str, Any]:
        """``reset``'s info."""
        return {}

    def _ends(
        self, terminated: np.ndarray, horizon_reached: bool, reasons: list[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """``(terminated, truncated, info)`` of a step: all copies share one clock, so a
        copy's termination truncates the others at the same step, and all are truncated
        at the horizon. ``reasons``: per copy why it terminated ("" if it did not)."""
        truncated = np.full(self.num_envs, horizon_reached)
        info: dict[str, Any] = {}
        if terminated.any():
            truncated = ~terminated
            if reasons is not None:
                info[self.reason_key] = np.array(reasons)
        if terminated.any() or truncated.any():
            self._needs_reset = True
        return terminated, truncated, info

    def _failed(self, error: Exception) -> tuple[Any, ...]:
        """The step after SUMO failed: every copy terminated, the reason in ``info``."""
        self._sumo().close()
        self._needs_reset = True
        term = np.ones(self.num_envs, dtype=bool)
        info = {self.reason_key: np.array([f"SUMO failed: {error}"] * self.num_envs)}
        return self._obs_last, np.zeros(self.num_envs), term, ~term, info

    def _workdir(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix=self.workdir_prefix)
        return self._dir

    def _sumo(self) -> Any:
        """The one simulation of the copies (a :class:`~rlsuite.apps.traffic.kernel.Simulation`)."""
        return self.sim

    def close_extras(self, **kwargs: Any) -> None:
        """Stop SUMO and remove the episode files (``close()`` calls this once)."""
        if getattr(self, "sim", None) is not None:
            self.sim.close()
        if getattr(self, "_dir", None) is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
