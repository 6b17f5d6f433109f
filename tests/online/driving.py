"""Driving a learner by hand, as the replay does, on questions drawn from a world's features."""
import numpy as np


def play_sessions(learner, state, feats, users: int, seed: int, rounds: int):
    """`users` sessions of `rounds` questions (drawn from feats with `seed`, clicks too); returns the state
    after them and the pairs shown."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(users):
        state, _ = learner.start_session(state, rng)
        for _ in range(rounds):
            Phi = feats[rng.integers(len(feats))]
            pair, _ = learner.select(state, Phi, rng)
            pairs.append(pair)
            state, _ = learner.update(state, Phi, pair, int(rng.integers(2)))
        state, _ = learner.end_session(state)
    return state, pairs
