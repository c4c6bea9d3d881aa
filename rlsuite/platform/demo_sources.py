"""Where demonstrations (or a fixed off-policy dataset) come from, and reading them.

A source is a string, the value of a plan's ``demonstrations`` (or QT-Opt's
``dataset``) field:

* the path of recorded transitions, parquet in the format of
  :func:`rlsuite.platform.demonstrations.record_episodes`;
* ``CONTROLLER:N``: any controller, recorded here on ``N`` seeded episodes.
  ``CONTROLLER`` is ``random`` (uniform random actions), the path of an rlsuite
  checkpoint, or an import path ``package.module:Factory`` whose zero-argument call
  gives an object with ``act(obs)`` (a hand-written controller's class). A controller
  with ``attach(env)`` is handed the env before its first episode (one that reads the
  simulation, as a signal program does: ``rlsuite.apps.traffic.demonstrators``).

Example::

    >>> parse("random:20")
    Source(path='', controller='random', episodes=20)
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsuite.platform import envs as env_registry

COLUMNS = ("eps_id", "obs", "actions", "rewards", "new_obs", "terminateds", "truncateds")
"""The columns of recorded transitions that replay reads."""


@dataclass(frozen=True)
class Source:
    """A parsed source: a file (``path``) or a controller and its episode count."""

    path: str = ""
    controller: str = ""
    episodes: int = 0


def parse(spec: str) -> Source:
    """The source ``spec`` names; ``ValueError`` when it is neither an existing file nor
    ``CONTROLLER:N``."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"a demonstrations source must be a path or CONTROLLER:N, got {spec!r}")
    if os.path.exists(spec):
        return Source(path=spec)
    m = re.fullmatch(r"(.+):(\d+)", spec)
    if not m:
        raise ValueError(
            f"demonstrations {spec!r} are neither an existing file of recorded transitions "
            "nor CONTROLLER:N (random:N, a checkpoint path:N or package.module:Factory:N)"
        )
    controller, n = m.group(1), int(m.group(2))
    if n < 1:
        raise ValueError(f"demonstrations {spec!r}: record at least one episode (N >= 1)")
    if controller != "random" and not os.path.exists(controller) and ":" not in controller:
        raise ValueError(
            f"demonstrations {spec!r}: controller {controller!r} is not 'random', an existing "
            "checkpoint, nor an import path package.module:Factory"
        )
    return Source(controller=controller, episodes=n)


class RandomController:
    """Uniform random actions from the env's action space, seeded per episode.

    Its stream is derived from the episode's seed, not the seed itself: an env seeded
    with the same number draws from the same generator, and its random states would
    then correlate with the random actions."""

    def __init__(self, action_space: Any, seed: int = 0):
        import copy

        self.space = copy.deepcopy(action_space)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.space.seed(int(np.random.SeedSequence([int(seed), 7]).generate_state(1)[0]))

    def act(self, observation: Any) -> Any:
        return self.space.sample()


def controller(
    name: str,
    env: str,
    env_config: Mapping[str, Any] | None,
    seed: int,
    load_checkpoint: Callable[[str], Any] | None = None,
) -> Any:
    """The controller ``name`` of a ``CONTROLLER:N`` source, for ``env``. A checkpoint
    is loaded by ``load_checkpoint`` (:func:`rlsuite.platform.checkpoints.load_controller`,
    given by the caller: a backend cannot import the loader that imports it)."""
    if name == "random":
        return RandomController(env_registry.spaces(env, env_config)[None][1], seed)
    if os.path.exists(name):
        if load_checkpoint is None:
            raise ValueError(
                f"demonstrations from checkpoint {name!r} cannot be recorded here; record them "
                "first (rlsuite.platform.demonstrations.record_episodes) and pass the file"
            )
        return load_checkpoint(name)
    module, _, attr = name.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    made = obj()
    if not hasattr(made, "act"):
        raise TypeError(f"{name} gave {made!r}, which has no act(obs)")
    return made


def materialize(
    spec: str,
    env: str,
    env_config: Mapping[str, Any] | None,
    seed: int,
    out_dir: str,
    load_checkpoint: Callable[[str], Any] | None = None,
) -> str:
    """The path of the recorded transitions of source ``spec``: the file itself, or the
    controller's ``N`` seeded episodes recorded into ``out_dir``."""
    src = parse(spec)
    if src.path:
        return src.path
    path = os.path.join(out_dir, "demonstrations.parquet")
    ctrl = controller(src.controller, env, env_config, seed, load_checkpoint)
    record(ctrl, env, src.episodes, path, env_config=env_config, seed=seed, name=src.controller)
    return path


RUN_SEED_OFFSET = 10**6
"""A training run records its demonstrators' episodes from its own seed plus this, so that
they never repeat its training episodes' seeds."""


def load_for_run(
    spec: str, env: str, env_config: Mapping[str, Any] | None, run_seed: int
) -> dict[str, np.ndarray]:
    """The transitions of source ``spec`` for a run seeded ``run_seed`` (:func:`load`'s
    arrays): a controller's episodes are recorded into a scratch folder, removed after."""
    tmp = tempfile.mkdtemp(prefix="rlsuite-demos-")
    try:
        return load(materialize(spec, env, env_config, run_seed + RUN_SEED_OFFSET, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _first_act(ctrl: Any, e: Any, obs: Any, name: str, env: str) -> Any:
    """The demonstrator's first action, refused in one sentence naming the demonstrator and
    the env when it cannot act on the env's observations or answers outside its actions."""
    misfit = f"demonstrator {name!r} does not fit env {env!r}"
    try:
        a = ctrl.act(obs)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise ValueError(f"{misfit}: it cannot act on its observations ({err})") from None
    space = e.action_space
    try:
        if hasattr(space, "n"):
            ok = np.ndim(a) == 0 and float(a) == int(a) and 0 <= int(a) < space.n
        else:
            ok = np.size(np.asarray(a, np.float64)) == int(np.prod(space.shape))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{misfit}: it answered {a!r}, and the env acts in {space}")
    return a


def record(
    ctrl: Any,
    env: str,
    episodes: int,
    path: str,
    env_config: Mapping[str, Any] | None = None,
    seed: int = 0,
    name: str = "",
    driver: Any = None,
) -> dict[str, float]:
    """Run controller ``ctrl`` (``act``, optional ``reset`` and ``attach``) for
    ``episodes`` episodes seeded ``seed, seed + 1, ...`` and write its transitions as
    parquet at ``path``. With a ``driver`` (a controller of the same env), the driver's
    actions step the env and ``ctrl``'s answers on the states it reaches are recorded:
    DAgger's labels of a learner's own states by an expert (multi-agent envs). A
    controller that does not fit the env (``name`` in the error) is refused at its first
    action. An env whose config needs a vector env of ``n > 1``
    (a network's traffic lights in one simulation, ``rlsuite/SignalsShared-v0``) runs as
    that vector env: the controller answers for all ``n`` at once and each sub-env's
    steps are an episode of their own, for the one buffer the sub-envs share.

    Returns ``{"episodes", "transitions", "return_mean"}`` (episodes of each sub-env).
    """
    if env_registry.spec(env).multi_agent:
        return _record_agents(ctrl, env, episodes, path, env_config, seed, name, driver)
    if driver is not None:
        raise ValueError("a driver that is not the recorded controller needs a multi-agent env")
    n = env_registry.vector_size(env_registry.spec(env), env_config) or 1
    e = (
        env_registry.make_vector(env, n, env_config)
        if n > 1
        else env_registry.make(env, env_config)
    )
    keys = ("eps_id", "t", "obs", "actions", "rewards", "new_obs", "terminateds", "truncateds")
    cols: dict[str, list] = {k: [] for k in keys}
    returns = []
    name = name or getattr(ctrl, "name", "") or type(ctrl).__name__
    try:
        for ep, obs in _episode_starts(ctrl, e, episodes, seed):
            total, t = np.zeros(n), 0
            while True:
                a = _first_act(ctrl, e, obs, name, env) if not cols["t"] else ctrl.act(obs)
                nobs, r, term, trunc, _ = e.step(a)
                subs = zip(*(np.reshape(x, (n, -1)) if k < 3 else np.reshape(x, (n,))
                             for k, x in enumerate((obs, a, nobs, r, term, trunc))))  # fmt: skip
                for i, (o, ai, no, ri, te, tr) in enumerate(subs):
                    act = ai.item() if n > 1 else a.tolist() if isinstance(a, np.ndarray) else a
                    row = (f"{seed}-{ep}" + (f"-{i}" if n > 1 else ""), t,
                           np.asarray(o, np.float32).ravel().tolist(), act, float(ri),
                           np.asarray(no, np.float32).ravel().tolist(), bool(te), bool(tr))  # fmt: skip
                    for k, v in zip(keys, row):
                        cols[k].append(v)
                total += np.reshape(r, (n,))
                t += 1
                obs = nobs
                if np.any(term) or np.any(trunc):
                    break
            returns.extend(total.tolist())
    finally:
        e.close()
    return _write(cols, path, episodes * n, returns)


def _episode_starts(ctrl: Any, e: Any, episodes: int, seed: int) -> Iterator[tuple[int, Any]]:
    """Each episode's number and first observations: the controller attached to ``e`` once
    (``attach``, when it has one), reset before each episode (``reset(seed + ep)``), and the
    env reset with ``seed + ep``."""
    if hasattr(ctrl, "attach"):
        ctrl.attach(e)
    for ep in range(episodes):
        if hasattr(ctrl, "reset"):
            ctrl.reset(seed + ep)
        yield ep, e.reset(seed=seed + ep)[0]


def _write(cols: dict[str, list], path: str, episodes: int, returns: list) -> dict[str, float]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    pq.write_table(pa.table(cols), path)
    return {
        "episodes": float(episodes),
        "transitions": float(len(cols["t"])),
        "return_mean": float(np.mean(returns)),
    }


def _record_agents(
    ctrl: Any,
    env: str,
    episodes: int,
    path: str,
    env_config: Mapping[str, Any] | None,
    seed: int,
    name: str,
    driver: Any = None,
) -> dict[str, float]:
    """:func:`record` on a multi-agent env (a PettingZoo ``ParallelEnv``): the controller
    answers a dict of observations with a dict of actions, and each agent's steps are an
    episode of their own, its id in the ``agent_id`` column (so that each agent's steps can
    go to its own policy's replay). A step of an agent counts when it acted and observed
    again; its episode ends when it terminates, is truncated, or the env ends."""
    e = env_registry.make(env, env_config)
    keys = ("eps_id", "agent_id", "t", "obs", "actions", "rewards", "new_obs",
            "terminateds", "truncateds")  # fmt: skip
    cols: dict[str, list] = {k: [] for k in keys}
    returns: list[float] = []
    name = name or getattr(ctrl, "name", "") or type(ctrl).__name__
    try:
        for ep, obs in _episode_starts(ctrl, e, episodes, seed):
            if driver is not None and hasattr(driver, "reset"):
                driver.reset(seed + ep)
            totals: dict[Any, float] = {}
            t = 0
            while obs:
                acts = ctrl.act(obs) if cols["t"] else _first_agent_acts(ctrl, e, obs, name, env)
                nobs, r, term, trunc, _ = e.step(acts if driver is None else driver.act(obs))
                ends = not getattr(e, "agents", nobs)
                for agent in obs:
                    if agent not in acts or agent not in nobs:
                        continue
                    te, tr = bool(term.get(agent, False)), bool(trunc.get(agent, False))
                    tr = tr or (ends and not te)
                    row = (f"{seed}-{ep}-{agent}", str(agent), t,
                           np.asarray(obs[agent], np.float32).ravel().tolist(),
                           np.asarray(acts[agent]).tolist(), float(r.get(agent, 0.0)),
                           np.asarray(nobs[agent], np.float32).ravel().tolist(), te, tr)  # fmt: skip
                    for k, v in zip(keys, row):
                        cols[k].append(v)
                    totals[agent] = totals.get(agent, 0.0) + float(r.get(agent, 0.0))
                t += 1
                if ends:
                    break
                obs = {a: o for a, o in nobs.items() if not (term.get(a) or trunc.get(a))}
            returns.extend(totals.values())
    finally:
        e.close()
    return _write(cols, path, len(returns), returns)


def _first_agent_acts(ctrl: Any, e: Any, obs: Mapping, name: str, env: str) -> Any:
    """The demonstrator's first answer on a multi-agent env, refused in one sentence naming
    both when it is not one valid action per agent."""
    misfit = f"demonstrator {name!r} does not fit env {env!r}"
    try:
        acts = ctrl.act(obs)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise ValueError(f"{misfit}: it cannot act on its observations ({err})") from None
    if not isinstance(acts, Mapping) or set(acts) != set(obs):
        raise ValueError(f"{misfit}: it answered {acts!r}, not one action per agent {sorted(obs)}")
    for agent, a in acts.items():
        space = e.action_space(agent) if callable(e.action_space) else e.action_space
        if hasattr(space, "n") and not (np.ndim(a) == 0 and 0 <= int(a) < space.n):
            raise ValueError(f"{misfit}: it answered {a!r} for {agent}, which acts in {space}")
    return acts


def load(path: str) -> dict[str, np.ndarray]:
    """Recorded transitions as arrays (obs and actions stacked, flags as float32)."""
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    agents = ["agent_id"] if "agent_id" in names else []  # a multi-agent env's recording
    cols = pq.read_table(path, columns=list(COLUMNS) + agents).to_pydict()
    if not cols["obs"]:
        raise ValueError(f"demonstrations {path!r} hold no transitions")
    out = {
        "obs": np.asarray(cols["obs"], dtype=np.float32),
        "new_obs": np.asarray(cols["new_obs"], dtype=np.float32),
        "actions": np.asarray(cols["actions"]),
        "rewards": np.asarray(cols["rewards"], dtype=np.float32),
        "terminateds": np.asarray(cols["terminateds"], dtype=np.float32),
        "truncateds": np.asarray(cols["truncateds"], dtype=np.float32),
    }
    _, out["episode"] = np.unique(np.asarray(cols["eps_id"]), return_inverse=True)
    if agents:  # whose steps they are
        out["agent_id"] = np.asarray(cols["agent_id"])
    return out


def check_spaces(data: Mapping[str, np.ndarray], obs_space: Any, act_space: Any, what: str) -> None:
    """Raise ``ValueError`` when recorded transitions do not fit the env's spaces: another
    observation shape, or actions outside the action space (another number of actions,
    another action size)."""
    obs_shape = tuple(getattr(obs_space, "shape", ()) or ())
    if data["obs"].shape[1:] != (int(np.prod(obs_shape)),) and data["obs"].shape[1:] != obs_shape:
        raise ValueError(
            f"{what} have observations of shape {data['obs'].shape[1:]}, but the env observes "
            f"{obs_shape}; record them on the same env and env_config"
        )
    act = data["actions"]
    if hasattr(act_space, "n"):
        ok = act.ndim == 1 and np.issubdtype(act.dtype, np.integer)
        ok = ok and act.min() >= 0 and act.max() < act_space.n
        if not ok:
            raise ValueError(
                f"{what} hold actions that are not in the env's {act_space} (of shape "
                f"{act.shape[1:]}, values {act.min()}..{act.max()}); record them on the same env"
            )
    else:
        shape = tuple(act_space.shape)
        if act.shape[1:] != shape or not np.issubdtype(act.dtype, np.floating):
            raise ValueError(
                f"{what} hold actions of shape {act.shape[1:]} ({act.dtype}), but the env acts "
                f"in {act_space}; record them on the same env"
            )


def check_source(spec: str, env: str, env_config: Mapping[str, Any] | None, what: str) -> None:
    """Raise ``ValueError`` when ``spec`` is not a source, or names a recorded file whose
    spaces do not fit ``env`` (a ``CONTROLLER:N`` source is recorded on the env itself)."""
    src = parse(spec)
    if not src.path:
        return
    data, spaces = load(src.path), env_registry.spaces(env, env_config)
    if None in spaces:
        check_spaces(data, *spaces[None], f"{what} {src.path!r}")
        return
    if "agent_id" not in data:
        raise ValueError(
            f"{what} {src.path!r} were not recorded on a multi-agent env (no agent_id column); "
            f"record them on {env!r} itself"
        )
    for agent, (obs_space, act_space) in spaces.items():
        rows = data["agent_id"] == str(agent)
        if rows.any():
            part = {k: v[rows] for k, v in data.items() if k in ("obs", "actions")}
            check_spaces(part, obs_space, act_space, f"{what} {src.path!r} (agent {agent})")
