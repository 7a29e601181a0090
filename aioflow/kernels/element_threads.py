"""Large element-wise kernels' work split over the session's intra-op threads.

TF's element-wise kernels (Eigen's, oneDNN's) split a large tensor over its intra-op
pool; NumPy's ufuncs run on the calling thread. Above SPLIT_ABOVE elements a kernel here
hands ranges of its flat output to the convolutions' helper threads
(aioflow/kernels/nn/conv_kernels.py `parallel_blocks`: one pool for every kernel that
splits, so kernels running one after another never stack pools on the cores), at most
intra_op_parallelism_threads of them (the count the CPU device sets, read through
aioflow/framework/intra_op_threads.py; the cores when it cannot be read). Below, or with
one thread, the whole range runs inline: a hand-off costs more than the work saved.

Ranges are handed out one at a time (at least BLOCK elements each, about two per
thread), so a helper that gets no core on a loaded machine costs at most one block.
The loops given here release the GIL (NumPy ufuncs on slices, numba's nogil loops).
"""

from __future__ import annotations

from collections.abc import Callable

from aioflow.framework.intra_op_threads import blas_threads_outside
from aioflow.kernels.nn.conv_kernels import _CORES, PARALLEL_WORK, parallel_blocks

#: Elements above which a kernel's work is shared among threads (float32: 2 MiB; one
#: thread's numba Relu over it takes ~0.1 ms, a hand-off to a pool thread 10-30 µs).
SPLIT_ABOVE = 1 << 19
#: The fewest elements a thread is handed at once.
BLOCK = 1 << 17


def intra_op_threads() -> int:
    """The threads a kernel may use: intra_op_parallelism_threads as the CPU device set
    it (BLAS's count outside the convolutions' sections), else the cores."""
    n = blas_threads_outside()
    return min(n, _CORES) if n > 0 else _CORES


def split_ranges(n: int, threads: int, unit: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) ranges covering 0..n (of `unit` elements each): one when the n * unit
    elements are at most SPLIT_ABOVE or threads <= 1, else about two per thread of at
    least BLOCK elements each."""
    if n * unit <= SPLIT_ABOVE or threads <= 1:
        return [(0, n)]
    step = max(-(-BLOCK // unit), -(-n // (2 * threads)))
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def for_ranges(n: int, fn: Callable[[int, int], None], unit: int = 1,
               threads: int | None = None) -> None:
    """fn(lo, hi) over ranges covering 0..n (of `unit` elements each: rows of a tensor),
    shared among the intra-op threads when the n * unit elements are above
    SPLIT_ABOVE, else one call inline. `threads` overrides the intra-op count (tests)."""
    if n * unit <= SPLIT_ABOVE:
        fn(0, n)
        return
    threads = intra_op_threads() if threads is None else threads
    ranges = split_ranges(n, threads, unit)
    if len(ranges) == 1:
        fn(0, n)
        return
    parallel_blocks(ranges, lambda r: fn(r[0], r[1]), PARALLEL_WORK + 1, threads)
