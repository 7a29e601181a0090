"""A chain of element-wise float arithmetic (Mul, AddV2, Sub, SigmoidGrad, TanhGrad, AddN,
...) as one numba loop: what a compiled while loop runs instead of one NumPy call a node
(an LSTM gradient's gates: 13 nodes of 32x64 an iteration, ~2 µs of NumPy's call
overhead each, a few hundred nanoseconds of arithmetic).

Same values, bit for bit: each op's scalar form (FORMS) is its NumPy kernel's formula,
operand for operand and in its order, in the inputs' float type (float32 stays float32:
its constants are float32), and numba compiles with fastmath off, so LLVM neither
reorders nor contracts a multiply and an add into an FMA. Only IEEE's correctly rounded
operations are here (+, -, *, /); transcendental ops (Exp, Tanh, Sigmoid) are not: NumPy's
SIMD versions and the C library's differ in the last bits.

`FusedChain(steps, outputs, ...)` is called with the chain's inputs (arrays of one shape
and float type) and returns its outputs, or None: not compiled yet (the compile of the
inputs' signature starts on a daemon thread at the first call; numba's compile takes
~0.3-1 s, which must not stall the event loop), inputs of other shapes or types (the
caller then runs the nodes one by one), or numba is missing or switched off (jit.py).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from aioflow.kernels import jit

#: op type -> its scalar form: a format string over the operands' expressions ({0}, {1},
#: ... in input order; `_ONE` is 1 in the operands' type), as the NumPy kernel computes
#: it (cwise_kernels.py's operators, grad_kernels.py's `dy * formula(y)`).
FORMS = {
    "Add": "({0} + {1})",
    "AddV2": "({0} + {1})",
    "Sub": "({0} - {1})",
    "Mul": "({0} * {1})",
    "RealDiv": "({0} / {1})",
    "Neg": "(-{0})",
    "Square": "({0} * {0})",
    "SigmoidGrad": "({1} * ({0} * (_ONE - {0})))",
    "TanhGrad": "({1} * (_ONE - ({0} * {0})))",
}
#: What a chain's input is: an array of the chain's rank, a 0-d array, a NumPy scalar.
ARRAY, ZERO_D, SCALAR = 0, 1, 2
#: Calls whose input types a chain notes before its compile starts.
OBSERVE = 3
#: Signatures a chain compiles at most (the observed ones, any strides read-only or
#: writable, and those met later).
MAX_SIGNATURES = 6
#: The float types a chain computes in.
TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def form(op: str, operands: list[str]) -> str | None:
    """The scalar expression of `op` over `operands` (None: not an op of FORMS). AddN
    sums left to right, as its kernel does (np.add of the first two, then each next)."""
    if op == "AddN":
        expr = operands[0]
        for other in operands[1:]:
            expr = f"({expr} + {other})"
        return expr
    pattern = FORMS.get(op)
    return None if pattern is None else pattern.format(*operands)


def chain_source(dtype: np.dtype, ndim: int, scalars: tuple, steps: list,
                 outputs: list[int]) -> str:
    """The Python source of `chain(i0, i1, ...)`: `steps` are (op, operands) with operands
    ("in", k) for input k or ("step", j) for step j's value; input k is an array of `ndim`
    dimensions, a 0-d array or a NumPy scalar as `scalars[k]` says (ARRAY, ZERO_D,
    SCALAR: constants are the last two); the chain returns the values
    of the steps in `outputs` as new arrays of the inputs' shape. It raises ValueError
    when the arrays' shapes differ."""
    arrays = [k for k, kind in enumerate(scalars) if kind == ARRAY]
    index = ", ".join(f"a{d}" for d in range(ndim))
    lines = [f"def chain({', '.join(f'i{k}' for k in range(len(scalars)))}):",
             f"    shape = i{arrays[0]}.shape"]
    if len(arrays) > 1:
        same = " or ".join(f"i{k}.shape != shape" for k in arrays[1:])
        lines += [f"    if {same}:", "        raise ValueError('shapes differ')"]
    for n, _ in enumerate(outputs):
        lines.append(f"    o{n} = np.empty(shape, np.{dtype.name})")
    lines.append(f"    _ONE = np.{dtype.name}(1)")
    lines += [f"    x{k} = i{k}[()]" for k, kind in enumerate(scalars) if kind == ZERO_D]
    lines += [f"    x{k} = i{k}" for k, kind in enumerate(scalars) if kind == SCALAR]
    indent = "    "
    for d in range(ndim):
        lines.append(f"{indent}for a{d} in range(shape[{d}]):")
        indent += "    "
    lines += [f"{indent}x{k} = i{k}[{index}]" for k in arrays]
    for j, (op, operands) in enumerate(steps):
        names = [f"x{ref}" if kind == "in" else f"t{ref}" for kind, ref in operands]
        lines.append(f"{indent}t{j} = {form(op, names)}")
    for n, j in enumerate(outputs):
        lines.append(f"{indent}o{n}[{index}] = t{j}")
    lines.append(f"    return ({''.join(f'o{n}, ' for n in range(len(outputs)))})")
    return "\n".join(lines) + "\n"


#: Every chain made, while it lives (wait_ready waits for their compiles).
_made: weakref.WeakSet = weakref.WeakSet()


def wait_ready(timeout: float | None = None) -> bool:
    """Wait for the compiles of every chain started so far (benchmarks time the compiled
    steady state; tests); whether all compiled."""
    return all([chain.wait_ready(timeout) for chain in list(_made) if chain._started])


class FusedChain:
    """One chain, compiled for the signature of the inputs it first sees."""

    def __init__(self, steps: list, outputs: list[int], num_inputs: int, name: str):
        self.steps = steps
        self.outputs = outputs
        self.num_inputs = num_inputs
        self.name = name
        self.source: str | None = None
        self._fn = None         # the compiled chain once ready
        self._seen: set = set()  # the numba signatures of the calls observed
        self._calls = 0
        self._dtype = self._ndim = self._scalars = None  # what the chain is compiled for
        self._started = False
        self._failed = False    # numba missing, a compile error, or other inputs later
        self._done = threading.Event()
        _made.add(self)

    def __call__(self, *inputs):
        fn = self._fn
        if fn is not None:
            try:
                return fn(*inputs)
            except ValueError:  # shapes differ: these nodes one by one this time
                return None
            except TypeError:  # strides or writability not compiled for: compile them
                self._fn = None
                self._retype(inputs)
                return None
        if not self._started and not self._failed:
            self._observe(inputs)
        return None

    def _observe(self, inputs) -> None:
        """Note the inputs' types; after OBSERVE calls, start the compile of what they
        were (a loop's first iteration often sees other layouts than the next ones: an
        initial value against a view)."""
        if not jit.ENABLED or not self._same_kind(inputs):
            self._failed = True
            self._done.set()
            return
        import numba

        self._seen.add(tuple(numba.typeof(x) for x in inputs))
        self._calls += 1
        if self._calls < OBSERVE:
            return
        self._started = True
        self.source = chain_source(self._dtype, self._ndim, self._scalars, self.steps,
                                   self.outputs)
        # (and for any strides, read-only or not: other arrays later still run compiled
        # where one signature takes them; where two would, numba's TypeError sends them
        # to _retype, which compiles theirs exactly)
        seen = next(iter(self._seen))
        self._seen.add(tuple(t.copy(layout="A", readonly=True) if kind != SCALAR else t
                             for t, kind in zip(seen, self._scalars, strict=True)))
        self._start_compile()

    def _same_kind(self, inputs) -> bool:
        """Whether the inputs are arrays of one float type (of TYPES) and one rank, but
        for 0-d arrays and NumPy scalars (constants), as those first seen."""
        if not all(isinstance(x, (np.ndarray, np.generic)) for x in inputs):
            return False
        arrays = [x for x in inputs if x.ndim]
        if not arrays or arrays[0].dtype not in TYPES:
            return False
        kind = (arrays[0].dtype, arrays[0].ndim,
                tuple(ARRAY if x.ndim else ZERO_D if x.__class__ is np.ndarray else SCALAR
                      for x in inputs))
        if self._dtype is None:
            self._dtype, self._ndim, self._scalars = kind
        return kind == (self._dtype, self._ndim, self._scalars) and all(
            x.dtype == self._dtype for x in inputs)

    def _retype(self, inputs) -> None:
        """Inputs the compiled chain did not take: of its type and rank, compile their
        signature too (the nodes run meanwhile), up to MAX_SIGNATURES; else the nodes
        from now on."""
        if self._failed or not self._same_kind(inputs) or \
                len(self._seen) >= MAX_SIGNATURES:
            self._failed = True
            return
        import numba

        self._seen.add(tuple(numba.typeof(x) for x in inputs))
        self._start_compile()

    def _start_compile(self) -> None:
        self._done.clear()
        threading.Thread(target=self._compile, args=(frozenset(self._seen),), daemon=True,
                         name=f"aioflow-chain-{self.name}").start()

    def _compile(self, signatures) -> None:
        try:
            import numba

            namespace = {"np": np}
            exec(compile(self.source, f"<aioflow fused chain {self.name}>", "exec"),  # noqa: S102
                 namespace)
            fn = numba.njit(nogil=True, boundscheck=False, error_model="numpy",
                            fastmath=False)(namespace["chain"])
            for signature in signatures:
                fn.compile(signature)
            fn.disable_compile()  # another signature raises TypeError (see _retype)
            self._fn = fn
        except Exception:  # noqa: BLE001 - numba could not compile it: one by one
            self._failed = True
        finally:
            self._done.set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for a started compile to end (tests, benchmarks); whether it compiled."""
        if self._started:
            self._done.wait(timeout)
        return self._fn is not None
