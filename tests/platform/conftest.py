"""The fake envs the platform tests share (``tests/platform/_fakes.py``), registered by id
once for every test module here."""

from rlsuite.platform import envs

FAKE_ENVS = {
    "rlsuite-test/Identity-v0": {
        "entry_point": "._fakes:IdentityEnv",
        "default_config": {"n": 3, "horizon": 20},
    },
    "rlsuite-test/Matching-v0": {"entry_point": "._fakes:MatchingGame", "multi_agent": True},
}
"""Test env ids and their registration (the keywords of ``envs.register``)."""

envs.register_table("tests.platform", FAKE_ENVS)
