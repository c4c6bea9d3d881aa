"""RLlib's minibatch cycle as index arrays (rlsuite.platform.minibatches), held to RLlib's
own MiniBatchCyclicIterator."""

from __future__ import annotations

import numpy as np
import pytest
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator

from rlsuite.platform.minibatches import cyclic_indices


def _rllib_rows(sizes, **kw):
    batch = MultiAgentBatch(
        {mid: SampleBatch({"row": np.arange(n)}) for mid, n in sizes.items()},
        env_steps=max(sizes.values()),
    )
    return [
        {mid: np.asarray(b["row"]) for mid, b in mb.policy_batches.items()}
        for mb in MiniBatchCyclicIterator(batch, **kw)
    ]


@pytest.mark.parametrize(
    "sizes,minibatch_size,num_epochs",
    [
        ({"p": 1040}, 128, 30),  # RLlib's Pendulum example: 244 minibatches
        ({"p": 400}, 100, 2),  # divides: the wrap lands exactly at the end
        ({"p": 50}, 128, 3),  # a minibatch longer than the batch wraps more than once
        ({"a": 300, "b": 170}, 64, 4),  # modules of different sizes cover epochs apart
    ],
)
@pytest.mark.parametrize("shuffle", [True, False])
def test_the_same_rows_in_the_same_order_as_rllibs_iterator(
    sizes, minibatch_size, num_epochs, shuffle
):
    kw = dict(num_epochs=num_epochs, minibatch_size=minibatch_size)
    np.random.seed(3)
    theirs = _rllib_rows(sizes, shuffle_batch_per_epoch=shuffle, **kw)
    after_theirs = np.random.random()
    np.random.seed(3)
    ours = list(cyclic_indices(sizes, shuffle=shuffle, **kw))
    assert np.random.random() == after_theirs  # the generator was drawn the same way
    assert len(ours) == len(theirs) >= num_epochs * max(sizes.values()) // minibatch_size
    for mine, rllib in zip(ours, theirs, strict=True):
        assert mine.keys() == rllib.keys()
        for mid in mine:
            assert len(mine[mid]) == minibatch_size
            np.testing.assert_array_equal(mine[mid], rllib[mid])


def test_an_empty_batch_or_minibatch_is_an_error_not_an_endless_loop():
    with pytest.raises(ValueError, match="empty"):
        next(cyclic_indices({"p": 0}, num_epochs=1, minibatch_size=4, shuffle=False))
    with pytest.raises(ValueError, match="minibatch_size"):
        next(cyclic_indices({"p": 8}, num_epochs=1, minibatch_size=0, shuffle=False))
