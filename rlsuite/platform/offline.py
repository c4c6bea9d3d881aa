"""Recorded transitions mapped to training batches once, in the driver, a run of steps at
a time.

RLlib 2.60's ``OfflineData`` maps recorded rows (one row per env step, as
:func:`rlsuite.platform.demonstrations.record_episodes` writes them) to training batches
inside a Ray Data pipeline: ``map_batches`` over an actor pool of ``OfflinePreLearner`` s,
each a new worker process that imports torch and RLlib and builds the module before it
maps a row, and each row made into its own one-step ``SingleAgentEpisode``. On 2 cores the
``imitation`` plan's first training batch waited ~27 s on that pipeline for 200,000
CartPole rows (cProfile: all of it in Ray Data's ``get_output_blocking``).

Two pieces, used together by the ``imitation`` plan, keep RLlib's reader, connector
pipeline, learner and batch iterator and change only how the rows are mapped:

- :class:`EpisodeRunsPreLearner`: consecutive rows of one episode (same ``eps_id``, no
  episode end between them, each row's ``new_obs`` exactly the next row's ``obs``) become
  one episode of many steps, so the connector pipeline emits the same rows in the same
  order (tested against RLlib's pre-learner, shuffled rows included) ~50x faster.
- :class:`DriverMappedOfflineData`: on the first ``sample()`` it reads the local parquet
  files with pyarrow, runs the pre-learner over every row in the driver and gives RLlib's
  iterator the mapped rows as an in-memory dataset: no actor pool to start.

Both are for data that fits in memory and a connector pipeline without learned state
(RLlib's ``materialize_mapped_data=True`` case, behaviour cloning). Anything else
(remote learners, cloud filesystems, other read methods, episode or sample-batch input,
packed actions or extra columns, multi-agent rows, non-array observations,
``ignore_final_observation``) goes through RLlib's own code unchanged.

Example:
    >>> from ray.rllib.algorithms.bc import BCConfig
    >>> cfg = BCConfig().offline_data(
    ...     offline_data_class=DriverMappedOfflineData, prelearner_class=EpisodeRunsPreLearner
    ... )
"""

from __future__ import annotations

import os
import types
from typing import Any

import numpy as np
import ray
from ray.rllib.core import COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.env import INPUT_ENV_SPACES
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.offline.offline_data import OfflineData
from ray.rllib.offline.offline_prelearner import OfflinePreLearner, _validate_deprecated_map_args
from ray.rllib.utils.compression import unpack_if_needed

ROWS_PER_CALL = 8192
"""Rows the driver maps per pre-learner call (bounds its peak memory, not the result)."""

_NOT_EXTRA = ("dones", "agent_index", "type")
"""Columns RLlib's pre-learner never turns into extra model outputs."""


def read_rows(paths: list[str]) -> dict[str, np.ndarray]:
    """Every row of the parquet files or directories ``paths``, as the numpy batch Ray
    Data hands a pre-learner (list columns become object arrays of per-row arrays)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for p in paths]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return {c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names}


def run_bounds(
    eps_ids: np.ndarray,
    obs: np.ndarray,
    new_obs: np.ndarray,
    terminateds: np.ndarray,
    truncateds: np.ndarray,
) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of rows that continue one another: row ``i + 1``
    continues row ``i`` when both have the same episode id, row ``i`` ended nothing, and
    row ``i``'s ``new_obs`` is exactly row ``i + 1``'s ``obs``."""
    n = len(eps_ids)
    if n == 0:
        return []
    flat_o, flat_n = obs.reshape(n, -1), new_obs.reshape(n, -1)
    goes_on = (
        (eps_ids[:-1] == eps_ids[1:])
        & ~terminateds[:-1]
        & ~truncateds[:-1]
        & np.all(flat_n[:-1] == flat_o[1:], axis=1)
    )
    edges = [0, *(np.flatnonzero(~goes_on) + 1).tolist(), n]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _stacked(column: Any, unpack: bool) -> np.ndarray | None:
    """A column of per-row arrays (each unpacked first if ``unpack`` and packed) as one
    ``(rows, ...)`` numeric array; None when the rows are not numeric arrays of one shape
    (dict observations, strings)."""
    try:
        arr = np.stack([np.asarray(unpack_if_needed(x) if unpack else x) for x in column])
    except (ValueError, TypeError):
        return None
    return arr if arr.dtype.kind in "biuf" else None


class EpisodeRunsPreLearner(OfflinePreLearner):
    """RLlib's ``OfflinePreLearner`` that maps each run of consecutive rows of one episode
    to one multi-step episode (the module docstring says when it applies)."""

    def _map_to_episodes(
        self, batch: dict[str, Any], to_numpy: bool = False, **kwargs: Any
    ) -> dict[str, list]:
        cols = self._columns(batch, **kwargs)
        if cols is None:  # not plain single-agent array rows: RLlib's per-row path
            return super()._map_to_episodes(batch, to_numpy=to_numpy, **kwargs)
        obs, new_obs, infos, extra = cols["obs"], cols["new_obs"], cols["infos"], cols["extra"]
        episodes = []
        for a, b in run_bounds(
            cols["eps_ids"], obs, new_obs, cols["terminateds"], cols["truncateds"]
        ):
            episode = SingleAgentEpisode(
                id_=cols["eps_ids"][a],
                agent_id=None,
                observations=np.concatenate([obs[a:b], new_obs[b - 1 : b]]),
                infos=[{}, *(list(infos[a:b]) if infos is not None else [{}] * (b - a))],
                actions=cols["actions"][a:b],
                rewards=cols["rewards"][a:b],
                terminated=bool(cols["terminateds"][b - 1]),
                truncated=bool(cols["truncateds"][b - 1]),
                extra_model_outputs={k: v[a:b] for k, v in extra.items()},
                len_lookback_buffer=0,
            )
            if to_numpy:
                episode.to_numpy()
            episodes.append(episode)
        return {"episodes": episodes}

    def _columns(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any] | None:
        """The batch's columns as whole arrays (per-row arrays stacked, as RLlib's batch
        ends up), or None where RLlib's per-row path must map it: multi-agent rows,
        ``ignore_final_observation``, packed actions or extra columns, a missing column, or
        a column whose rows do not stack into one numeric array."""
        is_multi_agent, schema, compressed = _validate_deprecated_map_args(kwargs, self.config)
        # RLlib unpacks observations (and next ones) when OBS is listed as compressed, as
        # it is by default for BC
        other_packed = set(compressed) - {Columns.OBS, Columns.NEXT_OBS}
        if is_multi_agent or other_packed or self.config.ignore_final_observation:
            return None
        names = {c: schema[c] for c in (Columns.OBS, Columns.NEXT_OBS, Columns.EPS_ID)}
        names[Columns.ACTIONS] = schema[Columns.ACTIONS]
        if any(name not in batch for name in names.values()):
            return None
        unpack = Columns.OBS in compressed
        obs = _stacked(batch[names[Columns.OBS]], unpack)
        new_obs = _stacked(batch[names[Columns.NEXT_OBS]], unpack)
        if obs is None or new_obs is None or obs.shape != new_obs.shape:
            return None
        term, trunc = schema[Columns.TERMINATEDS], schema[Columns.TRUNCATEDS]
        arrays = {"actions": batch[names[Columns.ACTIONS]]}
        arrays.update(
            (k, v)
            for k, v in batch.items()
            if k not in schema and k not in schema.values() and k not in _NOT_EXTRA
        )
        for k, v in arrays.items():  # a Box action, a logit vector: one array per row
            if np.asarray(v).dtype == object:
                arrays[k] = _stacked(v, False)
                if arrays[k] is None:
                    return None
        actions = arrays.pop("actions")
        return {
            "obs": obs,
            "new_obs": new_obs,
            "eps_ids": np.asarray([str(e) for e in batch[names[Columns.EPS_ID]]]),
            "terminateds": np.asarray(batch[term if term in batch else "dones"], dtype=bool),
            "truncateds": (
                np.asarray(batch[trunc], dtype=bool) if trunc in batch else np.zeros(len(obs), bool)
            ),
            "actions": actions,
            "rewards": batch[schema[Columns.REWARDS]],
            "infos": batch.get(schema[Columns.INFOS]),
            "extra": arrays,
        }


class DriverMappedOfflineData(OfflineData):
    """RLlib's ``OfflineData`` with the pre-learner run once, in the driver, over all the
    rows (the module docstring says when it applies; otherwise RLlib's pipeline runs)."""

    def maps_in_driver(self, num_shards: int) -> bool:
        """Whether this sampler maps the rows itself (local learner, local parquet)."""
        c = self.config
        return (
            num_shards <= 1
            and c.num_learners == 0
            and c.input_read_method == "read_parquet"
            and self.filesystem is None
            and not c.input_read_episodes
            and not c.input_read_sample_batches
            and all(isinstance(p, str) and os.path.exists(p) for p in _paths(self.path))
        )

    def sample(
        self,
        num_samples: int,
        return_iterator: bool = False,
        num_shards: int = 1,
        module_state: dict[str, Any] | None = None,
    ) -> Any:
        if not self.data_is_mapped and self.maps_in_driver(num_shards):
            if not module_state:
                state = self.learner_handles[0].get_state(component=COMPONENT_RL_MODULE)
                module_state = state[COMPONENT_RL_MODULE]
            self.data = self._map_in_driver(module_state)
            self.data_is_mapped = True
        return super().sample(
            num_samples,
            return_iterator=return_iterator,
            num_shards=num_shards,
            module_state=module_state,
        )

    def _map_in_driver(self, module_state: dict[str, Any]) -> ray.data.Dataset:
        from ray.data.block import BlockAccessor

        prelearner = self.prelearner_class(
            config=self.config,
            spaces=self.spaces[INPUT_ENV_SPACES],
            module_spec=self.module_spec,
            module_state=module_state,
        )
        rows = read_rows([str(p) for p in _paths(self.path)])
        n = len(next(iter(rows.values())))
        blocks = []
        for start in range(0, n, ROWS_PER_CALL):
            part = {k: v[start : start + ROWS_PER_CALL] for k, v in rows.items()}
            blocks.append(BlockAccessor.batch_to_block(prelearner(part)))
        return ray.data.from_arrow(blocks).materialize()


def close_batch_iterators(algo: Any) -> None:
    """Close the batch generators that an offline algorithm's local learner keeps between
    training steps (RLlib's ``MiniBatchRayDataIterator``), while Ray is still up. Left
    open, each is closed when the process exits, after Ray is shut down, and Ray Data logs
    a traceback then. Remote learners' generators end with their processes."""
    group = getattr(algo, "learner_group", None)
    if getattr(algo, "offline_data", None) is None or group is None or not group.is_local:
        return

    def close(learner: Any) -> None:
        gen = getattr(getattr(learner, "iterator", None), "_epoch_iterator", None)
        if isinstance(gen, types.GeneratorType):
            gen.close()

    group.foreach_learner(close)


def _paths(path: Any) -> list[Any]:
    return list(path) if isinstance(path, list) else [path]


__all__ = ["DriverMappedOfflineData", "EpisodeRunsPreLearner", "read_rows", "run_bounds"]
