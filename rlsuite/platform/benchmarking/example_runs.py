"""An RLlib example's own ``Algorithm`` trained to a target in pieces: a piece cut by its
wall budget saves an RLlib checkpoint (with the replay buffer, which RLlib's new-stack
checkpoint leaves out) and the curve so far; the next piece restores it and goes on, the env
steps and wall seconds counted across the pieces. What ``platform_r2d2 --plans rllib_lstm``
runs: RLlib's DQN+LSTM example samples ~50 env steps/s here, so its 200k-step budget takes
more than one session.

A resumed piece is not bit-identical to an uncut run: the episodes running at the cut are
dropped, and the runners' random states start afresh from the seed."""

from __future__ import annotations

import os
import pickle
import shutil
import time
from collections.abc import Callable
from typing import Any

from rlsuite.platform.benchmarking.to_target import train_to_target

BUFFER = "rlsuite_replay_buffer.pkl"
"""The replay buffer's state in a checkpoint folder (RLlib's new stack does not save it)."""


class ExampleBackend:
    """An RLlib ``AlgorithmConfig`` built as it is, as a backend of ``train_to_target``,
    that saves and restores its whole training state (the replay buffer included)."""

    def __init__(self, config: Any):
        self.algo = config.build_algo()

    def train(self) -> dict[str, Any]:
        from rlsuite.platform.backends.rllib import flatten_result

        return flatten_result(self.algo.train())

    def save(self, path: str) -> str:
        """RLlib's checkpoint of the algorithm and its replay buffer at ``path``."""
        path = os.path.abspath(path)
        self.algo.save_to_path(path)
        buffer = self.algo.local_replay_buffer
        if buffer is not None:
            with open(os.path.join(path, BUFFER), "wb") as f:
                pickle.dump(buffer.get_state(), f)
        return path

    def restore(self, path: str) -> None:
        """The algorithm, its runners' weights and its replay buffer from ``path``."""
        # as RLlibBackend.restore: let the runners' first weight sync land before RLlib's
        # restore sends theirs, else a runner drops the restored weights
        if self.algo.env_runner_group is not None:
            self.algo.env_runner_group.fetch_ready_async_reqs(timeout_seconds=None)
        self.algo.restore_from_path(os.path.abspath(path))
        saved = os.path.join(path, BUFFER)
        if self.algo.local_replay_buffer is not None and os.path.exists(saved):
            with open(saved, "rb") as f:
                self.algo.local_replay_buffer.set_state(pickle.load(f))

    def stop(self) -> None:
        self.algo.stop()


def finished(cell: dict[str, Any], max_env_steps: int) -> bool:
    """Whether a cell is done: it reached the target or ran its env-step budget. A cut
    cell without a checkpoint (a run before pieces were saved) is done too: nothing to
    resume."""
    return bool(
        cell["reached"] or cell["env_steps_run"] >= max_env_steps or not cell.get("checkpoint")
    )


def run_piece(
    make_config: Callable[[], Any],
    checkpoint: str,
    target: float,
    max_env_steps: int,
    max_wall_s: float,
    before: dict[str, Any] | None = None,
    on_point: Callable[[int, float, float], None] = lambda steps, wall, ret: None,
    command: str = "",
) -> dict[str, Any]:
    """Train ``make_config()``'s algorithm for one piece of at most ``max_wall_s`` seconds
    toward ``target`` within ``max_env_steps`` env steps in all, going on from the cell
    ``before`` (a cut piece's record, with its checkpoint) when given; the cell so far.

    The cell: ``reached`` (and ``env_steps``, ``wall_s`` at the target), ``best_return``,
    ``env_steps_run`` and ``wall_s_run`` over all pieces (training time; builds and
    restores excluded), the ``curve`` over all pieces, each piece's own numbers in
    ``pieces``, and ``checkpoint`` (the folder a cut cell resumes from; None once done,
    when the folder is removed)."""
    before = before or {}
    t0 = time.perf_counter()
    backend = ExampleBackend(make_config())
    if before:
        backend.restore(before["checkpoint"])
    build_s = time.perf_counter() - t0
    steps0, wall0 = before.get("env_steps_run", 0), before.get("wall_s_run", 0.0)
    curve = list(before.get("curve", []))

    def point(steps: int, wall: float, row: dict[str, Any]) -> None:
        ret = row["episode_return_mean"]
        curve.append(dict(env_steps=steps, wall_s=round(wall, 1), episode_return_mean=ret))
        on_point(steps, wall, ret)

    cut: list[str] = []

    def keep(b: ExampleBackend) -> None:
        cut.append(b.save(checkpoint))

    run = train_to_target(backend, target, max_env_steps, max_wall_s, point,
                          env_steps_before=steps0, wall_s_before=wall0, on_cut=keep)  # fmt: skip
    if not cut and before.get("checkpoint") and os.path.isdir(before["checkpoint"]):
        shutil.rmtree(before["checkpoint"])
    piece = dict(command=command, resumed=bool(before), build_s=round(build_s, 1),
                 env_steps=run.env_steps_run - steps0, wall_s=round(run.wall_s_run - wall0, 1),
                 loadavg_1min_at_end=round(os.getloadavg()[0], 2))  # fmt: skip
    piece["env_steps_per_s"] = round(piece["env_steps"] / max(piece["wall_s"], 1e-9), 1)
    best = max(before.get("best_return", -float("inf")), run.best_return)
    return dict(reached=run.reached is not None, **(run.reached or {}), best_return=best,
                env_steps_run=run.env_steps_run, wall_s_run=run.wall_s_run, curve=curve,
                checkpoint=cut[0] if cut else None,
                pieces=[*before.get("pieces", []), piece])  # fmt: skip
