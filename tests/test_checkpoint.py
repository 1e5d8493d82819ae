"""softlin.checkpoint: bit-exact round trip, the previous checkpoint kept and used when the last
fails to load, another settings' file ignored, the fingerprint's invariances, the signal guard."""
import os
import signal

import numpy as np
import pytest

from softlin import checkpoint, online, optim
from softlin._jax import jnp
from softlin.params import Params


def _state(seed, step):
    rng = np.random.default_rng(seed)
    p = {"softmax": Params(jnp.asarray(rng.normal(size=(2, 3, 3))), jnp.asarray(rng.normal(size=(2, 3))))}
    opt = {"softmax": optim.OptState(*(Params(jnp.asarray(rng.normal(size=(2, 3, 3))),
                                              jnp.asarray(rng.normal(size=(2, 3)))) for _ in range(2)))}
    return online.State(p, opt, jnp.asarray(step)), {"softmax": rng.normal(size=(2, step))}


def _leaves(state):
    return [np.asarray(x) for x in (*state.params["softmax"], *state.opt["softmax"].m,
                                    *state.opt["softmax"].v, state.step)]


def test_round_trip_is_bit_exact_and_keeps_the_previous_checkpoint(tmp_path):
    ck, fp = tmp_path / "L5.npz", checkpoint.fingerprint(a=1)
    first, loss1 = _state(0, 3)
    second, loss2 = _state(1, 6)
    checkpoint.save_checkpoint(ck, first, loss1, fp)
    checkpoint.save_checkpoint(ck, second, loss2, fp)
    assert checkpoint.previous_checkpoint(ck) == tmp_path / "L5.prev.npz"
    got, losses = checkpoint.load_checkpoint(ck, _state(9, 1)[0], fp)
    for a, b in zip(_leaves(got), _leaves(second)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert losses["softmax"].tobytes() == loss2["softmax"].tobytes()
    assert checkpoint.load_checkpoint(ck, first, checkpoint.fingerprint(a=2)) is None   # other settings
    assert checkpoint.load_checkpoint(tmp_path / "none.npz", first, fp) is None
    ck.write_bytes(ck.read_bytes()[:64])                                             # the last one broken
    said = []
    with pytest.warns(RuntimeWarning, match="does not load"):
        got, losses = checkpoint.load_checkpoint(ck, first, fp, report=said.append)
    assert [a.tobytes() for a in _leaves(got)] == [b.tobytes() for b in _leaves(first)]
    assert str(ck) in said[0] and not ck.exists()                                    # set aside, named


def test_fingerprint_ignores_keyword_order_and_sees_every_value():
    a = checkpoint.fingerprint(L=10, lr=0.1, opt={"b": 1, "a": 2})
    assert a == checkpoint.fingerprint(opt={"a": 2, "b": 1}, lr=0.1, L=10)
    assert len(a) == 16 and int(a, 16) >= 0
    assert a != checkpoint.fingerprint(L=10, lr=0.1, opt={"b": 1, "a": 3})


def test_stop_records_a_signal_and_restores_the_handler():
    before = signal.getsignal(signal.SIGINT)
    with checkpoint.Stop() as stop:
        assert stop.wait(jnp.ones(3)) is False                    # computed, no signal
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.signum == signal.SIGINT and stop.wait(jnp.ones(3)) is True
    assert signal.getsignal(signal.SIGINT) is before
