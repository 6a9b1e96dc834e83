"""helpers.chapters.mlp: the data split, the shared start, the hand-written backward pass against jax.grad, Keras."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers.chapters import mlp
from helpers.measuring import workloads


@pytest.fixture(scope="module")
def data() -> mlp.Digits:
    return mlp.load_digits_split()


@pytest.fixture
def batch(data: mlp.Digits) -> tuple[np.ndarray, np.ndarray]:
    return data.x_train[:17], data.y_train[:17]  # an odd batch size on purpose


# ---------------------------------------------------------------------------------------------------- data


def test_split_is_deterministic_stratified_and_scaled(data: mlp.Digits) -> None:
    again = mlp.load_digits_split()
    assert all(np.array_equal(a, b) for a, b in zip(
        (data.x_train, data.y_train, data.x_test, data.y_test),
        (again.x_train, again.y_train, again.x_test, again.y_test), strict=True))
    assert (len(data.y_train), len(data.y_test), data.n_features, data.n_classes) == (1347, 450, 64, 10)
    assert data.x_train.dtype == np.float32 and data.y_train.dtype == np.int32
    assert data.x_train.min() == 0.0 and data.x_train.max() == 1.0
    train_share = np.bincount(data.y_train) / len(data.y_train)
    test_share = np.bincount(data.y_test) / len(data.y_test)
    assert np.abs(train_share - test_share).max() < 0.005, "the class mix of train and test should match"
    other = mlp.load_digits_split(seed=1)
    assert not np.array_equal(other.y_test, data.y_test), "another seed should give another split"
    assert str(data) == "1,347 training and 450 test images of 64 pixels, 10 classes"


@pytest.mark.parametrize("bad", [0, 1, -0.2, 1.5, "0.25", True])
def test_split_rejects_a_bad_test_fraction(bad: object) -> None:
    with pytest.raises(ValueError, match="test_fraction must be a number between 0 and 1"):
        mlp.load_digits_split(test_fraction=bad)


def test_init_params_are_seeded_and_shaped() -> None:
    params = mlp.init_params(64, 7, 10, seed=3)
    assert {k: v.shape for k, v in params.items()} == {"W1": (64, 7), "b1": (7,), "W2": (7, 10), "b2": (10,)}
    assert all(v.dtype == np.float32 for v in params.values())
    assert all(np.array_equal(params[k], mlp.init_params(64, 7, 10, seed=3)[k]) for k in mlp.PARAM_NAMES)
    assert not np.array_equal(params["W1"], mlp.init_params(64, 7, 10, seed=4)["W1"])
    assert not params["b1"].any() and params["W1"].std() == pytest.approx(np.sqrt(2 / 64), rel=0.2)
    assert mlp.check_params(params) == (64, 7, 10)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"hidden": 0}, "hidden must be a positive integer"),
    ({"n_in": 2.5}, "n_in must be a positive integer"),
    ({"dtype": "int8"}, "dtype must be 'float32' or 'float64'"),
])
def test_init_params_rejects_bad_sizes(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mlp.init_params(**kwargs)


def test_check_params_names_what_is_wrong() -> None:
    params = mlp.init_params(8, 4, 3)
    with pytest.raises(ValueError, match="keys W1, b1, W2, b2"):
        mlp.check_params({"W1": params["W1"]})
    with pytest.raises(ValueError, match="do not fit together"):
        mlp.check_params({**params, "b1": np.zeros(5)})
    with pytest.raises(ValueError, match="W1 and W2 must be 2-D"):
        mlp.check_params({**params, "W1": [1.0, 2.0]})  # a list: named by its shape, not an AttributeError


def test_batch_order_is_shared_reshuffled_and_complete_batches_only() -> None:
    order = mlp.batch_order(100, 32, 3, seed=5)
    assert order.shape == (3, 3, 32) and order.dtype == np.int32
    for epoch in order:
        assert len(np.unique(epoch)) == 96, "no sample twice in one epoch"
    assert not np.array_equal(order[0], order[1]), "every epoch is reshuffled"
    assert np.array_equal(order, mlp.batch_order(100, 32, 3, seed=5))
    with pytest.raises(ValueError, match="larger than the 100 training samples"):
        mlp.batch_order(100, 101, 1)
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        mlp.batch_order(100, 10, 0)


# ------------------------------------------------------------------------------------ the backward pass by hand


def test_hand_written_gradients_equal_jax_grad_in_float64(batch: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = batch
    params = mlp.init_params(64, 9, 10, seed=1, dtype="float64")
    params["b1"] = np.linspace(-0.3, 0.3, 9)  # non-zero biases, so every gradient is exercised
    loss, grads = mlp.loss_and_grads(params, x.astype(np.float64), y)
    with workloads.precision("jax", "float64"):  # jax.enable_x64, wherever this JAX keeps it
        def forward_loss(p: dict) -> jax.Array:  # the forward pass only: JAX differentiates it
            return mlp.softmax_cross_entropy(mlp.logits(p, jnp.asarray(x, jnp.float64)), jnp.asarray(y), jnp)[0]

        want_loss, want = jax.value_and_grad(forward_loss)({k: jnp.asarray(v) for k, v in params.items()})
        assert loss == pytest.approx(float(want_loss), rel=1e-12)
        for name in mlp.PARAM_NAMES:
            np.testing.assert_allclose(grads[name], np.asarray(want[name]), rtol=1e-9, atol=1e-12, err_msg=name)


def test_dense_backward_equals_jax_vjp() -> None:
    rng = np.random.default_rng(0)
    x, W, b, dout = (rng.standard_normal(s) for s in [(5, 3), (3, 4), (4,), (5, 4)])
    with workloads.precision("jax", "float64"):  # jax.enable_x64, wherever this JAX keeps it
        _, vjp = jax.vjp(mlp.dense_forward, jnp.asarray(x), jnp.asarray(W), jnp.asarray(b))
        want = vjp(jnp.asarray(dout))
    got = mlp.dense_backward(dout, x, W)
    for g, w, name in zip(got, want, ("dx", "dW", "db"), strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, err_msg=name)
    assert mlp.dense_backward(dout, x, W, input_grad=False)[0] is None


def test_softmax_cross_entropy_survives_huge_logits() -> None:
    logits = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]])
    loss, grad = mlp.softmax_cross_entropy(logits, np.array([0, 2]))
    assert loss == pytest.approx(np.log(3) / 2)
    np.testing.assert_allclose(grad, [[0, 0, 0], [1 / 6, 1 / 6, -1 / 3]], atol=1e-12)


def test_one_step_lowers_the_loss(batch: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = batch
    params = mlp.init_params()
    new, before = mlp.numpy_step(params, x, y, lr=0.2)
    after, _ = mlp.loss_and_grads(new, x, y)
    assert after < before
    assert all(new[k].dtype == np.float32 for k in mlp.PARAM_NAMES), "the step must stay in float32"


def test_numpy_and_jax_steps_agree(batch: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = batch
    params = mlp.init_params()
    ours, our_loss = mlp.numpy_step(params, x, y, lr=0.2)
    theirs, their_loss = mlp.jax_step(0.2)({k: jnp.asarray(v) for k, v in params.items()}, x, y)
    assert float(their_loss) == pytest.approx(float(our_loss), rel=1e-6)
    for name in mlp.PARAM_NAMES:
        np.testing.assert_allclose(np.asarray(theirs[name]), ours[name], rtol=1e-5, atol=1e-7, err_msg=name)


def test_jax_epoch_scans_the_same_steps(batch: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = batch
    params = {k: jnp.asarray(v) for k, v in mlp.init_params().items()}
    xs, ys = jnp.stack([x, x[::-1]]), jnp.stack([y, y[::-1]])
    step = mlp.jax_step(0.2)
    p1, l1 = step(params, xs[0], ys[0])
    p2, l2 = step(p1, xs[1], ys[1])
    scanned, losses = mlp.jax_epoch(0.2)(params, xs, ys)
    np.testing.assert_allclose(np.asarray(losses), [float(l1), float(l2)], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scanned["W1"]), np.asarray(p2["W1"]), rtol=1e-6, atol=1e-7)


def test_bfloat16_step_stays_close_and_keeps_float32_weights(batch: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = batch
    params = {k: jnp.asarray(v) for k, v in mlp.init_params().items()}
    new, loss = mlp.jax_step(0.2, "bfloat16")(params, x, y)
    _, exact = mlp.jax_step(0.2)(params, x, y)
    assert new["W1"].dtype == jnp.float32 and loss.dtype == jnp.float32
    assert float(loss) == pytest.approx(float(exact), rel=0.02)
    assert float(loss) != float(exact), "bfloat16 products should round differently from float32"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: mlp.jax_step(0), "learning rate lr must be a positive number"),
    (lambda: mlp.jax_step(float("nan")), "learning rate lr must be a positive number"),
    (lambda: mlp.jax_step(0.1, "float16"), "compute_dtype must be one of float32, bfloat16"),
    (lambda: mlp.jax_epoch(0.1, "int8"), "compute_dtype must be one of"),
])
def test_jax_steps_reject_bad_settings(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------------------------------- Keras


def test_keras_starts_from_our_weights_and_takes_our_first_step(batch: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = batch
    params = mlp.init_params(64, 16, 10)
    model = mlp.keras_model(params, lr=0.2)
    assert mlp.keras_jax().backend.backend() == "jax"
    start = mlp.keras_params(model)
    assert all(np.array_equal(start[k], params[k]) for k in mlp.PARAM_NAMES), "Keras must start where we start"
    keras_loss = model.train_on_batch(x, y)
    ours, our_loss = mlp.numpy_step(params, x, y, lr=0.2)
    assert keras_loss == pytest.approx(float(our_loss), rel=1e-6)
    after = mlp.keras_params(model)
    for name in mlp.PARAM_NAMES:
        np.testing.assert_allclose(after[name], ours[name], rtol=1e-5, atol=1e-7, err_msg=name)


def test_keras_model_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match="keys W1, b1, W2, b2"):
        mlp.keras_model({"W": np.zeros((2, 2))}, lr=0.1)


def test_keras_imported_with_another_backend_asks_for_a_restart() -> None:
    # A stand-in for a Keras that Colab preloaded with TensorFlow: importing the real one would take seconds.
    program = ("import sys, types\n"
               "tf_keras = types.SimpleNamespace(backend=types.SimpleNamespace(backend=lambda: 'tensorflow'))\n"
               "sys.modules['keras'] = tf_keras\n"
               "from helpers.chapters import mlp\n"
               "try:\n    mlp.keras_jax()\nexcept RuntimeError as exc:\n    print(exc)\n")
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"})
    assert ran.returncode == 0, ran.stderr
    assert "already imported with the 'tensorflow' backend" in ran.stdout and "Restart the runtime" in ran.stdout
