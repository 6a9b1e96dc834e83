"""Chapter 05's momentum exercise: the check passes the right step (in either of its usual forms) and fails every
planted wrong one, naming the step where it left the reference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers.chapters import mlp, momentum

DATA = mlp.load_digits_split()
START = mlp.init_params(DATA.n_features, 16, DATA.n_classes, seed=0)
ORDER = mlp.batch_order(len(DATA.y_train), 32, 1, seed=0)[0]
LR, MU = 0.2, 0.9


def _loss(params, x, y):
    hidden = jax.nn.relu(x @ params["W1"] + params["b1"])
    scores = hidden @ params["W2"] + params["b2"]
    return -jnp.take_along_axis(jax.nn.log_softmax(scores, axis=1), y[:, None], axis=1).mean()


def _step(velocity_rule, param_rule):
    @jax.jit
    def step(params, velocity, x, y):
        loss_value, grads = jax.value_and_grad(_loss)(params, x, y)
        new_velocity = {k: velocity_rule(velocity[k], grads[k], params[k]) for k in params}
        new_params = {k: param_rule(params[k], new_velocity[k], grads[k]) for k in params}
        return new_params, new_velocity, loss_value
    return step


RIGHT = _step(lambda v, g, p: MU * v + g, lambda p, v, g: p - LR * v)


@pytest.mark.parametrize("step", [RIGHT, _step(lambda v, g, p: MU * v + LR * g, lambda p, v, g: p - v)],
                         ids=["velocity of gradients", "velocity of steps"])
def test_the_right_step_passes_in_either_usual_form(step, capsys) -> None:
    assert momentum.check(step, DATA, START, ORDER, LR, MU)
    assert capsys.readouterr().out.startswith("✅ momentum_step, 30 steps")


@pytest.mark.parametrize(("step", "where"), [
    (_step(lambda v, g, p: v, lambda p, v, g: p - LR * g), "step 2 of 30"),  # plain SGD: the velocity is ignored
    (_step(lambda v, g, p: MU * v + g, lambda p, v, g: p + LR * v), "step 1 of 30"),  # uphill
    (_step(lambda v, g, p: MU * v + g + 1e-3 * p, lambda p, v, g: p - LR * v), "step 1 of 30"),  # weight decay too
    (_step(lambda v, g, p: MU * v + g, lambda p, v, g: p - LR * (g + MU * v)), "step 1 of 30"),  # Nesterov
    (_step(lambda v, g, p: g, lambda p, v, g: p - LR * v), "step 2 of 30"),  # no memory: MU forgotten
    (_step(lambda v, g, p: MU * v + g, lambda p, v, g: p - LR * v * (1 + 1e-3)), "step 1 of 30"),  # a little off
])
def test_every_planted_wrong_step_fails_and_says_where(step, where, capsys) -> None:
    assert not momentum.check(step, DATA, START, ORDER, LR, MU)
    out = capsys.readouterr().out
    assert out.startswith("❌") and where in out


def test_a_velocity_never_handed_back_fails_at_the_second_step(capsys) -> None:
    @jax.jit
    def forgetful(params, velocity, x, y):
        loss_value, grads = jax.value_and_grad(_loss)(params, x, y)
        new_velocity = {k: MU * velocity[k] + grads[k] for k in params}
        return {k: params[k] - LR * new_velocity[k] for k in params}, velocity, loss_value

    assert not momentum.check(forgetful, DATA, START, ORDER, LR, MU)
    assert "step 2 of 30" in capsys.readouterr().out


@pytest.mark.parametrize(("step", "message"), [
    (lambda p, v, x, y: (p, v), "returned a tuple of 2; expected a tuple of 3"),
    (lambda p, v, x, y: ({"W1": p["W1"]}, v, 1.0), "the new params must be a dict with one array per parameter"),
    (lambda p, v, x, y: (p, {k: a[:1] for k, a in v.items()}, 1.0),
     "in the new velocity, W1, b1, W2, b2 changed shape"),
    (lambda p, v, x, y: 1 / 0, "ZeroDivisionError"),
    ("momentum_step", "expected a function, got str"),
])
def test_a_step_of_the_wrong_kind_gets_a_verdict_not_a_traceback(step, message, capsys) -> None:
    assert not momentum.check(step, DATA, START, ORDER, LR, MU)
    out = capsys.readouterr().out
    assert out.startswith("❌") and message in out


def test_the_stub_is_not_attempted_yet(capsys) -> None:
    def stub(params, velocity, x, y):
        raise NotImplementedError

    assert not momentum.check(stub, DATA, START, ORDER, LR, MU)
    assert capsys.readouterr().out.startswith("⏳")


def test_the_reference_is_plain_sgd_without_momentum() -> None:
    after, losses = momentum.reference(DATA, START, ORDER, LR, 0.0, steps=3)
    p = dict(START)
    for s in range(3):
        loss, p = mlp.numpy_step(p, DATA.x_train[ORDER[s]], DATA.y_train[ORDER[s]], LR)[::-1]
        assert losses[s] == pytest.approx(float(loss))
        for name in mlp.PARAM_NAMES:
            np.testing.assert_allclose(after[s][name], p[name], rtol=1e-6, atol=1e-7)
