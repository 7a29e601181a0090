"""CPU kernels of TF's random ops, giving TensorFlow's values bit for bit.

Stateful ops (RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt,
RandomShuffle, Multinomial) hold a Philox generator made from their `seed`/`seed2` attrs
(random seeds when both are 0, as TF's GuardedPhiloxRandom) and, per run, reserve the
blocks TF reserves (256 per output for the distributions), so the second run of a node
gives TF's second values. The kernel object is that state: it lives as long as the
executor that made it. Stateless ops derive the key and counter from their seed inputs
as TF's GenerateKey does. Large outputs go to the thread pool, judged by output size.
"""

from __future__ import annotations

import math
import os
import threading

import ml_dtypes
import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.random import philox

#: Outputs above this many elements are generated on the thread pool: a call costs ~50 us
#: plus 10 ns (uniform) to 70 ns (truncated normal, doubles) an element, so 4096 elements
#: hold the loop at most ~0.5 ms.
POOL_ABOVE = 4096

#: Blocks TF reserves per output element of a distribution (ReserveRandomOutputs(n, 256)).
RESERVE_PER_OUTPUT = 256

#: TF's Algorithm enum (rng_alg.h) and the key and counter sizes of Philox.
RNG_ALG_PHILOX = 1
RNG_ALG_THREEFRY = 2
RNG_ALG_AUTO_SELECT = 3

_STATELESS_KEY = (0x3EC8F720, 0x02461E29)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def output_shape(shape) -> tuple[int, ...]:
    """The `shape` input as a shape, with TF's errors (MakeShape)."""
    if np.ndim(shape) != 1:
        raise _invalid("shape must be a vector of {int32,int64}, got shape "
                       + shape_str(np.shape(shape)))
    dims = tuple(int(d) for d in np.asarray(shape).tolist())
    n = 1
    for d in dims:
        if d < 0:
            raise _invalid(f"Dimension {d} must be >= 0")
        if n * d >= 1 << 63:  # TF's TensorShape::AddDimWithStatus
            raise _invalid(f"Encountered overflow when multiplying {n} with {d}, result: -1")
        n *= d
    return dims


#: Outputs of more elements than this are refused before generating (TF's allocator
#: fails them: no machine holds 2^48 elements; below it, memory decides: MemoryError).
MAX_ELEMENTS = 1 << 48


def generating(shape, dtype, make):
    """`make()`, the output of `shape` and `dtype`: memory that cannot hold it, or a
    shape NumPy cannot address (an empty [0, 2^63-1, 2]: "array is too big"), is TF's
    OOM (ResourceExhaustedError with TF's words), never a raw MemoryError or ValueError."""
    if math.prod(shape) > MAX_ELEMENTS:
        raise _oom(shape, dtype)
    try:
        return make()
    except MemoryError:
        raise _oom(shape, dtype) from None
    except ValueError as e:
        if "too big" not in str(e):
            raise
        raise _oom(shape, dtype) from None


def _oom(shape, dtype) -> errors.ResourceExhaustedError:
    name = dtypes.as_dtype(dtype).name.replace("float32", "float").replace("float64",
                                                                              "double")
    return errors.ResourceExhaustedError(
        None, None, f"OOM when allocating tensor with shape[{','.join(map(str, shape))}] and "
                    f"type {name} on /job:localhost/replica:0/task:0/device:CPU:0 by "
                    "allocator cpu")


def _size(shape) -> int:
    """The number of elements the shape input asks for (0 when it is not a vector)."""
    if getattr(shape, "ndim", None) != 1:
        return 0
    n = 1
    for d in shape.tolist():
        n *= max(int(d), 0)
    return n


def _numpy_dtype(dtype: dtypes.DType):
    return np.dtype(dtype.as_numpy_dtype)


class _BySize(OpKernel):
    """Goes to the pool when the output (sized from the shape input) is large."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return _size(inputs[0]) > POOL_ABOVE


# -- stateful ----------------------------------------------------------------------------------

def new_seed() -> int:
    """A random 64-bit seed (TF's random::New64), for ops whose seeds are both 0."""
    return int.from_bytes(os.urandom(8), "little")


class _Stateful(_BySize):
    """A Philox generator from the seed attrs, advanced under a lock as TF's
    GuardedPhiloxRandom (runs on the pool may reserve concurrently)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        seed, seed2 = ctx.get_attr("seed", 0), ctx.get_attr("seed2", 0)
        if seed == 0 and seed2 == 0:
            seed, seed2 = new_seed(), new_seed()
        self._gen = philox.Philox.from_seeds(seed, seed2)
        self._lock = threading.Lock()

    def reserve(self, blocks: int) -> philox.Philox:
        """The generator as it is, stepped on by `blocks` for the next reservation."""
        with self._lock:
            gen = self._gen
            self._gen = gen.skipped(blocks)
        return gen


class _Distribution(_Stateful):
    """RandomUniform / RandomStandardNormal: one block per group of outputs."""

    make = staticmethod(philox.uniform_block)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dtype = _numpy_dtype(ctx.get_attr("dtype"))

    def compute(self, ctx, inputs):
        shape = output_shape(inputs[0])
        n = math.prod(shape)
        gen = self.reserve(n * RESERVE_PER_OUTPUT)
        return (generating(shape, self._dtype,
                           lambda: self.generate(gen, n).reshape(shape)),)

    def generate(self, gen: philox.Philox, n: int) -> np.ndarray:
        dtype = self._dtype
        return philox.fill(gen, n, philox.block_width(dtype), lambda b: self.make(b, dtype))


@register_kernel("RandomUniform", "CPU")
class RandomUniformOp(_Distribution):
    """Uniform on [0, 1) (TF's Uint32ToFloat and kin)."""


@register_kernel("RandomStandardNormal", "CPU")
class RandomStandardNormalOp(_Distribution):
    """Standard normals (TF's Box-Muller)."""

    make = staticmethod(philox.normal_block)


@register_kernel("TruncatedNormal", "CPU")
class TruncatedNormalOp(_Distribution):
    """Standard normals within two standard deviations (TF's rejection)."""

    def generate(self, gen, n):
        return philox.fill_truncated(gen, n, self._dtype)


def _int_span(lo, hi, what: str = "") -> tuple[int, int]:
    """TF's checks of minval/maxval; (lo, hi - lo)."""
    lo, hi = int(lo), int(hi)
    if lo >= hi:
        raise _invalid(f"Need minval < maxval, got {lo} >= {hi}")
    return lo, hi - lo


def _check_bounds(minval, maxval) -> None:
    if np.ndim(minval) != 0:
        raise _invalid(f"minval must be 0-D, got shape {shape_str(np.shape(minval))}")
    if np.ndim(maxval) != 0:
        raise _invalid(f"maxval must be 0-D, got shape {shape_str(np.shape(maxval))}")


def uniform_int(gen: philox.Philox, n: int, dtype, lo: int, span: int) -> np.ndarray:
    """n integers lo + x % span as TF's UniformDistribution over `dtype`."""
    return philox.fill(gen, n, philox.block_width(dtype),
                       lambda b: philox.int_block(b, dtype, lo, span))


@register_kernel("RandomUniformInt", "CPU")
class RandomUniformIntOp(_Stateful):
    """Integers in [minval, maxval)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dtype = _numpy_dtype(ctx.get_attr("Tout"))

    def compute(self, ctx, inputs):
        shape_t, minval, maxval = inputs
        shape = output_shape(shape_t)
        _check_bounds(minval, maxval)
        n = math.prod(shape)
        if n == 0:
            return (generating(shape, self._dtype, lambda: np.empty(shape, self._dtype)),)
        lo, span = _int_span(minval, maxval)
        gen = self.reserve(n * RESERVE_PER_OUTPUT)
        return (generating(shape, self._dtype, lambda: uniform_int(
            gen, n, self._dtype, lo, span).reshape(shape)),)


@register_kernel("RandomShuffle", "CPU")
class RandomShuffleOp(_Stateful):
    """The input's rows in TF's Fisher-Yates order: step i swaps row i with row
    i + word_i % (n - i), the words taken one by one from the generator."""

    def is_expensive(self, inputs):
        return np.size(inputs[0]) > POOL_ABOVE

    def compute(self, ctx, inputs):
        x = inputs[0]
        if np.size(x) <= 1 or np.shape(x)[0] <= 1:
            return (x,)
        n = np.shape(x)[0]
        gen = self.reserve((n - 1 + 3) // 4)
        return (np.asarray(x)[shuffle_permutation(gen, n)],)


def shuffle_permutation(gen: philox.Philox, n: int) -> np.ndarray:
    """TF's RandomShuffle of range(n): step i (0 <= i < n - 1) swaps positions i and
    j_i = i + word_i % (n - i). Position i is final after step i, and before it a position
    is only ever a swap target, so the swaps resolve without running them in order: the
    value at position p before step p is W(p) = W(L(p)), L(p) the last earlier step that
    targeted p (p itself when none), and step i takes the value W(P(i)) left at j_i by
    P(i), the last earlier step with the same target (j_i itself when none)."""
    words = gen.words(n - 1).astype(np.int64)
    targets = np.arange(n - 1) + words % np.arange(n, 1, -1)
    return resolve_swaps(targets, n)


def resolve_swaps(targets: np.ndarray, n: int) -> np.ndarray:
    """range(n) after swapping positions i and targets[i] (>= i) for i = 0, 1, ..., n - 2."""
    steps = len(targets)
    order = np.argsort(targets, kind="stable")  # by target, then step
    by_target = targets[order]
    same = by_target[1:] == by_target[:-1]
    previous = np.full(steps, -1)  # P(i)
    previous[order[1:][same]] = order[:-1][same]
    earlier = order[by_target > order]  # steps aimed past themselves, still by target
    aimed = targets[earlier]
    final = np.ones(aimed.size, dtype=bool)
    final[:-1] = aimed[1:] != aimed[:-1]
    chain = np.arange(n)  # L(p), or p
    chain[aimed[final]] = earlier[final]
    while True:  # W: follow each chain to its start by pointer doubling
        jumped = chain[chain]
        if np.array_equal(jumped, chain):
            break
        chain = jumped
    out = np.empty(n, dtype=np.int64)
    out[:steps] = np.where(previous >= 0, chain[np.maximum(previous, 0)], targets)
    out[steps] = chain[steps]
    return out


@register_kernel("Multinomial", "CPU")
class MultinomialOp(_Stateful):
    """Class indices drawn from each row's softmax(logits), as TF's CPU kernel: the row's
    unnormalised CDF in double (non-finite logits left out), then for each sample the
    first class whose CDF exceeds a uniform double times the total."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._out = _numpy_dtype(ctx.get_attr("output_dtype", dtypes.int64))

    def is_expensive(self, inputs):
        """By the output's size: rows times samples (bad inputs stay inline to fail)."""
        logits, num = inputs
        if np.ndim(logits) != 2 or np.size(num) != 1:
            return False
        return np.shape(logits)[0] * max(int(np.ravel(num)[0]), 0) > POOL_ABOVE

    def compute(self, ctx, inputs):
        logits, num_samples = inputs
        if np.ndim(logits) != 2:
            raise _invalid(f"logits should be a matrix, got shape {shape_str(np.shape(logits))}")
        if np.ndim(num_samples) != 0:
            raise _invalid("num_samples should be a scalar.")
        num = int(num_samples)
        if num < 0:
            raise _invalid(f"num_samples should be non-negative, got {num}")
        batch, classes = np.shape(logits)
        if classes == 0 and batch * num > 0:
            raise _invalid(f"num_classes should be positive, got {classes}")
        rounded = (num + 3) // 4 * 4 * 2
        gen = self.reserve(batch * rounded * RESERVE_PER_OUTPUT)
        return (multinomial(gen, np.asarray(logits), num, self._out),)


def multinomial(gen: philox.Philox, logits: np.ndarray, num: int, out_dtype,
                threads: int | None = None) -> np.ndarray:
    """TF's CPU sampling. TF splits the rows into blocks across its intra-op threads; a block
    starting at row r takes its words from the generator skipped by r * (num + 3) // 4
    blocks, rows one after another, two words per uniform double. The split is TF's (Eigen's
    parallelFor over TF's cost estimate), for `threads` intra-op threads (default: the CPUs
    this process may use, TF's default), so the values are TF's on a machine like this one;
    a small op is one block whatever the thread count."""
    batch, classes = logits.shape
    if batch * num == 0:
        return np.zeros((batch, num), out_dtype)
    finite = np.isfinite(logits)
    top = np.where(finite, logits, -np.inf).max(axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, _lowest(logits.dtype))
    weights = np.exp(logits.astype(np.float64) - top.astype(logits.dtype)[:, None]
                     .astype(np.float64))
    cdf = np.cumsum(np.where(finite, weights, 0.0), axis=1)
    words = np.empty((batch, num, 2), dtype=np.uint32)
    cost = int(50 * (num * math.log(classes) / math.log(2) + classes))
    for first, last in parallel_for_blocks(batch, cost, threads or intra_op_threads()):
        stream = gen.skipped(first * (num + 3) // 4).words(2 * num * (last - first))
        words[first:last] = stream.reshape(last - first, num, 2)
    find = philox.uint64_to_double(words[..., 0], words[..., 1]) * cdf[:, -1:]
    return upper_bound(cdf, find).astype(out_dtype)


def _lowest(dtype: np.dtype):
    """The dtype's most negative finite value (ml_dtypes' finfo also knows bfloat16,
    whose NumPy kind is 'V')."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return float(ml_dtypes.finfo(dtype).min)


def intra_op_threads() -> int:
    """TF's default intra-op thread count: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def parallel_for_blocks(n: int, cost: int, threads: int) -> list[tuple[int, int]]:
    """The [first, last) row blocks Eigen's ThreadPoolDevice::parallelFor makes of n units
    of `cost` cycles each on `threads` threads (as TF's Shard calls it): one block when the
    whole is under about 1e5 cycles a thread, else blocks of at least n / (4 * threads)
    units, coarsened while that keeps the threads as evenly loaded."""
    wanted = min(threads, max(1, int((n * cost - 100000) / 100000 + 0.9)))
    if n <= 1 or threads <= 1 or wanted == 1:
        return [(0, n)]
    size = min(n, max(-(-n // (4 * threads)), int(40000 / cost)))
    largest = min(n, 2 * size)
    count = -(-n // size)
    best = count / (-(-count // threads) * threads)
    previous = count
    while best < 1.0 and previous > 1:
        coarser = -(-n // (previous - 1))
        if coarser > largest:
            break
        coarser_count = -(-n // coarser)
        previous = coarser_count
        efficiency = coarser_count / (-(-coarser_count // threads) * threads)
        if efficiency + 0.01 >= best:
            size, count = coarser, coarser_count
            best = max(best, efficiency)
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def upper_bound(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row b, the index of the first element of the sorted `rows[b]` greater than each
    of `values[b]` (std::upper_bound), as one bisection over all rows at once."""
    batch, width = rows.shape
    lo = np.zeros(values.shape, dtype=np.int64)
    hi = np.full(values.shape, width, dtype=np.int64)
    row = np.arange(batch)[:, None]
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        right = open_ & (rows[row, np.minimum(mid, width - 1)] <= values)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


@register_kernel("RandomGamma", "CPU")
class RandomGammaOp(_Stateful):
    """Gamma(alpha) samples, shape + alpha's shape, by TF's algorithm (below)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dtype = _numpy_dtype(ctx.get_attr("T"))

    def is_expensive(self, inputs):
        return _size(inputs[0]) * np.size(inputs[1]) > POOL_ABOVE // 4

    def compute(self, ctx, inputs):
        shape_t, alpha = inputs
        per_alpha = output_shape(shape_t)
        shape = per_alpha + np.shape(alpha)
        if math.prod(shape) == 0:
            return (generating(shape, self._dtype, lambda: np.empty(shape, self._dtype)),)
        num_alphas = np.size(alpha)
        if num_alphas == 0:
            raise _invalid(f"Input alpha should have non-zero element count, got: {num_alphas}")
        samples = math.prod(per_alpha)
        gen = self.reserve(samples * num_alphas * RESERVE_PER_OUTPUT)

        def make():
            values = _flush(gamma(gen, np.ravel(alpha).astype(np.float64), samples))
            # TF casts the double to T (a half through float, as Eigen does).
            out = values if self._dtype == np.float64 else _flush(values.astype(np.float32))
            return out.astype(self._dtype).reshape(shape)

        return (generating(shape, self._dtype, make),)


def _flush(x: np.ndarray) -> np.ndarray:
    """Subnormals to (signed) zero: TF's kernels run with flush-to-zero set."""
    tiny = np.finfo(x.dtype).tiny
    return np.where(np.abs(x) < tiny, x * 0, x)


def _double_pairs(blocks: np.ndarray, normal: bool) -> np.ndarray:
    """Two doubles a block: normals (Box-Muller) or uniforms, as [n, 2]."""
    if normal:
        return np.stack(philox.box_muller_double(*blocks.T), axis=-1)
    return philox.uint64_to_double(blocks[:, 0::2], blocks[:, 1::2])


def gamma(gen: philox.Philox, alphas: np.ndarray, per_alpha: int) -> np.ndarray:
    """TF's RandomGamma, all outputs at once: output o (alpha o // per_alpha) draws from the
    blocks at counter + 256 * o, a block of two normals or two uniforms at a time, each pair
    used last element first. alpha == 1: -log1p(-u). Otherwise Marsaglia and Tsang's
    rejection with d = alpha - 1/3 (alpha + 2/3 below 1, then times u ** (1 / alpha)).
    Returns [samples, alphas] in double."""
    n = alphas.size * per_alpha
    alpha = np.repeat(alphas, per_alpha)
    base = np.arange(n, dtype=np.uint64) * np.uint64(RESERVE_PER_OUTPUT)
    res = np.empty(n)
    one = alpha == 1.0
    if one.any():
        u = _double_pairs(gen.blocks(base[one]), normal=False)[:, 1]
        res[one] = -philox.log1p_f64(-u)
    active = np.nonzero(~one)[0]
    less = alpha < 1
    d = alpha + np.where(less, 2.0 / 3, -1.0 / 3)
    c = 1.0 / 3 / np.sqrt(d)
    used = np.zeros(n, dtype=np.uint64)  # blocks taken so far
    norm, norm_left = np.zeros((n, 2)), np.zeros(n, dtype=np.int64)
    unif, unif_left = np.zeros((n, 2)), np.zeros(n, dtype=np.int64)

    def take(rows, buf, left, normal):
        """The next value of each row's pair, drawing a new block where it is used up."""
        empty = rows[left[rows] == 0]
        if empty.size:
            buf[empty] = _double_pairs(gen.blocks(base[empty] + used[empty]), normal)
            used[empty] += np.uint64(1)
            left[empty] = 2
        left[rows] -= 1
        return buf[rows, left[rows]]

    while active.size:
        x = take(active, norm, norm_left, True)
        v = 1 + c[active] * x
        ok = ~(v <= 0)  # as TF's test: NaN goes on
        rows, x, v = active[ok], x[ok], v[ok]
        v = v * v * v
        u = take(rows, unif, unif_left, False)
        xx = x * x
        accept = u < 1 - 0.0331 * xx * xx
        slow = ~accept
        dr = d[rows[slow]]
        accept[slow] = philox.log_f64(u[slow]) < (
            0.5 * x[slow] * x[slow] + dr * (1 - v[slow] + philox.log_f64(v[slow])))
        done, value = rows[accept], d[rows[accept]] * v[accept]
        boost = less[done]
        if boost.any():
            b = take(done[boost], unif, unif_left, False)
            value[boost] *= philox.pow_f64(b, 1 / alpha[done[boost]])
        res[done] = value
        finished = np.zeros(n, dtype=bool)
        finished[done] = True
        active = active[~finished[active]]
    return res.reshape(alphas.size, per_alpha).T


# -- stateless ---------------------------------------------------------------------------------

def key_counter_from_seed(seed) -> philox.Philox:
    """TF's GenerateKey: one Philox block of the seed under a fixed key; its first two
    words are the key, its last two the counter's high half."""
    if np.shape(seed) != (2,):
        raise _invalid(f"seed must have shape [2], not {shape_str(np.shape(seed))}")
    s0, s1 = (int(v) & philox.M64 for v in np.asarray(seed).tolist())
    counter = (s0, s0 >> 32, s1, s1 >> 32)
    mix = philox.philox_blocks(_STATELESS_KEY, counter, np.zeros(1, np.uint64))[0]
    return philox.Philox((mix[0], mix[1]), (0, 0, mix[2], mix[3]))


def key_counter_from_inputs(key, counter, alg) -> philox.Philox:
    """The generator the V2 ops' key, counter and alg inputs name, with TF's checks in TF's
    order; only Philox (and auto-select, which is Philox on CPU) has a CPU kernel."""
    if np.ndim(alg) != 0:
        raise _invalid(f"alg must be a scalar; got a tensor of shape {shape_str(np.shape(alg))}")
    alg = int(alg)
    if np.shape(key) != (1,):
        raise _invalid(f"key must have shape [1], not {shape_str(np.shape(key))}. (Note that "
                       "batched keys are not supported yet.)")
    need = _COUNTER_SIZE.get(alg, max(alg, 0))
    if np.ndim(counter) != 1 or np.size(counter) < need:
        raise _invalid(f"counter must be a vector with length at least {need}; got shape: "
                       f"{shape_str(np.shape(counter))}. (Note that batched counters are not "
                       "supported yet.)")
    if alg not in (RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT):
        raise _invalid(f"Unsupported algorithm id: {alg}")
    k = int(np.asarray(key).reshape(-1)[0])
    # TF checks for one counter word and reads two; a missing second word is 0 here (TF
    # reads past the end: 0 when the counter came from a constant, else whatever is there).
    c0, c1 = (np.asarray(counter).reshape(-1).tolist() + [0])[:2]
    c0, c1 = int(c0), int(c1)
    return philox.Philox((k, k >> 32), (c0, c0 >> 32, c1, c1 >> 32))


#: Counter words (uint64) TF 2.21 checks for, per algorithm; for an unknown id n, n words.
_COUNTER_SIZE = {RNG_ALG_PHILOX: 1, RNG_ALG_THREEFRY: 2, RNG_ALG_AUTO_SELECT: 1}


class _Stateless(_BySize):
    """The V1 stateless ops: shape, seed -> values."""

    generator_inputs = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dtype = _numpy_dtype(ctx.get_attr("dtype"))

    def generator(self, inputs) -> philox.Philox:
        return key_counter_from_seed(inputs[1])

    def compute(self, ctx, inputs):
        shape = output_shape(inputs[0])
        gen = self.generator(inputs)
        n = math.prod(shape)
        return (generating(shape, self._dtype,
                           lambda: self.generate(gen, n, inputs).reshape(shape)),)

    def generate(self, gen, n, inputs):
        raise NotImplementedError


class _StatelessV2(_Stateless):
    """The V2 forms: shape, key, counter, alg -> values."""

    generator_inputs = 3

    def generator(self, inputs) -> philox.Philox:
        return key_counter_from_inputs(inputs[1], inputs[2], inputs[3])


def _uniform(self, gen, n, inputs):
    dtype = self._dtype
    return philox.fill(gen, n, philox.block_width(dtype),
                       lambda b: philox.uniform_block(b, dtype))


def _normal(self, gen, n, inputs):
    dtype = self._dtype
    return philox.fill(gen, n, philox.block_width(dtype), lambda b: philox.normal_block(b, dtype))


def _truncated(self, gen, n, inputs):
    return philox.fill_truncated(gen, n, self._dtype)


def _full_int(self, gen, n, inputs):
    dtype = self._dtype
    return philox.fill(gen, n, philox.block_width(dtype), lambda b: philox.full_int_block(b, dtype))


def _uniform_int(self, gen, n, inputs):
    minval, maxval = inputs[-2:]
    _check_bounds(minval, maxval)
    if n == 0:
        return np.empty(0, self._dtype)
    lo, span = _int_span(minval, maxval)
    return uniform_int(gen, n, self._dtype, lo, span)


for _base, _suffix in ((_Stateless, ""), (_StatelessV2, "V2")):
    for _op, _fn in (("StatelessRandomUniform", _uniform), ("StatelessRandomNormal", _normal),
                     ("StatelessTruncatedNormal", _truncated),
                     ("StatelessRandomUniformInt", _uniform_int),
                     ("StatelessRandomUniformFullInt", _full_int)):
        # TF has no CPU kernel of StatelessRandomUniformIntV2 for unsigned types.
        only = ({"dtype": [dtypes.int32, dtypes.int64]}
                if _op == "StatelessRandomUniformInt" else {})
        register_kernel(_op + _suffix, "CPU", **only)(type(
            _op + _suffix + "Op", (_base,),
            {"generate": _fn, "__doc__": f"{_op}{_suffix}: TF's values for its seed."}))


def _key_counter_outputs(gen: philox.Philox) -> tuple[np.ndarray, np.ndarray]:
    k, c = gen.key, gen.counter
    return (np.array([k[0] | k[1] << 32], np.uint64),
            np.array([c[0] | c[1] << 32, c[2] | c[3] << 32], np.uint64))


@register_kernel("StatelessRandomGetKeyCounterAlg", "CPU")
class StatelessRandomGetKeyCounterAlgOp(OpKernel):
    """The key, counter and algorithm (Philox on CPU) a seed stands for."""

    def compute(self, ctx, inputs):
        return _key_counter_outputs(key_counter_from_seed(inputs[0])) + (
            np.int32(RNG_ALG_PHILOX),)


@register_kernel("StatelessRandomGetKeyCounter", "CPU")
class StatelessRandomGetKeyCounterOp(OpKernel):
    """The key and counter a seed stands for."""

    def compute(self, ctx, inputs):
        return _key_counter_outputs(key_counter_from_seed(inputs[0]))


@register_kernel("StatelessRandomGetAlg", "CPU")
class StatelessRandomGetAlgOp(OpKernel):
    """The algorithm auto-select stands for on CPU: Philox."""

    def compute(self, ctx, inputs):
        return (np.int32(RNG_ALG_PHILOX),)


