"""Several RESCO maps as one training env, for one policy shared by every light of every map.

RESCO trains one model per map. ``networks=cologne1,cologne3,...`` instead gives one
PettingZoo env whose episode ``k`` runs map ``networks[k % n]`` under RESCO's protocol
(each map's own window, decisions and delay; :class:`RescoSignalsEnv` does the work), so
a plan with ``policies="shared"`` learns one policy from all of them in turn. Every light
of every map observes and acts in the same padded spaces: the most incoming lanes and
green phases of any light of the listed maps (or ``pad_lanes`` / ``pad_phases``), with the
mask of a light's own phases in its observation (a plan's ``action_mask_offset`` =
:attr:`RescoMultiMapEnv.action_mask_offset`).

A light's agent id is ``<map>/<light>``, so lights of different maps never share an id.
To score the shared policy on one map, run that map alone with the same padding:
``RescoSignalsEnv(network=m, **RescoMultiMapEnv(...).single_map_options())``.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv

from rlsuite.apps.traffic import resco
from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv


def parse_networks(networks: Any) -> list[str]:
    """``"a,b"`` or ``["a", "b"]`` as a list of RESCO map names, each checked."""
    names = (
        [n.strip() for n in networks.split(",")] if isinstance(networks, str) else list(networks)
    )
    names = [n for n in names if n]
    if not names:
        raise ValueError("networks lists no map: give RESCO map names, e.g. cologne1,cologne3")
    for n in names:
        if n not in resco.MAPS:
            raise ValueError(
                f"unknown network {n!r} in networks: use RESCO's {', '.join(resco.MAPS)}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"networks lists a map twice: {','.join(names)}")
    return names


class RescoMultiMapEnv(ParallelEnv):
    """RESCO's signal control over several maps in turn (episode ``k``: map ``k % n``).

    Spaces, rewards and metrics are :class:`RescoSignalsEnv`'s, padded to the largest light
    of all the maps. ``episode_metrics()`` are the last finished episode's, with its
    ``network``; every option but ``network`` goes to each map's env (``episode_log`` lines
    carry the map too).
    """

    metadata = {"render_modes": [], "name": "rlsuite_signals_resco_multimap_v0"}

    def __init__(self, networks: Any, **kwargs: Any):
        if "network" in kwargs or "net_file" in kwargs:
            raise ValueError("give either networks=... (several maps) or network=..., not both")
        if kwargs.get("light_index"):
            raise ValueError(
                "light_index numbers the lights of one network: drop it with networks=... "
                "(several maps), or train one map with network=..."
            )
        self.networks = parse_networks(networks)
        self._options = {**kwargs, **padding(self.networks, **kwargs)}
        self.envs = [RescoSignalsEnv(network=m, **self._options) for m in self.networks]
        self.possible_agents = [
            f"{m}/{a}" for m, e in zip(self.networks, self.envs) for a in e.possible_agents
        ]
        self.agents: list[str] = []
        self._current = -1
        self._episodes = 0
        self._last: dict[str, float] = {}
        self.render_mode = None

    def single_map_options(self) -> dict[str, Any]:
        """The options that run one of the maps alone in this env's spaces."""
        return dict(self._options)

    @property
    def action_mask_offset(self) -> int:
        return self.envs[0].action_mask_offset

    @property
    def network(self) -> str:
        """The map of the current episode."""
        return self.networks[max(self._current, 0)]

    def observation_space(self, agent: str) -> spaces.Box:
        return self.envs[0].observation_space(agent)

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.envs[0].action_space(agent)

    def _tag(self, d: dict[str, Any]) -> dict[str, Any]:
        return {f"{self.network}/{a}": v for a, v in d.items()}

    def reset(self, seed: int | None = None, options: dict | None = None):
        if self._current >= 0:
            self._keep_metrics()  # ends the map's episode and its SUMO (one per process)
        self._current = self._episodes % len(self.networks)
        self._episodes += 1
        obs, infos = self.envs[self._current].reset(seed=seed, options=options)
        self.agents = [f"{self.network}/{a}" for a in self.envs[self._current].agents]
        return self._tag(obs), self._tag(infos)

    def step(self, actions: dict[str, Any]):
        prefix = f"{self.network}/"
        env = self.envs[self._current]
        out = env.step({a[len(prefix) :]: v for a, v in actions.items() if a.startswith(prefix)})
        self.agents = [prefix + a for a in env.agents]
        return tuple(self._tag(d) for d in out)

    def _keep_metrics(self) -> None:
        m = self.envs[self._current].episode_metrics()
        if m:
            self._last = {"network": self.network, **m}

    def episode_metrics(self) -> dict[str, Any]:
        """RESCO's metrics of the last finished episode, with its map."""
        if self._current >= 0:
            self._keep_metrics()
        return dict(self._last)

    def close(self) -> None:
        for e in self.envs:
            e.close()


def padding(networks: Any, **options: Any) -> dict[str, int]:
    """``pad_lanes`` and ``pad_phases`` that fit every light of ``networks``: those of
    ``options`` where given, else the most incoming lanes and green phases of any light.
    Put them in a training run's env config, so its checkpoint records them and scores
    on any one of the maps alone."""
    pads = {k: options.pop(k, 0) for k in ("pad_lanes", "pad_phases")}
    if not all(pads.values()):
        sizes = []
        for m in parse_networks(networks):
            env = RescoSignalsEnv(network=m, **options)
            sizes.append((env.n_lanes, env.n_phases))
            env.close()
        pads["pad_lanes"] = pads["pad_lanes"] or max(s[0] for s in sizes)
        pads["pad_phases"] = pads["pad_phases"] or max(s[1] for s in sizes)
    return pads
