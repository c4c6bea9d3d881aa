"""R2D2's and R2D3's own pieces, pure functions over arrays (numpy or torch).

RLlib 2.60's DQN can train an LSTM Q-network (``burn_in_len``, each chunk starting
from the stored state); what R2D2 (Kapturowski et al. 2019) and R2D3 (Paine et al.
2019) add on top, and RLlib lacks, is here:

    rescale    the value rescaling h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x and its
               inverse, for the n-step targets
    sequences  episodes cut into sequences of m steps overlapping by m/2, each with
               b burn-in steps before it and the recurrent state stored at its first
               step; a sequence's priority eta max|d| + (1 - eta) mean|d|
    demos      R2D3's replay of demonstrations: each element of a batch drawn from
               the demonstrations with probability rho (``demo_ratio``), and DQfD's
               large-margin loss on demonstrated steps (an option; R2D3 has none)

Wired into plans (the ``demonstrations`` and ``demo_ratio`` fields):

    demo_replay     ``replay``: a buffer standing in for RLlib's DQN buffer mixes the
                    demonstrations into each of its samples
    demo_apex       ``apex``: the learner mixes them into each shard sample
    margin_learner  RLlib's DQN learner plus DQfD's term (``large_margin_coeff``, both plans)

The ``r2d2`` plan (recurrent sequence replay on ``apex``):

    plan       R2D2Plan: its fields and checks
    actors     runner side: sequences built as the steps come in, their initial
               priorities, pushed through Ape-X's actor step
    unroll     burn-in from the stored state without gradient; n-step double-Q targets
               inside each sequence, with h
    algorithm  RLlib's DQN LSTM module and learner with R2D2's forward pass and loss, on
               Ape-X's training step; R2D3 (demonstration sequences); what is RLlib's
               and what is ours
"""
