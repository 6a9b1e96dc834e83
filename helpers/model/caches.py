"""The cache model of a matmul kernel: which rows and columns a wave of resident blocks reads, and the bytes that
reach DRAM, with the assumptions written down before any comparison."""

from __future__ import annotations

from ..core.validate import positive_int


def matmul_wave(n: int, tile: tuple[int, int], resident_blocks: int, rows_first: bool = False) -> tuple[int, int]:
    """(rows of A, columns of B) the blocks resident at once read, for an n x n x n matmul kernel whose blocks each
    compute a tile (rows, cols) of C and start in the order of blockIdx.x (along rows of C when rows_first)."""
    n, resident = positive_int("n", n), positive_int("resident_blocks", resident_blocks)
    rows, cols = _tile(tile)
    down, across = -(-n // rows), -(-n // cols)  # tiles along each side of C
    first = down if rows_first else across
    along, deep = min(resident, first), -(-min(resident, down * across) // first)
    a_rows, b_cols = (along * rows, deep * cols) if rows_first else (deep * rows, along * cols)
    return min(a_rows, n), min(b_cols, n)  # a tile sticking out of C reads no rows or columns beyond it


def _tile(tile: object) -> tuple[int, int]:
    """(rows, cols) of a tile of C; a ValueError otherwise."""
    if not isinstance(tile, tuple | list) or len(tile) != 2:
        raise ValueError(f"tile must be (rows, cols) of C, two whole numbers; got {tile!r:.40}")
    return positive_int("tile rows", tile[0]), positive_int("tile cols", tile[1])


#: Bytes of one step along k: a 128-byte line of each row of A and each column of B a wave reads.
WAVE_STEP = 128


def matmul_dram_bytes(n: int, tile: tuple[int, int], resident_blocks: int, l2_bytes: int | None,
                      rows_first: bool = False, itemsize: int = 4) -> float:
    """Bytes an n x n x n matmul kernel moves between DRAM and the chip, by the cache model (CACHE_ASSUMPTIONS).

    A wave of resident blocks reads its rows of A and columns of B from DRAM once, shared through the L2, when the
    L2 holds a WAVE_STEP of each; otherwise (or with no L2 size on file) every block reads its own. C is written
    once.
    """
    a_rows, b_cols = matmul_wave(n, tile, resident_blocks, rows_first)
    rows, cols = _tile(tile)
    blocks = -(-n // rows) * -(-n // cols)
    if l2_bytes and (a_rows + b_cols) * WAVE_STEP <= l2_bytes:
        waves = blocks / min(resident_blocks, blocks)
        return waves * (a_rows + b_cols) * n * itemsize + n * n * itemsize
    return blocks * (min(rows, n) + min(cols, n)) * n * itemsize + n * n * itemsize


#: The cache model's assumptions, written down before any comparison with a published figure (docs/predictions.md
#: prints them with the numbers they give for each GPU on file).
CACHE_ASSUMPTIONS: tuple[str, ...] = (
    "The CPU executor counts every request a kernel makes and models no cache: at the sizes it runs (n = 128), an "
    "L1 and an L2 would hold everything, so nothing it counts says which bytes reach DRAM at n = 4,096.",
    "L1: each SM's L1 looks up every 128-byte line a request touches, hit or miss, one line per clock "
    "(L1_LINES_PER_CLOCK): that is the L1 term. Lines a block reuses (the naive kernel reads each line of a row of "
    "A 32 times, once per step along it) hit the L1 or the L2, and cost DRAM nothing more.",
    "L2: blocks start in the order of blockIdx.x, as many at once as occupancy lets each SM hold (threads, blocks "
    "and shared memory; registers are not counted), and move along k together. Such a wave reads the rows of A and "
    "the columns of B its tiles need from DRAM once, sharing them through the L2, provided the L2 holds what the "
    "wave reads in one 128-byte step along k: (its rows of A + its columns of B) x 128 bytes. Otherwise every "
    "block reads its own rows and columns from DRAM.",
    "C is written to DRAM once; DRAM is read and written at MEMORY_EFFICIENCY['gpu'] of its published bandwidth.",
    "The L2 sizes are the published ones in helpers.measuring.specs, each with its source; a GPU without one gets the "
    "no-reuse traffic. No constant of the kernel model was set from a worklog row it is checked against.",
)
