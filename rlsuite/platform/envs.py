"""Environments by id, for RLlib, Tune, evaluation and tests.

Apps register their envs here (single-agent gymnasium envs and PettingZoo
parallel envs) under an id; RLlib, the platform's evaluation and
``check`` then find them by that id in any process, because the registry entry
carries an import path (``"package.module:Class"``), not a live object.

Apps announce their env modules through the ``rlsuite.envs`` entry-point group
in ``pyproject.toml``; the platform loads them lazily the first time an unknown
id is asked for, so the platform never imports an app by name.

Example::

    >>> from rlsuite.platform import envs
    >>> _ = envs.register("rlsuite/Example-v0", "gymnasium.envs.classic_control:CartPoleEnv")
    >>> env = envs.make("rlsuite/Example-v0")
    >>> env.observation_space.shape
    (4,)
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rlsuite.envs"


@dataclass(frozen=True)
class EnvSpec:
    """One registered environment."""

    env_id: str
    """The id users pass (``--scenario``, ``env=``)."""
    entry_point: str
    """``"module:attr"``; ``attr(**config)`` builds the env (a class or a factory)."""
    multi_agent: bool = False
    """True for a PettingZoo ``ParallelEnv`` (trained as RLlib multi-agent)."""
    default_config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments used when the caller gives none for a key."""
    description: str = ""
    """One line for ``--help`` and error messages."""
    max_envs_per_process: int | None = None
    """How many scalar copies may live in one process (libsumo allows 1); ``None``: no
    limit. Limits RLlib's own vectorisation only: a ``vector_entry_point`` is not bound by it."""
    vector_entry_point: str | None = None
    """``"module:attr"``; ``attr(num_envs=N, **config)`` builds a ``gymnasium.vector.VectorEnv``
    of N copies in one object (e.g. N SUMO rings in one simulation). When set, RLlib's env
    runners step it instead of N scalar envs (``gym_env_vectorize_mode="vector_entry_point"``)."""
    vector_size: str | None = None
    """``"module:attr"``; ``attr(**config)`` gives the one ``num_envs`` the vector env has for
    that config (e.g. the traffic lights of a network, one sub-env each), which a plan's
    ``num_envs_per_env_runner`` then must equal; ``None``: any number of copies."""


_REGISTRY: dict[str, EnvSpec] = {}
_PLUGINS_LOADED = False


def register(
    env_id: str,
    entry_point: str,
    *,
    multi_agent: bool = False,
    default_config: Mapping[str, Any] | None = None,
    description: str = "",
    max_envs_per_process: int | None = None,
    vector_entry_point: str | None = None,
    vector_size: str | None = None,
) -> EnvSpec:
    """Register an env under ``env_id``. Registering the same spec twice is a no-op."""
    if ":" not in entry_point:
        raise ValueError(f"entry_point must look like 'package.module:Attr', got {entry_point!r}")
    if vector_entry_point is not None:
        if ":" not in vector_entry_point:
            raise ValueError(
                "vector_entry_point must look like 'package.module:Attr', got "
                f"{vector_entry_point!r}"
            )
        if multi_agent:
            raise ValueError(
                f"{env_id!r}: vector_entry_point is for single-agent envs (RLlib's multi-agent "
                "runners step one env each); drop it or register a single-agent env"
            )
    if vector_size is not None and (vector_entry_point is None or ":" not in vector_size):
        raise ValueError(
            f"{env_id!r}: vector_size ('package.module:Attr') goes with a vector_entry_point"
        )
    spec = EnvSpec(
        env_id,
        entry_point,
        multi_agent,
        dict(default_config or {}),
        description,
        max_envs_per_process,
        vector_entry_point,
        vector_size,
    )
    old = _REGISTRY.get(env_id)
    if old is not None and old.entry_point != entry_point:
        raise ValueError(
            f"env id {env_id!r} is already registered to {old.entry_point}; pick another id"
        )
    _REGISTRY[env_id] = spec
    if not multi_agent and env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry_point, kwargs=dict(spec.default_config))
    return spec


def register_table(package: str, table: Mapping[str, Mapping[str, Any]]) -> list[EnvSpec]:
    """Register each ``env_id: {register's keywords}`` row of ``table`` (an app's envs, one
    table); an entry point starting with ``.`` is a module of ``package``.

    Example::

        >>> register_table("gymnasium.envs", {"rlsuite/Table-v0": {
        ...     "entry_point": ".classic_control:CartPoleEnv", "description": "a pole"}})[0].entry_point
        'gymnasium.envs.classic_control:CartPoleEnv'
    """

    def absolute(path: Any) -> Any:
        return package + path if isinstance(path, str) and path.startswith(".") else path

    keys = ("entry_point", "vector_entry_point", "vector_size")
    return [
        register(env_id, **{k: absolute(v) if k in keys else v for k, v in row.items()})
        for env_id, row in table.items()
    ]


def _load_plugins() -> None:
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except ImportError as e:  # an app whose extra is not installed
            log.debug("env plugin %s not loaded: %s", ep.name, e)


def registered() -> dict[str, EnvSpec]:
    """All registered envs (apps included), by id."""
    _load_plugins()
    return dict(_REGISTRY)


def spec(env_id: str) -> EnvSpec:
    """The spec of ``env_id``; gymnasium ids (``CartPole-v1``) are accepted as single-agent."""
    if env_id in _REGISTRY:
        return _REGISTRY[env_id]
    _load_plugins()
    if env_id in _REGISTRY:
        return _REGISTRY[env_id]
    if env_id in gym.registry:
        _check_extra(env_id)
        # gym.make keeps the registered wrappers (TimeLimit, order enforcing).
        return EnvSpec(env_id, f"gymnasium:make#{env_id}", False)
    known = ", ".join(sorted(_REGISTRY)) or "(none: is the app's extra installed?)"
    raise ValueError(
        f"unknown env id {env_id!r}. Registered: {known}; any gymnasium id (e.g. CartPole-v1) "
        "also works. Apps register theirs when installed: pip install -e '.[all]'"
    )


EXTRAS: dict[str, tuple[str, str]] = {
    "gymnasium.envs.mujoco": ("mujoco", "mujoco"),
}
"""Gymnasium env families that need a package outside the core install: entry-point
prefix -> (the module they import, the rlsuite extra that installs it)."""


def _check_extra(env_id: str) -> None:
    """Raise the install line when a gymnasium id needs a package that is not installed
    (MuJoCo's envs are registered with gymnasium whether or not MuJoCo is there)."""
    import importlib.util

    entry = gym.registry[env_id].entry_point
    for prefix, (module, extra) in EXTRAS.items():
        if isinstance(entry, str) and entry.startswith(prefix):
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                raise ValueError(
                    f"env {env_id!r} needs {module}, which is not installed: "
                    f"pip install -e '.[{extra}]'"
                )


def _resolve(entry_point: str) -> Callable[..., Any]:
    if entry_point.startswith("gymnasium:make#"):
        gym_id = entry_point.split("#", 1)[1]
        return lambda **kw: gym.make(gym_id, **kw)
    module, _, attr = entry_point.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def make(env_id: str, config: Mapping[str, Any] | None = None) -> Any:
    """Build the raw env: a ``gymnasium.Env`` or a PettingZoo ``ParallelEnv``."""
    return build(spec(env_id), config)


def build(env_spec: EnvSpec, config: Mapping[str, Any] | None = None) -> Any:
    """Build the raw env from a spec (works in processes where the id was never registered)."""
    kwargs = {**env_spec.default_config, **dict(config or {})}
    return _resolve(env_spec.entry_point)(**kwargs)


def make_vector(env_id: str, num_envs: int, config: Mapping[str, Any] | None = None) -> Any:
    """Build ``num_envs`` copies of ``env_id`` as one ``gymnasium.vector.VectorEnv`` through
    its ``vector_entry_point``."""
    return build_vector(spec(env_id), num_envs, config)


def build_vector(env_spec: EnvSpec, num_envs: int, config: Mapping[str, Any] | None = None) -> Any:
    """The spec's vector env of ``num_envs`` copies (see :attr:`EnvSpec.vector_entry_point`)."""
    if env_spec.vector_entry_point is None:
        raise ValueError(
            f"env {env_spec.env_id!r} has no vector_entry_point; build scalar copies with make()"
        )
    if int(num_envs) < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    kwargs = {**env_spec.default_config, **dict(config or {})}
    env = _resolve(env_spec.vector_entry_point)(num_envs=int(num_envs), **kwargs)
    if getattr(env, "num_envs", None) != int(num_envs):
        raise TypeError(
            f"{env_spec.vector_entry_point} returned {type(env).__name__} with num_envs="
            f"{getattr(env, 'num_envs', None)!r}; a vector entry point must return a "
            f"gymnasium.vector.VectorEnv of num_envs={num_envs} copies"
        )
    return env


_SIZES: dict[str, int] = {}


def vector_size(env_spec: EnvSpec, config: Mapping[str, Any] | None = None) -> int | None:
    """The ``num_envs`` the spec's vector env must have for ``config`` (see
    :attr:`EnvSpec.vector_size`), or ``None`` where any number goes. Cached per config."""
    if env_spec.vector_size is None:
        return None
    import json

    kwargs = {**env_spec.default_config, **dict(config or {})}
    key = json.dumps([env_spec.env_id, kwargs], sort_keys=True, default=str)
    if key not in _SIZES:
        _SIZES[key] = int(_resolve(env_spec.vector_size)(**kwargs))
    return _SIZES[key]


def check_num_envs(env_spec: EnvSpec, config: Mapping[str, Any] | None, num_envs: int) -> None:
    """Raise ``ValueError`` when ``num_envs`` copies cannot be built for ``config``: the
    spec's vector env has exactly :func:`vector_size` of them."""
    n = vector_size(env_spec, config)
    if n is not None and int(num_envs) != n:
        raise ValueError(
            f"env {env_spec.env_id!r} with this env_config is one vector env of exactly {n} "
            f"sub-envs (e.g. a network's traffic lights, one each): num_envs_per_env_runner "
            f"must be {n} or unset, got {num_envs}; run more copies with num_env_runners"
        )


# Keys RLlib adds to env_config (EnvContext); the env constructors never see them.
_RLLIB_KEYS = ("num_envs",)


class EnvCreator:
    """A picklable ``env_config -> env`` for RLlib's registry.

    Carries the spec, so a fresh worker process builds the env without the app
    having been imported there. RLlib's ``vector_entry_point`` mode calls it with
    ``num_envs`` in the config: then the spec's vector env of that many copies is
    built (the key is never passed to a scalar env's constructor).
    """

    def __init__(self, env_spec: EnvSpec):
        self.spec = env_spec

    def __call__(self, env_config: Mapping[str, Any] | None = None) -> Any:
        given = dict(env_config or {})
        cfg = {k: v for k, v in given.items() if k not in _RLLIB_KEYS}
        if "num_envs" in given and self.spec.vector_entry_point is not None:
            return build_vector(self.spec, given["num_envs"], cfg)
        env = build(self.spec, cfg)
        if self.spec.multi_agent:
            return _for_rllib(env)
        return env


def _for_rllib(env: Any) -> Any:
    """RLlib's wrapper of a PettingZoo parallel env, with the spaces of every possible agent.

    RLlib's ``ParallelPettingZooEnv`` takes its agents and spaces from the agents present
    after one reset; an env whose agents come and go (the vehicles of an open road)
    would then meet agents it has no space for. Its ``possible_agents`` are used instead,
    and its ``agents`` are the env's live ones (RLlib's wrapper keeps the first reset's,
    which RLlib's env check then holds against every later episode's: wrong for an env
    whose episodes have different agents, such as several maps in turn).
    """
    wrapped = _live_agents_wrapper()(env)
    agents = list(getattr(env, "possible_agents", None) or [])
    if agents:
        wrapped.possible_agents = agents
        wrapped.observation_spaces = {a: env.observation_space(a) for a in agents}
        wrapped.action_spaces = {a: env.action_space(a) for a in agents}
        wrapped.observation_space = gym.spaces.Dict(wrapped.observation_spaces)
        wrapped.action_space = gym.spaces.Dict(wrapped.action_spaces)
    return wrapped


@functools.cache
def _live_agents_wrapper() -> type:
    """``ParallelPettingZooEnv`` whose ``agents`` are the wrapped env's current agents."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    class LiveAgents(ParallelPettingZooEnv):
        @property
        def agents(self) -> list:
            par = self.__dict__.get("par_env")
            return list(par.agents) if par is not None else self.__dict__.get("_agents", [])

        @agents.setter
        def agents(self, value: list) -> None:  # RLlib's constructors assign it
            self.__dict__["_agents"] = list(value)

    return LiveAgents


def rllib_env(env_id: str) -> str:
    """Register ``env_id`` with Ray's env registry (idempotent) and return the name to use."""
    from ray.tune.registry import register_env

    register_env(env_id, EnvCreator(spec(env_id)))
    return env_id


_SPACES: dict[str, dict[Any, tuple[Any, Any]]] = {}


def spaces(env_id: str, config: Mapping[str, Any] | None = None) -> dict[Any, tuple[Any, Any]]:
    """Observation and action spaces without keeping the env: ``{None: (obs, act)}`` for a
    single-agent env, ``{agent_id: (obs, act)}`` for a multi-agent one. The env is built
    once per (id, config) in this process, since building may start a simulator or open a
    database session."""
    import json

    key = json.dumps([env_id, dict(config or {})], sort_keys=True, default=str)
    if key not in _SPACES:
        s = spec(env_id)
        if s.vector_size is not None:  # a vector env only: its copies' spaces
            vec = build_vector(s, vector_size(s, config), config)
            try:
                _SPACES[key] = {None: (vec.single_observation_space, vec.single_action_space)}
            finally:
                vec.close()
            return _SPACES[key]
        env = make(env_id, config)
        try:
            if spec(env_id).multi_agent:
                _SPACES[key] = {
                    a: (env.observation_space(a), env.action_space(a)) for a in env.possible_agents
                }
            else:
                _SPACES[key] = {None: (env.observation_space, env.action_space)}
        finally:
            env.close()
    return _SPACES[key]


def check(env_id: str, config: Mapping[str, Any] | None = None, skip_render: bool = True) -> None:
    """Validate an env: gymnasium's ``check_env``, or PettingZoo's parallel API test."""
    env = make(env_id, config)
    try:
        if spec(env_id).multi_agent:
            from pettingzoo.test import parallel_api_test

            parallel_api_test(env, num_cycles=50)
        else:
            from gymnasium.utils.env_checker import check_env

            check_env(getattr(env, "unwrapped", env), skip_render_check=skip_render)
    finally:
        env.close()


register(
    "rlsuite/StatelessCartPole-v1",
    "rlsuite.platform.memory_envs:stateless_cartpole",
    description="RLlib's StatelessCartPole: CartPole observing [x, theta] only (needs memory)",
)
register(
    "rlsuite/RepeatFirst-v0",
    "rlsuite.platform.memory_envs:RepeatFirst",
    default_config={"delay": 3},
    description="repeat the first observation (a +-1 cue) after `delay` blank steps (needs memory)",
)
