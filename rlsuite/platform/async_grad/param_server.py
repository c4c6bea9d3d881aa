"""One shard of the parameter server: a slice of the flat parameters and its optimiser.

A :class:`ParamShard` runs as a Ray actor. Runners push it their gradient's slice
with the shard's update count (``version``) they computed it on, and get the fresh
slice back in the same call. The shard:

* records the gradient's **staleness**, its version now minus the version the gradient
  was computed on (the updates in between);
* drops it when the staleness exceeds ``max_staleness`` (counted);
* with ``gradients_per_update = D > 1`` (DPPO's rule) averages gradients and steps
  once D have arrived; otherwise steps on each gradient as it comes (A3C, GORILA);
* counts the seconds it spends handling pushes (its utilisation).

A gradient of another ``epoch`` (computed before the shards were put back to a
checkpoint's state) is dropped too and counted apart (``dropped_epoch``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


class ParamShard:
    """Owns ``params`` (a slice of the flat vector) and its optimiser."""

    def __init__(
        self,
        index: int,
        state: dict[str, Any],
        optimizer: str,
        lr: float,
        max_staleness: int | None,
        gradients_per_update: int,
        epoch: int = 0,
    ):
        """``state``: as :meth:`get_state` gives it (``optimizer`` None: a fresh one)."""
        import torch

        torch.set_num_threads(1)
        self.index = index
        self.param = torch.nn.Parameter(
            torch.as_tensor(np.array(state["params"], dtype=np.float32))
        )
        if optimizer == "adam":
            self.opt = torch.optim.Adam([self.param], lr=lr)
        elif optimizer == "rmsprop":
            # A3C's shared RMSProp: decay 0.99, epsilon 0.1 (Mnih et al. 2016)
            self.opt = torch.optim.RMSprop([self.param], lr=lr, alpha=0.99, eps=0.1)
        else:
            raise ValueError(f"optimizer must be 'adam' or 'rmsprop', got {optimizer!r}")
        self.lr = lr
        self.max_staleness = max_staleness
        self.gradients_per_update = gradients_per_update
        self.epoch = epoch
        self.version = 0
        self._sum = torch.zeros_like(self.param)
        self._count = 0
        self.counts = dict.fromkeys(
            ("received", "applied", "dropped", "dropped_epoch", "staleness_sum", "staleness_n"), 0
        )
        self.busy_s = 0.0
        self._window_max = 0
        self.load_state(state, epoch)

    # -- the runners' calls ---------------------------------------------------------
    def push(self, grad: np.ndarray, version: int, epoch: int) -> tuple[np.ndarray, int, int]:
        """Take one gradient slice computed on ``version``; return ``pull()``."""
        import torch

        t0 = time.perf_counter()
        c = self.counts
        c["received"] += 1
        if epoch != self.epoch:
            c["dropped_epoch"] += 1
        else:
            staleness = self.version - version
            c["staleness_sum"] += staleness
            c["staleness_n"] += 1
            self._window_max = max(self._window_max, staleness)
            if self.max_staleness is not None and staleness > self.max_staleness:
                c["dropped"] += 1
            else:
                self._sum += torch.as_tensor(grad)
                self._count += 1
                if self._count >= self.gradients_per_update:
                    self.param.grad = self._sum / self._count
                    self.opt.step()
                    self._sum = torch.zeros_like(self.param)
                    self._count = 0
                    self.version += 1
                    c["applied"] += 1
        out = self.pull()
        self.busy_s += time.perf_counter() - t0
        return out

    def pull(self) -> tuple[np.ndarray, int, int]:
        """The slice, its version and the shard's epoch."""
        return self.param.detach().numpy().copy(), self.version, self.epoch

    # -- the driver's calls ---------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counters since start (and the largest staleness since the last call)."""
        out = {**self.counts, "busy_s": self.busy_s, "staleness_max": self._window_max}
        out["version"] = self.version
        self._window_max = 0
        return out

    def get_state(self) -> dict[str, Any]:
        """Everything a checkpoint needs: the slice, the optimiser's state, the version."""
        import copy

        return {
            "params": self.param.detach().numpy().copy(),
            "optimizer": copy.deepcopy(self.opt.state_dict()),
            "version": self.version,
        }

    def load_state(self, state: dict[str, Any], epoch: int) -> int:
        """Put the shard back to ``state`` (of :meth:`get_state`) in a new ``epoch``; pending
        (not yet applied) gradients are dropped. Returns the updates rolled back."""
        import torch

        rolled_back = max(0, self.version - int(state["version"]))
        with torch.no_grad():
            self.param.copy_(torch.as_tensor(np.asarray(state["params"], dtype=np.float32)))
        if state["optimizer"] is not None:
            self.opt.load_state_dict(state["optimizer"])
        else:  # a fresh optimiser: no moments
            self.opt.state.clear()
        for group in self.opt.param_groups:  # the plan's rate, not the saved one (PBT)
            group["lr"] = self.lr
        self.version = int(state["version"])
        self.epoch = epoch
        self._sum.zero_()
        self._count = 0
        return rolled_back

    def ping(self) -> int:
        return self.index
