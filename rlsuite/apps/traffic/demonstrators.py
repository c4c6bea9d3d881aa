"""Hand-written signal programs as demonstrators for a learning policy's env.

RESCO's greedy (max-wave) and max-pressure run inside the signals env (its ``program``
option), so they have no ``act(obs)`` of their own. A :class:`SignalDemonstrator` is
handed the learning env before its first episode (``attach``) and answers each
observation with the phase its program would choose from the env's state
(:meth:`~rlsuite.apps.traffic.envs.signals_resco.RescoSignalsEnv.program_actions`): its
episodes are the program's own, step for step, with the learning env's observations and
rewards. That makes them demonstrations for the ``replay`` and ``apex`` plans (R2D3)::

    rlsuite train --plan replay --env rlsuite/SignalsShared-v0 --env-set network=cologne1 \\
        --set demonstrations=rlsuite.apps.traffic.demonstrators:maxpressure:8

Recording (:func:`rlsuite.platform.demo_sources.record`) runs ``rlsuite/SignalsShared-v0``,
whose lights share one policy and one replay buffer: a one-light map (cologne1,
ingolstadt1) as one scalar env, a network of several lights (cologne8) as the vector env of
its lights, each light's steps an episode of their own. :class:`SignalDemonstrator` also
answers for every light of the multi-agent env.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PROGRAMS = ("greedy", "maxpressure")
"""The signal programs that can demonstrate (the others, fixed and actuated, are SUMO's)."""


def signals_env(env: Any) -> Any:
    """The :class:`~rlsuite.apps.traffic.envs.signals_resco.RescoSignalsEnv` under ``env``
    (itself, the vector env of its lights or the one-light scalar env), else None."""
    from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv

    env = getattr(env, "unwrapped", env)
    for inner in (env, getattr(env, "env", None), getattr(getattr(env, "_vec", None), "env", None)):
        if isinstance(inner, RescoSignalsEnv):
            return inner
    return None


class SignalDemonstrator:
    """A signal program (``greedy`` or ``maxpressure``) answering for the lights of a
    learning env it is attached to; an observation dict gets a dict of phases, a
    one-light observation a phase, a stack of lights' observations an array of phases."""

    def __init__(self, program: str):
        if program not in PROGRAMS:
            raise ValueError(f"a signal demonstrator runs one of {PROGRAMS}, not {program!r}")
        self.program = program
        self.name = program
        self.env: Any = None

    def attach(self, env: Any) -> None:
        """Read the phases from ``env``'s simulation; refuses an env without traffic lights."""
        found = signals_env(env)
        if found is None:
            raise ValueError(
                f"demonstrator {self.program} switches RESCO's traffic lights; "
                f"{type(getattr(env, 'unwrapped', env)).__name__} has none"
            )
        self.env = found

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any) -> Any:
        if self.env is None:
            raise RuntimeError(f"demonstrator {self.program}: attach(env) before act(obs)")
        phases = self.env.program_actions(self.program)
        if isinstance(obs, dict):
            return {a: phases[a] for a in obs}
        lights = [x.id for x in self.env.lights]
        if np.ndim(obs) == 1:
            return phases[lights[0]]
        return np.array([phases[x] for x in lights], dtype=np.int64)


def greedy() -> SignalDemonstrator:
    """RESCO's greedy (max-wave) as a demonstrator (``...demonstrators:greedy:N``)."""
    return SignalDemonstrator("greedy")


def maxpressure() -> SignalDemonstrator:
    """Max-pressure as a demonstrator (``...demonstrators:maxpressure:N``)."""
    return SignalDemonstrator("maxpressure")
