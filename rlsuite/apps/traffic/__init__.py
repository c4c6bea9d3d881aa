"""The traffic app: mixed-autonomy traffic control in SUMO (ring, figure-eight, signals).

Environments (``envs``) and their rewards (``rewards``), the SUMO adapter
(``kernel``), networks, hand-written controllers, scenarios by name and
``traffic-train`` (``cli``); see the repository's README.
"""
