"""The platform's measurements behind ``benchmarks/platform/``: RLlib's tuned examples and the
plans' values for them (the learning table), the cells that train one side on one seed,
their summary, the ``es`` plan's rows, and the sampling and iteration rates. The
declarations in ``benchmarks/platform/`` call these; the shared runner writes the JSON."""
