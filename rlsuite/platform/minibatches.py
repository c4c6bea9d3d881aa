"""RLlib's minibatch cycle as index arrays: the same rows, in the same order, without
slicing and concatenating ``SampleBatch`` objects.

RLlib's ``MiniBatchCyclicIterator`` walks each module's batch in minibatches of a fixed
size. A minibatch that runs past the end takes the rest of the batch, counts one epoch
covered, shuffles the whole batch in place (``np.random.permutation``, when shuffling) and
goes on from its start; iteration stops once every module has covered ``num_epochs``
epochs. So a 1,040-row batch in minibatches of 128 over 30 epochs gives 244 minibatches,
and the last one's tail already comes from the 31st shuffle.

:func:`cyclic_indices` yields, per minibatch, each module's row indices into the batch as
it was handed over. It draws the same permutations from numpy's global generator, in the
same order, so from the same generator state the rows match RLlib's one for one (a unit
test holds it to RLlib's iterator). Taking rows is then one index-select per column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np


def cyclic_indices(
    sizes: Mapping[str, int], *, num_epochs: int, minibatch_size: int, shuffle: bool
) -> Iterator[dict[str, np.ndarray]]:
    """Per minibatch, each module's row indices (``sizes``: each module's row count).

    ``shuffle`` is RLlib's ``shuffle_batch_per_epoch and num_epochs > 1``."""
    if minibatch_size < 1:
        raise ValueError(f"minibatch_size must be at least 1, got {minibatch_size}")
    for mid, n in sizes.items():
        if n < 1:
            raise ValueError(f"the batch of module {mid!r} is empty: nothing to train on")
    order = {mid: np.arange(n) for mid, n in sizes.items()}
    start = dict.fromkeys(sizes, 0)
    covered = dict.fromkeys(sizes, 0)
    while min(covered.values()) < num_epochs:
        minibatch = {}
        for mid, n in sizes.items():
            s, need, parts = start[mid], minibatch_size, []
            while s + need >= n:  # RLlib's test: a minibatch that ends at n wraps too
                parts.append(order[mid][s:])
                need -= n - s
                s = 0
                covered[mid] += 1
                if shuffle:  # SampleBatch.shuffle: row i becomes row perm[i]
                    order[mid] = order[mid][np.random.permutation(n)]
            if need > 0:
                parts.append(order[mid][s : s + need])
            minibatch[mid] = parts[0] if len(parts) == 1 else np.concatenate(parts)
            start[mid] = s + need
        yield minibatch
