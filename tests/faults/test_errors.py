"""Bad inputs raise ValueError with a message naming the problem."""
import numpy as np
import pytest

from softlin import models, population, train
from softlin import params as P
from softlin import tasks as T
from softlin.params import Params

from helpers import ANISO


@pytest.fixture(scope="module")
def t():
    return T.sample(1, 3, ANISO, n_pairs=2, n_query=2, l_max=8)


@pytest.fixture(scope="module")
def p0():
    return P.init_eq9(ANISO)


@pytest.mark.parametrize("model", ["softmax", "linear", "limit"])
@pytest.mark.parametrize("shapes", [((3, 3), (4,)), ((4, 4), (3,)), ((4, 4), (4, 1)), ((5, 5), (5,))])
def test_wrong_param_shapes(t, model, shapes):
    bad = Params(np.zeros(shapes[0]), np.zeros(shapes[1]))
    for fn in (models.risk, models.risk_and_grad, models.predict):
        with pytest.raises(ValueError, match="params must have U"):
            fn(model, bad, t, 4)
    with pytest.raises(ValueError, match="params must have U"):
        train.gradient_descent(model, bad, t, L=4, steps=2, record_every=1)


@pytest.mark.parametrize("sigma,match", [
    (np.diag([1.0, -1.0, 2.0]), "positive definite"),
    (np.diag([1.0, 0.0, 2.0]), "positive definite"),
    (np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "symmetric"),
    (np.ones((3, 2)), "square"),
    (np.eye(2), r"expected \(3, 3\)"),
])
def test_bad_sigma(sigma, match):
    with pytest.raises(ValueError, match=match):
        T.sample(0, 3, sigma, n_pairs=1, n_query=1, l_max=2)
    if sigma.shape == (3, 3):
        with pytest.raises(ValueError, match=match):
            P.init_eq9(sigma)
        with pytest.raises(ValueError, match=match):
            population.bayes_optimum(sigma)


@pytest.mark.parametrize("kw,match", [
    (dict(n_pairs=0), "n_pairs"), (dict(n_query=1.5), "n_query"), (dict(l_max=-3), "l_max"),
    (dict(token_kind="cauchy"), "token_kind"),
])
def test_bad_sampling_arguments(kw, match):
    args = dict(seed=0, d=3, sigma=np.eye(3), n_pairs=1, n_query=1, l_max=2) | kw
    with pytest.raises(ValueError, match=match):
        T.sample(**args)


@pytest.mark.parametrize("model", ["softmax", "linear"])
@pytest.mark.parametrize("L", [0, 9, -1, 2.5, None])
def test_bad_prompt_length(t, p0, model, L):
    with pytest.raises(ValueError, match="L must be|needs a prompt length"):
        models.risk(model, p0, t, L)
    with pytest.raises(ValueError, match="L must be|needs a prompt length"):
        train.gradient_descent(model, p0, t, L=L, steps=2, record_every=1)


def test_unknown_model(t, p0):
    for fn in (models.risk, models.risk_and_grad, models.predict):
        with pytest.raises(ValueError, match="unknown model 'attention'"):
            fn("attention", p0, t, 4)
    with pytest.raises(ValueError, match="unknown model"):
        train.gradient_descent("Softmax", p0, t, L=4, steps=2, record_every=1)


@pytest.mark.parametrize("kw,match", [
    (dict(convention="flow"), "convention"),
    (dict(steps=25, record_every=20), "record_every must be a positive divisor"),
    (dict(steps=20, record_every=0), "record_every"),
    (dict(steps=0), "steps must be a positive integer"),
    (dict(lr=-0.01), "lr must be positive"),
    (dict(lr=0.0), "lr must be positive"),
    (dict(lr=float("nan")), "lr must be positive"),
])
def test_bad_schedule(t, p0, kw, match):
    args = dict(L=4, lr=0.01, steps=20, record_every=10) | kw
    with pytest.raises(ValueError, match=match):
        train.gradient_descent("linear", p0, t, **args)


@pytest.mark.parametrize("L", [0, 9, 3.5])
def test_with_length_bad_L(t, L):
    data = models.prompt_data(t, 4)
    with pytest.raises(ValueError, match="L must be"):
        models.with_length(data, L)
