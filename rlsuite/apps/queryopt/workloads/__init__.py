"""Workloads: a schema with data, and a seeded generator of train / test queries.

``get(name)`` returns the workload; ``WORKLOAD_NAMES`` lists the app's own. A name
``schema:S`` is a user's own schema ``S``, read-only
(:class:`~rlsuite.apps.queryopt.workloads.own.OwnSchema`).
"""

from __future__ import annotations

from rlsuite.apps.queryopt.workloads.base import Workload

WORKLOAD_NAMES = ("joins", "udf", "tpch", "tpcds")


def get(name: str, **kwargs) -> Workload:
    """The workload called ``name`` (``joins``, ``udf``, ``tpch``, ``tpcds`` or ``schema:S``)."""
    if name == "joins":
        from rlsuite.apps.queryopt.workloads.joins import JoinsWorkload

        return JoinsWorkload(**kwargs)
    if name == "udf":
        from rlsuite.apps.queryopt.workloads.udf import UdfWorkload

        return UdfWorkload(**kwargs)
    if name == "tpch":
        from rlsuite.apps.queryopt.workloads.tpch import TpchWorkload

        return TpchWorkload(**kwargs)
    if name == "tpcds":
        from rlsuite.apps.queryopt.workloads.tpcds import TpcdsWorkload

        return TpcdsWorkload(**kwargs)
    if name.startswith("schema:"):
        from rlsuite.apps.queryopt.workloads.own import OwnSchema

        return OwnSchema(name[len("schema:") :], **kwargs)
    raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(WORKLOAD_NAMES)}")


__all__ = ["WORKLOAD_NAMES", "Workload", "get"]
