"""Workloads: a schema with data, and a seeded generator of train / test queries.

``get(name)`` returns the workload; ``WORKLOADS`` lists them.
"""

from __future__ import annotations

from rlsuite.apps.queryopt.workloads.base import Workload

WORKLOAD_NAMES = ("joins", "udf", "tpch")


def get(name: str, **kwargs) -> Workload:
    """The workload called ``name`` (``joins``, ``udf`` or ``tpch``)."""
    if name == "joins":
        from rlsuite.apps.queryopt.workloads.joins import JoinsWorkload

        return JoinsWorkload(**kwargs)
    if name == "udf":
        from rlsuite.apps.queryopt.workloads.udf import UdfWorkload

        return UdfWorkload(**kwargs)
    if name == "tpch":
        from rlsuite.apps.queryopt.workloads.tpch import TpchWorkload

        return TpchWorkload(**kwargs)
    raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(WORKLOAD_NAMES)}")


__all__ = ["WORKLOAD_NAMES", "Workload", "get"]
