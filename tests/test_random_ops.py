"""Random ops give TensorFlow's values bit for bit (fixtures from
tests/data/make_random_fixtures.py): raw ops run by run (a stateful op's second run gives
TF's second values), TF's errors, TF's OpDefs, the seed rules, and the GraphDefs and values
of seeded programs built with aioflow's builders."""

from __future__ import annotations

import json
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest
from aioflow.kernels.random import libm_f32, philox, random_kernels
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import errors, op_def_registry, random_seed
from aioflow.proto import graph_pb2, op_def_pb2

DATA = pathlib.Path(__file__).parent / "data"
CASES = json.loads((DATA / "random_cases.json").read_text())
sys.path.insert(0, str(DATA))
import make_random_fixtures  # noqa: E402

# TF has no CPU kernel of StatelessRandomUniformIntV2 for unsigned types; aioflow has none
# either, but says so in its own words at kernel creation.
_NO_KERNEL = "No OpKernel was registered"


@pytest.fixture(scope="module")
def outputs():
    with np.load(DATA / "random_cases.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _input(dtype: str, value):
    if dtype == "string":
        return np.array([v.encode() for v in value], dtype=object)
    return np.array(value, dtype=dtype)


def _same(got, want) -> bool:
    got = np.asarray(got)
    if got.dtype == ml_dtypes.bfloat16:
        got = got.astype(np.float32)
    if got.dtype == object:
        return got.shape == want.shape and got.tolist() == want.astype(object).tolist()
    return got.dtype == want.dtype and got.shape == want.shape and \
        got.tobytes() == want.tobytes()


def _build_case(case):
    """The case's op fed by placeholders of unknown shape (TF's fixture did the same)."""
    g = af.Graph()
    with g.as_default():
        feeds, args = {}, {}
        names = [a.name for a in op_def_registry.get(case["op"]).input_arg]
        for i, ((dtype, value), name) in enumerate(zip(case["inputs"], names, strict=True)):
            ph = af.placeholder(af.as_dtype(dtype), shape=None, name=f"in{i}")
            feeds[ph] = _input(dtype, value)
            args[name] = ph
        attrs = {k: af.as_dtype(v["dtype"]) if isinstance(v, dict) else v
                 for k, v in case["attrs"].items()}
        from aioflow.framework.op_def_library import apply_op_raw
        op = apply_op_raw(case["op"], name=case["op"], **args, **attrs)
    return g, feeds, list(op.outputs)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['id']}-{c['op']}" for c in CASES])
async def test_raw_op_matches_tensorflow(case, outputs):
    g, feeds, fetches = _build_case(case)
    async with af.Session(graph=g) as sess:
        if case["outcome"] == "error":
            with pytest.raises(errors.OpError) as info:
                await sess.run(fetches, feed_dict=feeds)
            if _NO_KERNEL in case["message"]:
                return
            assert type(info.value).__name__ == case["error_class"]
            assert info.value.message.split("\n")[0] == case["message"]
            return
        for run in range(case["runs"]):
            got = await sess.run(fetches, feed_dict=feeds)
            for i, value in enumerate(got):
                want = outputs[f"out:{case['id']}:{run}:{i}"]
                assert _same(value, want), (run, i, value, want)


def test_op_defs_are_tensorflows():
    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "random_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == len(make_random_fixtures.OPS)
    assert_equal_to_tf(tf_ops)


# -- builders ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def builders():
    with np.load(DATA / "random_builders.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _summary(graph_def):
    out = []
    for node in graph_def.node:
        attrs = {k: v.SerializeToString(deterministic=True) for k, v in node.attr.items()
                 if k != "_output_shapes"}
        out.append((node.name, node.op, list(node.input), attrs))
    return out


@pytest.mark.parametrize("name", make_random_fixtures.BUILDERS)
async def test_builder_writes_tensorflows_graph_and_values(name, builders):
    want = graph_pb2.GraphDef()
    want.ParseFromString(builders[f"graph:{name}"].tobytes())
    g = af.Graph()
    with g.as_default():
        fetches = getattr(make_random_fixtures, name)(af)
    assert _summary(g.as_graph_def()) == _summary(want)
    async with af.Session(graph=g) as sess:
        for run in range(2):
            got = await sess.run(fetches)
            for i, value in enumerate(got):
                assert _same(value, builders[f"fetch:{name}:{run}:{i}"]), (run, i)


async def test_tensorflows_graph_runs_to_its_values(builders):
    """The GraphDef TF wrote, imported, gives TF's values run after run."""
    for name in make_random_fixtures.BUILDERS:
        graph_def = graph_pb2.GraphDef()
        graph_def.ParseFromString(builders[f"graph:{name}"].tobytes())
        g = af.Graph()
        with g.as_default():
            af.import_graph_def(graph_def, name="")
            mine = af.Graph()
            with mine.as_default():
                fetches = [t.name for t in getattr(make_random_fixtures, name)(af)]
        async with af.Session(graph=g) as sess:
            for run in range(2):
                got = await sess.run(fetches)
                for i, value in enumerate(got):
                    assert _same(value, builders[f"fetch:{name}:{run}:{i}"]), (name, run, i)


def test_static_shapes_are_tensorflows():
    with af.Graph().as_default():
        assert af.random_uniform([2, 3]).shape.as_list() == [2, 3]
        assert af.random.stateless_normal([4], seed=[1, 2]).shape.as_list() == [4]
        assert af.multinomial(af.constant([[0.0, 1.0]]), 5).shape.as_list() == [1, 5]
        assert af.random_gamma([3], [1.0, 2.0]).shape.as_list() == [3, 2]
        assert af.random_gamma([3], 1.5).shape.as_list() == [3]
        shape = af.placeholder(af.int32, [2])
        assert af.random_normal(shape).shape.as_list() == [None, None]


# -- seeds -------------------------------------------------------------------------------------

def test_seed_rules_are_tensorflows():
    with af.Graph().as_default():
        assert random_seed.get_seed(None) == (None, None)
        assert random_seed.get_seed(5) == (random_seed.DEFAULT_GRAPH_SEED, 5)
        af.set_random_seed(2**40)
        assert random_seed.get_seed(None) == (2**40 % (2**31 - 1), 0)
        assert random_seed.get_seed(None) == (2**40 % (2**31 - 1), 1)
        assert random_seed.get_seed(2**31 + 3) == (2**40 % (2**31 - 1), 4)
        af.set_random_seed(0)
        assert random_seed.get_seed(0) == (0, 2**31 - 1)
    with af.Graph().as_default():  # the counter is per graph
        af.random.set_seed(3)
        assert random_seed.get_seed(None) == (3, 0)


async def test_unseeded_ops_differ_and_seeded_ones_repeat():
    g = af.Graph()
    with g.as_default():
        a, b = af.random_uniform([64]), af.random_uniform([64])
        c, d = af.random_uniform([64], seed=3), af.random_uniform([64], seed=3)
    async with af.Session(graph=g) as sess:
        va, vb, vc, vd = await sess.run([a, b, c, d])
    assert not np.array_equal(va, vb)
    assert np.array_equal(vc, vd)


async def test_state_advances_within_one_executor_and_restarts_with_a_new_session():
    g = af.Graph()
    with g.as_default():
        x = af.random_normal([5], seed=7)
    async with af.Session(graph=g) as sess:
        first, second = await sess.run(x), await sess.run(x)
    async with af.Session(graph=g) as sess:
        again = await sess.run(x)
    assert not np.array_equal(first, second)
    assert np.array_equal(first, again)


def test_multinomial_split_across_threads_as_tensorflows():
    """Rows in TF's blocks for TF's thread count, each block from its own offset, and the
    second run from where the first left the generator."""
    with np.load(DATA / "random_multinomial.npz") as z:
        logits, threads = z["logits"], int(z["threads"])
        runs = [z["run0"], z["run1"]]
    batch, num = runs[0].shape
    gen = philox.Philox.from_seeds(12, 34)
    for want in runs:
        got = random_kernels.multinomial(gen, logits, num, np.int32, threads=threads)
        assert np.array_equal(got, want)
        gen = gen.skipped(batch * ((num + 3) // 4 * 4 * 2) * random_kernels.RESERVE_PER_OUTPUT)


def test_parallel_for_blocks_are_eigens():
    """Block splits TF's Multinomial gets from Eigen (checked against TF's values on 2
    threads: rows 38, 250 and 625 start new blocks)."""
    assert random_kernels.parallel_for_blocks(40, 2160, 2) == [(0, 40)]
    assert random_kernels.parallel_for_blocks(300, 8143, 2)[:2] == [(0, 38), (38, 76)]
    assert random_kernels.parallel_for_blocks(2000, 8143, 2)[1] == (250, 500)
    assert random_kernels.parallel_for_blocks(5000, 17219, 2)[1] == (625, 1250)
    assert random_kernels.parallel_for_blocks(5000, 17219, 1) == [(0, 5000)]
    blocks = random_kernels.parallel_for_blocks(1000, 9000, 6)
    assert blocks[0][0] == 0 and blocks[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(blocks[:-1], blocks[1:], strict=True))


async def test_state_is_the_sessions_whatever_the_fetches():
    """As TF's OpSegment: another fetch signature (another executor) runs the same kernel,
    so the stream goes on instead of starting again."""
    g = af.Graph()
    with g.as_default():
        x = af.random_uniform([6], seed=9)
        other = af.constant(1.0)
    async with af.Session(graph=g) as sess:
        want = [await sess.run(x) for _ in range(3)]
    async with af.Session(graph=g) as sess:
        got = [await sess.run(x), (await sess.run([x, other]))[0], await sess.run(x)]
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)


# -- kernels -----------------------------------------------------------------------------------

def test_large_outputs_go_to_the_pool():
    kernel = random_kernels.RandomUniformOp.__new__(random_kernels.RandomUniformOp)
    small = np.array([4, 1024], np.int32)
    large = np.array([4, 1025], np.int32)
    assert not kernel.is_expensive([small])
    assert kernel.is_expensive([large])
    assert not kernel.is_expensive([np.array([[5]], np.int32)])
    multinomial = random_kernels.MultinomialOp.__new__(random_kernels.MultinomialOp)
    logits = np.zeros((100, 3), np.float32)
    assert multinomial.is_expensive([logits, np.int32(41)])
    assert not multinomial.is_expensive([logits, np.int32(40)])
    assert not multinomial.is_expensive([logits, np.array([50, 50], np.int32)])


def test_philox_counter_carries_across_words():
    gen = philox.Philox((1, 2), (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
    blocks = gen.blocks(np.arange(2, dtype=np.uint64))
    step = gen.skipped(1).blocks(np.zeros(1, np.uint64))
    assert np.array_equal(blocks[1], step[0])
    assert gen.skipped(1).counter == (0, 0, 0, 1)


def test_shuffle_swaps_resolve_as_run_in_order():
    rng = np.random.default_rng(0)
    for n in (2, 3, 4, 7, 50, 999):
        for _ in range(50):
            targets = np.arange(n - 1) + rng.integers(0, np.arange(n, 1, -1))
            perm = list(range(n))
            for i, j in enumerate(targets.tolist()):
                perm[i], perm[j] = perm[j], perm[i]
            assert random_kernels.resolve_swaps(targets, n).tolist() == perm


def test_libm_table_gives_the_c_librarys_floats():
    """A sample of the inputs TF's Box-Muller can give logf/sinf/cosf, against this
    machine's C library (where it is glibc, as the table was made from)."""
    import ctypes
    import ctypes.util
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("the table records glibc's results")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    k = np.random.default_rng(0).integers(0, 1 << 23, 3000)
    k[:3] = [0, 1, (1 << 23) - 1]
    for name, arg in (("logf", libm_f32.log_arg), ("sinf", libm_f32.trig_arg),
                      ("cosf", libm_f32.trig_arg)):
        fn = getattr(libm, name)
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
        want = np.array([fn(float(v)) for v in arg(k)], dtype=np.float32)
        got = getattr(libm_f32, name)(k)
        assert np.array_equal(got.view(np.int32), want.view(np.int32)), name
        if name != "logf":
            both = libm_f32.sincosf(k)[0 if name == "sinf" else 1]
            assert np.array_equal(both.view(np.int32), want.view(np.int32)), name
