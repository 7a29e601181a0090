"""ParallelMapDatasetV2's iterator (aioflow/kernels/data/map_kernels.py): a function with
a compiled form is called in place as each element arrives, one without runs as a task
per element; either way the results come out in input order, a failing element raises
in its place (after the elements before it), and both equal a plain map's."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors


def _lookup(x):  # compiled; element 5 on fails (index out of range)
    return af.gather(af.constant([10, 11, 12, 13, 14], af.int64), x)


def _py(x):  # a py_func: no compiled form, a sub-step per element
    return af.py_func(lambda v: np.int64(v * 3), [x], af.int64)


async def _elements(fn, parallel, n=8) -> tuple[list, Exception | None]:
    with af.Graph().as_default():
        ds = af.data.Dataset.range(n).map(fn, num_parallel_calls=parallel)
        nxt = af.data.make_one_shot_iterator(ds).get_next()
        async with af.Session() as sess:
            out = []
            try:
                while True:
                    out.append(int(await sess.run(nxt)))
            except errors.OutOfRangeError:
                return out, None
            except errors.OpError as e:
                return out, e


@pytest.mark.parametrize("parallel", [None, 1, 3, af.data.experimental.AUTOTUNE])
async def test_results_in_order_and_the_error_in_its_place(parallel):
    out, error = await _elements(_lookup, parallel)
    assert out == [10, 11, 12, 13, 14]
    assert isinstance(error, errors.InvalidArgumentError)
    assert error.message.startswith("indices[] = 5 is not in [0, 5)")


@pytest.mark.parametrize("parallel", [None, 3])
async def test_a_function_without_a_compiled_form(parallel):
    out, error = await _elements(_py, parallel)
    assert error is None and out == [3 * i for i in range(8)]
