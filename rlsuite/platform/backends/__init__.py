"""Backends: what runs a plan. One interface, one implementation per family of plans.

    base      the Backend interface: build, train one iteration, save, restore,
              load a controller, stop
    registry  backend key -> class; a plan names its key in ``Plan.backend``
    rllib     RLlibBackend: the RLlib plans (sync, async, replay, imitation)

The ``es`` backend is :class:`rlsuite.platform.es.trainer.ESTrainer`, the ``async_grad``
backend :class:`rlsuite.platform.async_grad.trainer.AsyncGradBackend`, the ``qt_opt``
backend :class:`rlsuite.platform.qtopt.trainer.QTOptTrainer`.
"""
