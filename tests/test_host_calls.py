"""The per-call host costs measured here, which price the GPU that is here (helpers.measuring.host_calls)."""

from __future__ import annotations

import pytest

from helpers.measuring import host_calls


def test_a_numpy_call_and_a_jitted_jax_call_cost_this_host_something_measurable() -> None:
    assert 0 < host_calls.numpy_call() < 0.01  # a hang guard, not a speed test: 10 ms for np.add of 8 floats
    assert 0 < host_calls.jax_call(6, 5) < 0.1


def test_without_a_gpu_there_is_no_cupy_call_to_measure() -> None:
    assert host_calls.cupy_call() is None


def test_host_calls_name_what_was_measured_and_where() -> None:
    here = host_calls.here(2, 1)
    assert here.cupy is None and here.arrays == (2, 1) and here.device == "cpu"
    text = str(here)
    assert text.startswith("measured on this host: no GPU for CuPy; a jitted JAX call with 2 arrays in and 1 out, "
                           "on cpu")


@pytest.mark.parametrize(("arrays_in", "arrays_out", "message"), [
    (0, 1, "arrays_in must be a positive integer"), (1, -2, "arrays_out must be a positive integer"),
    (65, 1, "at most 64"), ("6", 5, "arrays_in must be a positive integer"),
])
def test_a_jax_call_of_an_impossible_shape_is_refused_in_one_line(arrays_in, arrays_out, message) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        host_calls.jax_call(arrays_in, arrays_out)
