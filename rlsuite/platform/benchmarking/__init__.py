"""The platform's measurements behind ``benchmarks/platform/``: RLlib's tuned examples and the
plans' values for them (the learning table), the cells that train one side on one seed,
their summary, the ``es`` plan's rows, the sampling and iteration rates, and a plan trained
to a target return (``to_target``). The declarations in ``benchmarks/platform/`` call these;
the shared runner writes the JSON."""
