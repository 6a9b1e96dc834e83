"""helpers.tpu.systolic: exact products, cycle counts that match the closed form, one cycle's dataflow, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.tpu import systolic

RNG = np.random.default_rng(1234)
SHAPES = [(1, 1, 1), (1, 5, 1), (5, 1, 1), (1, 1, 5), (1, 6, 4), (6, 4, 1), (4, 4, 4), (3, 7, 2), (8, 3, 5),
          (2, 9, 9), (12, 5, 7)]


def ints(*shape: int, low: int = -50, high: int = 51) -> np.ndarray:
    return RNG.integers(low, high, size=shape)


@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
def test_exact_integer_product_on_a_k_by_n_grid(m: int, k: int, n: int) -> None:
    a, b = ints(m, k), ints(k, n)
    product, cycles = systolic.simulate(a, b)
    assert product.dtype == np.int64
    np.testing.assert_array_equal(product, a @ b)
    assert cycles == m + k + n - 2  # the weight-stationary closed form, written out independently


@pytest.mark.parametrize("grid", [1, 2, 3, (2, 5), (4, 1), 16])
@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (3, 7, 2), (5, 4, 6), (2, 9, 9), (1, 6, 4)])
def test_tiled_on_a_fixed_grid(m: int, k: int, n: int, grid: int | tuple[int, int]) -> None:
    a, b = ints(m, k), ints(k, n)
    rows, cols = (grid, grid) if isinstance(grid, int) else grid
    product, cycles = systolic.simulate(a, b, grid=grid)
    np.testing.assert_array_equal(product, a @ b)
    assert cycles == math.ceil(k / rows) * math.ceil(n / cols) * (m + rows + cols - 2)
    assert cycles == systolic.cycle_count(m, k, n, grid)


def test_129_needs_a_second_pass_of_the_128_grid() -> None:
    a, b = ints(2, 129, low=-3, high=4), ints(129, 3, low=-3, high=4)
    product, cycles = systolic.simulate(a, b, grid=128)
    np.testing.assert_array_equal(product, a @ b)
    assert cycles == 2 * (2 + 128 + 128 - 2)
    assert systolic.passes(128, 128) == 1 and systolic.passes(129, 128) == 2 and systolic.passes(129, 129) == 4


def test_floats_and_lists_are_accepted() -> None:
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    product, _ = systolic.simulate(a, b)
    assert product.dtype == np.float64
    np.testing.assert_allclose(product, a @ b, rtol=1e-12)
    assert systolic.simulate([[1, 2]], [[3], [4]]).product.tolist() == [[11]]


def test_result_unpacks_and_names_its_fields() -> None:
    result = systolic.simulate(np.eye(2, dtype=int), np.arange(4).reshape(2, 2))
    product, cycles = result
    assert result.cycles == cycles == 4 and result.product is product


def test_one_cycle_reads_only_the_neighbours_previous_registers() -> None:
    activation = np.array([[1, 2, 3], [4, 5, 6]])
    psum = np.array([[10, 20, 30], [40, 50, 60]])
    weights = np.array([[1, 0, 2], [3, 1, 1]])
    new_activation, new_psum = systolic.step(activation, psum, weights, left=np.array([7, 8]))
    np.testing.assert_array_equal(new_activation, [[7, 1, 2], [8, 4, 5]])  # shifted right, edge values in
    np.testing.assert_array_equal(new_psum, [[0 + 7 * 1, 0 + 1 * 0, 0 + 2 * 2],  # zero enters at the top
                                             [10 + 8 * 3, 20 + 4 * 1, 30 + 5 * 1]])  # from above + a * w
    np.testing.assert_array_equal(activation, [[1, 2, 3], [4, 5, 6]])  # the previous registers are untouched


@pytest.mark.parametrize(("shapes", "left"), [
    ([(2, 3), (2, 3), (3, 2)], (2,)), ([(2, 3)] * 3, (3,)), ([(3,)] * 3, (3,)), ([(2, 3)] * 3, (2, 1)),
])
def test_step_refuses_mismatched_registers(shapes: list[tuple[int, ...]], left: tuple[int, ...]) -> None:
    activation, psum, weights = (np.zeros(s, int) for s in shapes)
    with pytest.raises(ValueError, match=r"one 2-D shape \(rows, columns\) and left of shape \(rows,\)"):
        systolic.step(activation, psum, weights, np.zeros(left, int))


def test_history_follows_the_skewed_dataflow() -> None:
    a, b = ints(3, 4), ints(4, 2)
    shots = systolic.history(a, b)
    assert [s.cycle for s in shots] == list(range(3 + 4 + 2 - 1))
    assert shots[0].waiting.all() and not shots[0].active.any() and not shots[0].arrived.any()
    for s in shots[1:]:
        t = s.cycle - 1  # 0-based index of the cycle just run: A[m, k] sits in PE (k, n) when m = t - k - n
        for k in range(4):
            for n in range(2):
                m = t - k - n
                assert s.active[k, n] == (0 <= m < 3)
                if 0 <= m < 3:
                    assert s.activation[k, n] == a[m, k] and s.activation_row[k, n] == m
                    assert s.psum[k, n] == a[m, :k + 1] @ b[:k + 1, n]  # the running sum down column n
    np.testing.assert_array_equal(shots[-1].product, a @ b)
    assert shots[-1].arrived.all() and not shots[-1].waiting.any()
    assert shots[-2].arrived.sum() == 3 * 2 - 1  # the last output arrives in the last cycle


@pytest.mark.parametrize(("a", "b", "error", "match"), [
    (np.ones(3, int), np.ones((3, 2), int), ValueError, r"a must be a 2-D matrix; got shape \(3,\).*reshape"),
    (np.ones((2, 3), int), np.ones((2, 3, 1), int), ValueError, "b must be a 2-D matrix"),
    (np.ones((2, 3), int), np.ones((4, 2), int), ValueError, r"a's columns \(3\) must equal b's rows \(4\)"),
    (np.ones((0, 3), int), np.ones((3, 2), int), ValueError, "a is empty"),
    (np.ones((2, 3), bool), np.ones((3, 2), int), TypeError, "dtype bool.*integer"),
    (np.ones((2, 3), complex), np.ones((3, 2)), TypeError, "dtype complex128"),
    (np.array([["x"]]), np.ones((1, 1)), TypeError, "dtype <U1"),
    (np.full((1, 2), 2**40), np.full((2, 1), 2**40), OverflowError, "beyond int64"),
])
def test_bad_input_is_refused_with_a_clear_message(a, b, error, match) -> None:
    with pytest.raises(error, match=match):
        systolic.simulate(a, b)


@pytest.mark.parametrize("grid", [0, -1, (2,), (2, 0), 2.5, True, "128"])
def test_bad_grid_is_refused(grid: object) -> None:
    with pytest.raises(ValueError, match="grid must be None"):
        systolic.simulate(np.ones((2, 2), int), np.ones((2, 2), int), grid=grid)


def test_history_refuses_large_matrices() -> None:
    with pytest.raises(ValueError, match="at most 16"):
        systolic.history(np.ones((17, 2), int), np.ones((2, 2), int))


def test_fill_and_utilisation() -> None:
    assert systolic.fill(128, 256) == 1.0 and systolic.fill(1024, 384) == 1.0
    assert systolic.fill(129, 128) == pytest.approx(129 / 256)
    assert systolic.fill(1000, 300) == pytest.approx(1000 * 300 / (1024 * 384))
    assert systolic.fill(300, 300, size=256) == pytest.approx(300 * 300 / 512**2)
    assert systolic.utilisation(4, 4, 4) == pytest.approx(64 / (16 * 10))  # 64 MACs in 16 PEs x 10 cycles
    assert systolic.utilisation(10_000, 128, 128, 128) == pytest.approx(10_000 / (10_000 + 254))
    with pytest.raises(ValueError, match="k must be a positive integer"):
        systolic.fill(0, 128)


@pytest.mark.parametrize(("shape", "wrong"), [
    ((1024, 384), None), ([1024, 384], None),
    ((1000, 300), "fill 76.3%"), ((1024, 300), "fill"), ((896, 384), "smaller than the layer's"),
    ((1152, 384), "a smaller shape"), ((1024, 512), "a smaller shape"), ((1024,), "two positive integers"),
    ("1024x384", "two positive integers"), ((1024.0, 384), "two positive integers"),
])
def test_shape_problem(shape: object, wrong: str | None) -> None:
    said = systolic.shape_problem(shape, at_least=(1000, 300))
    assert said is None if wrong is None else wrong in said


def test_animation_has_a_frame_per_cycle_a_slider_and_play_pause() -> None:
    a, b = ints(4, 4, low=0, high=5), ints(4, 4, low=0, high=5)
    fig = systolic.animation(a, b)
    cycles = systolic.simulate(a, b).cycles
    assert len(fig.frames) == cycles + 1  # before the first cycle, then one per cycle
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [str(c) for c in range(cycles + 1)]
    assert [b.label.split()[-1] for b in fig.layout.updatemenus[0].buttons] == ["play", "pause"]
    last = {t.name: t for t in fig.frames[-1].data}
    assert sorted(map(int, last["C, arrived"].text)) == sorted((a @ b).ravel().tolist())
    assert len(fig.to_json()) < 60_000, "the figure is stored in the notebook: keep it small"
