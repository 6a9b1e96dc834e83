"""Chapter 07's exercise checkers (helpers/chapters/counter_checks.py): each solution of the chapter passes, each
untouched exercise is not attempted, and each planted wrong answer fails with a ❌ that names what is wrong: a strided
load, a bank conflict, a race, a wrong index, or tiles that do not fit a block or keep an SM busy."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from helpers.chapters import counter_checks

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_make_it_fast.ipynb"


def _cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def _assigned(code: str) -> dict[str, object]:
    """The names a cell of plain assignments binds (a source string, a tuple of tiles), read without running it."""
    return {node.targets[0].id: ast.literal_eval(node.value)
            for node in ast.parse(code).body if isinstance(node, ast.Assign)}


def _exercise(name: str) -> object:
    """What the chapter's exercise cell gives `name` to start with."""
    for cell in _cells():
        if "exercise" in cell.get("metadata", {}).get("tags", []):
            found = _assigned("".join(cell["source"]))
            if name in found:
                return found[name]
    raise AssertionError(f"no exercise cell assigns {name}")


def _solution(name: str) -> object:
    """What the chapter's collapsed solution gives `name`."""
    for cell in _cells():
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and "<summary>Solution</summary>" in text:
            for code in re.findall(r"```python\n(.*?)```", text, re.S):
                found = _assigned(code)
                if name in found:
                    return found[name]
    raise AssertionError(f"no solution assigns {name}")


ADD_START, ADD_SOLUTION = _exercise("add_source"), _solution("add_source")
TRANSPOSE_START, TRANSPOSE_SOLUTION = _exercise("transpose_source"), _solution("transpose_source")
TILES_START, TILES_SOLUTION = _exercise("my_tiles"), _solution("my_tiles")


def _changed(source: object, old: str, new: str) -> str:
    """`source` with `old` (which must be in it) replaced: the test breaks loudly when the chapter changes."""
    assert isinstance(source, str) and old in source, f"{old!r} is no longer in the chapter's code: update the test"
    return source.replace(old, new)


def _failed(capsys, verdict, title: str, *named: str) -> str:
    """Assert a ❌ for an attempt, printed as the verdict's first line, naming each of `named`; its message."""
    printed = capsys.readouterr().out
    assert verdict.attempted and not verdict.passed and not verdict
    assert verdict.message.startswith(f"❌ {title}: ") and printed.startswith(verdict.message), printed
    for words in named:
        assert words in verdict.message, verdict.message
    return verdict.message


def _passed(capsys, verdict, title: str) -> str:
    printed = capsys.readouterr().out
    assert verdict.passed and verdict.attempted and verdict, verdict.message
    assert verdict.message.startswith(f"✅ {title}: ") and printed.startswith(verdict.message)
    return verdict.message


COALESCED, PADDED, TILES = "coalesced matrix add", "conflict-free transpose", "tile sizes for sgemm_2d"
ADD_TODO = "  // TODO: neighbouring threads, neighbouring columns"
TILE_TODO = "  // TODO: one column's 32 numbers in 32 different banks"


# ---------------------------------------------------------------- untouched exercises


@pytest.mark.parametrize(("check", "start", "title"), [
    (counter_checks.check_coalesced, ADD_START, COALESCED),
    (counter_checks.check_padded, TRANSPOSE_START, PADDED),
    (counter_checks.check_tiles, TILES_START, TILES),
], ids=["coalesced", "padded", "tiles"])
def test_the_untouched_exercises_are_not_attempted(capsys, check, start, title) -> None:
    verdict = check(start)
    assert not verdict.passed and not verdict.attempted
    assert verdict.message.startswith(f"⏳ {title}: not attempted yet")
    assert capsys.readouterr().out.startswith("⏳ ")


def test_the_tile_exercise_starts_from_start_tiles_which_do_not_fit() -> None:
    assert TILES_START == counter_checks.START_TILES
    assert "65,536 bytes of shared memory" in counter_checks.tile_problem(TILES_START)


# ---------------------------------------------------------------- exercise 1: coalesce a strided load


def test_the_coalescing_solution_passes_with_four_sectors_per_request(capsys) -> None:
    message = _passed(capsys, counter_checks.check_coalesced(ADD_SOLUTION), COALESCED)
    assert "4.00 sectors per global request" in message


def test_the_starting_add_without_its_todo_is_right_but_strided(capsys) -> None:
    strided = _changed(ADD_START, ADD_TODO, "")
    _failed(capsys, counter_checks.check_coalesced(strided), COALESCED, "right, but not fast yet",
            "(32.00 a request, up to 32 in one)", "touches 1,536", "touch 4")


def test_a_coalesced_add_that_reads_a_at_the_swapped_index_is_wrong(capsys) -> None:
    wrong = _changed(ADD_SOLUTION, "= A[row * n + col]", "= A[col * n + row]")
    _failed(capsys, counter_checks.check_coalesced(wrong), COALESCED, "values differ from NumPy's")


def test_a_coalesced_add_without_its_bounds_check_reads_out_of_bounds(capsys) -> None:
    unchecked = _changed(ADD_SOLUTION, "if (row < n && col < n) {", "{")
    _failed(capsys, counter_checks.check_coalesced(unchecked), COALESCED, "out-of-bounds read")


# ---------------------------------------------------------------- exercise 2: pad away a bank conflict


def test_the_padding_solution_passes_one_pass_per_request(capsys) -> None:
    message = _passed(capsys, counter_checks.check_padded(TRANSPOSE_SOLUTION), PADDED)
    assert "shared reads 1.00-way and writes 1.00-way" in message


def test_the_unpadded_tile_is_right_but_32_way(capsys) -> None:
    """Reads 32-way, writes 1-way; 31 extra passes per read of each of 4 blocks x 32 warps."""
    unpadded = _changed(TRANSPOSE_START, TILE_TODO, "")
    _failed(capsys, counter_checks.check_padded(unpadded), PADDED, "right, but not fast yet",
            "reads take 32.00 passes each", f"({4 * 32 * 31:,} extra passes in all)")


def test_a_tile_padded_by_two_is_still_two_way(capsys) -> None:
    padded_two = _changed(TRANSPOSE_SOLUTION, "tile[TILE][TILE + 1]", "tile[TILE][TILE + 2]")
    _failed(capsys, counter_checks.check_padded(padded_two), PADDED, "reads take 2.00 passes each",
            f"({4 * 32:,} extra passes in all)")


def test_the_padded_transpose_without_its_barrier_races(capsys) -> None:
    unsynced = _changed(TRANSPOSE_SOLUTION, "    __syncthreads();\n", "")
    _failed(capsys, counter_checks.check_padded(unsynced), PADDED, "race at line", "__syncthreads()")


def test_the_padded_transpose_writing_out_at_the_wrong_index_is_wrong(capsys) -> None:
    untransposed = _changed(TRANSPOSE_SOLUTION, "out[y * n + x] = tile", "out[x * n + y] = tile")
    _failed(capsys, counter_checks.check_padded(untransposed), PADDED, "values differ from NumPy's")


def test_a_transpose_that_drops_its_tile_is_not_the_exercise(capsys) -> None:
    direct = _changed(_changed(TRANSPOSE_SOLUTION, "out[y * n + x] = tile[threadIdx.x][threadIdx.y];",
                               "out[y * n + x] = in[x * n + y];"),
                      "        tile[threadIdx.y][threadIdx.x] = in[y * n + x];\n", "")
    _failed(capsys, counter_checks.check_padded(direct), PADDED, "reads no shared memory")


def test_a_transpose_that_only_writes_its_tile_is_not_the_exercise(capsys) -> None:
    write_only = _changed(TRANSPOSE_START, "out[y * n + x] = tile[threadIdx.x][threadIdx.y];",
                          "out[y * n + x] = in[x * n + y];").replace(TILE_TODO, "")
    _failed(capsys, counter_checks.check_padded(write_only), PADDED, "reads no shared memory")


# ---------------------------------------------------------------- exercise 3: a tile that fits


def test_the_tile_solution_passes_with_its_prediction(capsys) -> None:
    assert TILES_SOLUTION == (128, 128, 16, 8, 8)
    message = _passed(capsys, counter_checks.check_tiles(TILES_SOLUTION), TILES)
    assert "sgemm_2d<128, 128, 16, 8, 8> fits (256 threads, 16,384 bytes" in message
    assert "multiplies right at n = 128 on the CPU executor" in message
    assert re.search(r"Predicted on a T4 at n = 4,096: [\d,]+ GFLOP/s", message)


def test_a_smaller_tile_passes_at_its_own_size(capsys) -> None:
    message = _passed(capsys, counter_checks.check_tiles([64, 64, 8, 4, 4]), TILES)  # a list is taken too
    assert "sgemm_2d<64, 64, 8, 4, 4>" in message and "at n = 64" in message


@pytest.mark.parametrize(("tiles", "named"), [
    ((256, 128, 16, 8, 4), ("holds 1 such block at once (threads run out)", "at least 2 blocks per SM")),
    ((256, 256, 8, 8, 8), ("1,024 threads x 80 registers = 81,920 registers", "(65,536)")),
    ((128, 128, 64, 8, 8), ("65,536 bytes of shared memory", "may hold 49,152")),
    ((64, 64, 8, 1, 1), ("4,096 threads per block", "at most 1,024 threads")),
    ((64, 64, 8, 8, 3), ("TN = 3 must divide BN = 64",)),
    ((128, 128, 8, 16, 16), ("288 floats in registers", "at most 255")),
    ((32, 32, 8, 8, 8), ("= 16 threads per block", "must be whole warps")),
    ((96, 128, 8, 8, 8), ("BM = 96, BN = 128 and BK = 8 must each divide", "powers of two")),
    ((32, 32, 64, 4, 4), ("BK = 64 must divide n = 32",)),
], ids=["one block per SM", "registers per SM", "shared memory", "threads", "TN must divide", "registers",
        "whole warps", "sides divide 256", "BK divides n"])
def test_tiles_that_do_not_fit_are_refused_naming_the_limit(capsys, tiles, named) -> None:
    _failed(capsys, counter_checks.check_tiles(tiles), TILES, *named)


@pytest.mark.parametrize("tiles", ["abc", (1.5, 128, 8, 8, 8), (True, 128, 8, 8, 8), (128, 128, 8, 8),
                                   (0, 128, 8, 8, 8), None])
def test_tiles_that_are_not_five_whole_numbers_are_refused(capsys, tiles) -> None:
    _failed(capsys, counter_checks.check_tiles(tiles), TILES, "expected five whole numbers")


def test_tile_problem_says_tn_must_divide_bn() -> None:
    assert "TN = 8 must divide BN = 100" in counter_checks.tile_problem((128, 100, 8, 8, 8))
    assert counter_checks.tile_problem((128, 128, 8, 8, 8)) is None


def test_tiles_whose_tn_does_not_divide_bn_are_refused_saying_so(capsys) -> None:
    _failed(capsys, counter_checks.check_tiles((128, 100, 8, 8, 8)), TILES, "TN = 8 must divide BN = 100")


def test_one_strided_access_among_good_ones_still_fails(capsys) -> None:
    """Coalesced A, B and C, and one more read of A at the transposed index: a third more requests, which the
    check allows, but 32 sectors for that one: the check counts every sector, so the average does not hide it."""
    extra = _changed(ADD_SOLUTION, "+ B[row * n + col];", "+ B[row * n + col] + 0.0f * A[col * n + row];")
    _failed(capsys, counter_checks.check_coalesced(extra), COALESCED, "up to 32 in one", "at n = 64")


def test_a_transpose_that_reads_its_tile_by_rows_and_stores_strided_fails(capsys) -> None:
    """Padded and conflict-free, but the tile does nothing: out is written 32 sectors a request."""
    by_rows = _changed(TRANSPOSE_SOLUTION, "out[y * n + x] = tile[threadIdx.x][threadIdx.y];",
                       "out[x * n + y] = tile[threadIdx.y][threadIdx.x];")
    by_rows = by_rows.replace("    x = blockIdx.y * TILE + threadIdx.x;\n", "").replace(
        "    y = blockIdx.x * TILE + threadIdx.y;\n", "", 1)
    _failed(capsys, counter_checks.check_padded(by_rows), PADDED, "up to 32 in one", "read the tile by columns")
