"""One small multilayer perceptron, written four ways: NumPy (CuPy through the array module), JAX and Keras.

The data (scikit-learn's bundled 8x8 digits: no download), the initial weights and the order of the
mini-batches are made once, from fixed seeds, and fed to every backend, so their loss curves can be compared
step by step. Chapter 05 trains them; `helpers.chapters.training` holds the loop, the timing and the predictions.

    data = mlp.load_digits_split()                 # 1,347 training and 450 test images, stratified
    params = mlp.init_params(64, 64, 10)           # one seeded start: {"W1", "b1", "W2", "b2"} in NumPy
    order = mlp.batch_order(len(data.y_train), batch_size=32, epochs=10)
    loss, grads = mlp.loss_and_grads(params, data.x_train[:32], data.y_train[:32])   # by hand
    step = mlp.jax_step(lr=0.1)                    # the same step from jax.grad, compiled with jit
    model = mlp.keras_model(params, lr=0.1)        # Keras 3 on the JAX backend, with the same weights
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from ..core.backend import array_module
from ..core.validate import finite, positive_int
from ..core.validate import seed as valid_seed

#: The parameters of the network, in the order Keras' `get_weights()` lists them: kernel, bias, kernel, bias.
#: Kernels are (inputs, outputs), so a layer is `x @ W + b`, as in Keras' Dense.
PARAM_NAMES = ("W1", "b1", "W2", "b2")
#: Dtypes the JAX step can do its matrix products in (the weights and the loss stay float32).
COMPUTE_DTYPES = ("float32", "bfloat16")

Params = dict[str, Any]


# ---------------------------------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class Digits:
    """scikit-learn's handwritten digits, split into train and test: pixels in [0, 1], labels 0 to 9."""

    x_train: np.ndarray  # (n_train, 64) float32
    y_train: np.ndarray  # (n_train,) int32
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_features(self) -> int:
        """Inputs per image: 8 x 8 = 64 pixels."""
        return self.x_train.shape[1]

    @property
    def n_classes(self) -> int:
        """Number of labels (10 digits)."""
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    def __str__(self) -> str:
        return (f"{len(self.y_train):,} training and {len(self.y_test):,} test images of {self.n_features} pixels, "
                f"{self.n_classes} classes")


def load_digits_split(test_fraction: float = 0.25, seed: int = 0) -> Digits:
    """The 1,797 digits bundled with scikit-learn, split with a fixed seed and stratified (same class mix).

    Pixels (0 to 16) are divided by 16, so every input lies in [0, 1] whatever the split.
    """
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, Real) or not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be a number between 0 and 1 (exclusive), got {test_fraction!r}")
    seed = valid_seed(seed)
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    n, classes = len(digits.target), len(np.unique(digits.target))
    n_test = math.ceil(test_fraction * n)  # as scikit-learn counts it
    if min(n_test, n - n_test) < classes:  # a stratified split needs every class on both sides
        raise ValueError(f"test_fraction={test_fraction!r} leaves {min(n_test, n - n_test)} of the {n:,} digits on "
                         f"one side, fewer than the {classes} classes: use a value between {classes / n:.4f} and "
                         f"{1 - classes / n:.4f}")
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    return Digits(x_train, y_train, x_test, y_test)


def init_params(n_in: int = 64, hidden: int = 64, n_out: int = 10, seed: int = 0, dtype: str = "float32") -> Params:
    """The one starting point every backend shares: He-normal kernels (good for ReLU), zero biases, NumPy arrays."""
    n_in, hidden, n_out = (positive_int(name, v) for name, v in (("n_in", n_in), ("hidden", hidden),
                                                                   ("n_out", n_out)))
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    rng = np.random.default_rng(valid_seed(seed))
    return {
        "W1": (rng.standard_normal((n_in, hidden)) * np.sqrt(2.0 / n_in)).astype(dtype),
        "b1": np.zeros(hidden, dtype),
        "W2": (rng.standard_normal((hidden, n_out)) * np.sqrt(2.0 / hidden)).astype(dtype),
        "b2": np.zeros(n_out, dtype),
    }


def check_params(params: Mapping[str, Any]) -> tuple[int, int, int]:
    """(n_in, hidden, n_out) of a parameter dict; a ValueError naming what is missing or mis-shaped."""
    if not isinstance(params, Mapping) or set(params) != set(PARAM_NAMES):
        found = sorted(params) if isinstance(params, Mapping) else type(params).__name__
        raise ValueError(f"params must be a dict with keys {', '.join(PARAM_NAMES)} (from init_params); got {found}")
    shapes = {k: tuple(np.shape(params[k])) for k in PARAM_NAMES}  # np.shape: lists too, and every backend
    if len(shapes["W1"]) != 2 or len(shapes["W2"]) != 2:
        raise ValueError(f"W1 and W2 must be 2-D (inputs, outputs); got shapes {shapes}")
    (n_in, hidden), n_out = shapes["W1"], shapes["W2"][1]
    if shapes != {"W1": (n_in, hidden), "b1": (hidden,), "W2": (hidden, n_out), "b2": (n_out,)}:
        raise ValueError(f"parameter shapes do not fit together: {shapes}; expected W1 (in, hidden), b1 (hidden,), "
                         "W2 (hidden, out), b2 (out,)")
    return n_in, hidden, n_out


def batch_order(n_samples: int, batch_size: int, epochs: int, seed: int = 0) -> np.ndarray:
    """Which samples go in which mini-batch: an (epochs, steps, batch_size) int32 array, reshuffled every epoch.

    Made once and given to every backend, so they all see the same batches in the same order. The last,
    incomplete batch of an epoch is dropped: every step has the same shape (JAX compiles once per shape).
    """
    n_samples, batch_size, epochs = (positive_int(name, v) for name, v in (
        ("n_samples", n_samples), ("batch_size", batch_size), ("epochs", epochs)))
    if batch_size > n_samples:
        raise ValueError(f"batch_size {batch_size:,} is larger than the {n_samples:,} training samples")
    steps = n_samples // batch_size
    rng = np.random.default_rng(valid_seed(seed))
    return np.stack([rng.permutation(n_samples)[:steps * batch_size].reshape(steps, batch_size)
                     for _ in range(epochs)]).astype(np.int32)


# ------------------------------------------------------------------------- forward and backward, by hand


def _xp(*arrays: Any) -> Any:
    from ..core.backend import detect

    return array_module(detect(arrays))


def dense_forward(x: Any, W: Any, b: Any) -> Any:
    """A dense layer: x (batch, in) @ W (in, out) + b (out,) -> (batch, out)."""
    return x @ W + b


def dense_backward(dout: Any, x: Any, W: Any, input_grad: bool = True) -> tuple[Any, Any, Any]:
    """Gradients of a dense layer from the gradient of its output: (dx, dW, db).

    y = x @ W + b, so dL/dx = dout @ W.T, dL/dW = x.T @ dout, dL/db = dout summed over the batch.
    input_grad=False skips dx (None): the first layer's input is the data, which needs no gradient.
    """
    return dout @ W.T if input_grad else None, x.T @ dout, dout.sum(axis=0)


def softmax_cross_entropy(logits: Any, y: Any, xp: Any = None) -> tuple[Any, Any]:
    """Mean cross-entropy of softmax(logits) against integer labels y, and its gradient with respect to logits.

    The gradient is (softmax - one-hot) / batch. The largest logit is subtracted first, so exp cannot overflow.
    """
    xp = xp or _xp(logits)
    batch, classes = logits.shape
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
    onehot = xp.eye(classes, dtype=logits.dtype)[y]
    loss = -(onehot * log_probs).sum() / batch
    return loss, (xp.exp(log_probs) - onehot) / batch


def logits(params: Params, x: Any) -> Any:
    """The network's output scores: dense, ReLU, dense."""
    hidden = dense_forward(x, params["W1"], params["b1"])
    return dense_forward(hidden * (hidden > 0), params["W2"], params["b2"])


def loss_and_grads(params: Params, x: Any, y: Any, xp: Any = None) -> tuple[Any, Params]:
    """The loss on one mini-batch and its gradient for every parameter: the forward and backward pass by hand.

    Works on NumPy, CuPy and jax.numpy arrays alike (`xp` is their module; found from `x` when not given).
    """
    xp = xp or _xp(x)
    pre = dense_forward(x, params["W1"], params["b1"])
    relu = pre * (pre > 0)
    out = dense_forward(relu, params["W2"], params["b2"])
    loss, dout = softmax_cross_entropy(out, y, xp)
    drelu, dW2, db2 = dense_backward(dout, relu, params["W2"])
    _, dW1, db1 = dense_backward(drelu * (pre > 0), x, params["W1"], input_grad=False)
    return loss, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}


def sgd_update(params: Params, grads: Params, lr: float) -> Params:
    """Plain stochastic gradient descent: every parameter moves lr times its gradient downhill."""
    return {name: params[name] - lr * grads[name] for name in PARAM_NAMES}


def numpy_step(params: Params, x: Any, y: Any, lr: float, xp: Any = None) -> tuple[Params, Any]:
    """One training step by hand (NumPy or CuPy): (new parameters, loss before the update)."""
    loss, grads = loss_and_grads(params, x, y, xp)
    return sgd_update(params, grads, lr), loss


# ----------------------------------------------------------------------------------------------------- JAX


def jax_loss(params: Params, x: Any, y: Any, compute_dtype: str = "float32") -> Any:
    """The same loss in jax.numpy, for jax.grad. bfloat16: the products in bfloat16, the loss in float32."""
    import jax
    import jax.numpy as jnp

    _check_compute_dtype(compute_dtype)
    dtype = jnp.dtype(compute_dtype)
    hidden = jax.nn.relu(x.astype(dtype) @ params["W1"].astype(dtype) + params["b1"].astype(dtype))
    out = (hidden @ params["W2"].astype(dtype) + params["b2"].astype(dtype)).astype(jnp.float32)
    log_probs = jax.nn.log_softmax(out, axis=1)
    return -jnp.take_along_axis(log_probs, y[:, None], axis=1).mean()


def _check_compute_dtype(compute_dtype: str) -> None:
    if compute_dtype not in COMPUTE_DTYPES:
        raise ValueError(f"compute_dtype must be one of {', '.join(COMPUTE_DTYPES)}; got {compute_dtype!r}")


def _check_lr(lr: Any) -> float:
    if not finite(lr) or lr <= 0:
        raise ValueError(f"the learning rate lr must be a positive number, got {lr!r:.40}")
    return float(lr)


def jax_step(lr: float, compute_dtype: str = "float32") -> Callable[[Params, Any, Any], tuple[Params, Any]]:
    """One training step from `jax.grad`, compiled with `jit`: (params, x, y) -> (new params, loss).

    Each call of jax_step makes a new compiled function, so its first call pays the compile time again.
    """
    import jax

    lr = _check_lr(lr)
    _check_compute_dtype(compute_dtype)

    def step(params: Params, x: Any, y: Any) -> tuple[Params, Any]:
        loss, grads = jax.value_and_grad(jax_loss)(params, x, y, compute_dtype)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    return jax.jit(step)


def jax_epoch(lr: float, compute_dtype: str = "float32") -> Callable[[Params, Any, Any], tuple[Params, Any]]:
    """A whole epoch in one compiled call (`lax.scan` over the steps): (params, xs, ys) -> (params, losses).

    xs is (steps, batch, inputs). Python is not involved between steps, so there is one dispatch per epoch.
    """
    import jax

    lr = _check_lr(lr)
    _check_compute_dtype(compute_dtype)

    def step(params: Params, batch: tuple[Any, Any]) -> tuple[Params, Any]:
        loss, grads = jax.value_and_grad(jax_loss)(params, *batch, compute_dtype)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    return jax.jit(lambda params, xs, ys: jax.lax.scan(step, params, (xs, ys)))


# --------------------------------------------------------------------------------------------------- Keras


def keras_jax() -> Any:
    """Keras 3 on the JAX backend. Sets KERAS_BACKEND=jax before the first import of keras.

    Keras picks its backend once, at import; if it was already imported with another backend (Colab sometimes
    preloads a TensorFlow-backed Keras), a RuntimeError says to restart the runtime.
    """
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "jax"
    import keras

    backend = keras.backend.backend()
    if backend != "jax":
        raise RuntimeError(f"Keras was already imported with the {backend!r} backend; this chapter needs the JAX "
                           "backend, and Keras picks its backend only once, at import. Restart the runtime "
                           "(Colab: Runtime > Restart session), then run the notebook from the top: the helpers set "
                           "KERAS_BACKEND=jax before Keras is imported.")
    return keras


def keras_model(params: Params, lr: float) -> Any:
    """A basic Keras model of the same network, holding the same weights, with plain SGD at the same lr.

    Dense(ReLU), Dense; softmax cross-entropy on the logits (mean over the batch), as in `loss_and_grads`.
    """
    keras = keras_jax()
    lr = _check_lr(lr)
    n_in, hidden, n_out = check_params(params)
    model = keras.Sequential([keras.Input((n_in,)), keras.layers.Dense(hidden, activation="relu"),
                              keras.layers.Dense(n_out)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.set_weights([np.asarray(params[name], dtype=np.float32) for name in PARAM_NAMES])
    return model


def keras_params(model: Any) -> Params:
    """A Keras model's weights as our parameter dict of NumPy arrays."""
    return dict(zip(PARAM_NAMES, (np.asarray(w.value) for w in model.weights), strict=True))
