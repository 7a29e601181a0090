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
#: Calls whose input types a chain notes before its compile starts.
OBSERVE = 3
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


def chain_source(dtype: np.dtype, ndim: int, num_inputs: int, steps: list,
                 outputs: list[int]) -> str:
    """The Python source of `chain(i0, i1, ...)`: `steps` are (op, operands) with operands
    ("in", k) for input k or ("step", j) for step j's value; the chain returns the values
    of the steps in `outputs` as new arrays of the inputs' shape. It raises ValueError
    when the inputs' shapes differ."""
    params = [f"i{k}" for k in range(num_inputs)]
    index = ", ".join(f"a{d}" for d in range(ndim))
    lines = [f"def chain({', '.join(params)}):",
             "    shape = i0.shape"]
    if num_inputs > 1:
        same = " or ".join(f"{p}.shape != shape" for p in params[1:])
        lines += [f"    if {same}:", "        raise ValueError('shapes differ')"]
    for n, _ in enumerate(outputs):
        lines.append(f"    o{n} = np.empty(shape, np.{dtype.name})")
    lines.append(f"    _ONE = np.{dtype.name}(1)")
    indent = "    "
    for d in range(ndim):
        lines.append(f"{indent}for a{d} in range(shape[{d}]):")
        indent += "    "
    for k in range(num_inputs):
        lines.append(f"{indent}x{k} = i{k}[{index}]")
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
            except TypeError:  # another type or rank than compiled: one by one from now
                self._fn = None
                self._failed = True
                return None
        if not self._started and not self._failed:
            self._observe(inputs)
        return None

    def _observe(self, inputs) -> None:
        """Note the inputs' types; after OBSERVE calls, start the compile of what they
        were (a loop's first iteration often sees other layouts than the next ones: an
        initial value against a view)."""
        first = inputs[0]
        if not jit.ENABLED or not all(isinstance(x, np.ndarray) for x in inputs) or \
                first.ndim == 0 or first.dtype not in TYPES:
            self._failed = True
            self._done.set()
            return
        import numba

        self._seen.add(tuple(numba.typeof(x) for x in inputs))
        self._calls += 1
        if self._calls < OBSERVE:
            return
        self._started = True
        self.source = chain_source(first.dtype, first.ndim, self.num_inputs, self.steps,
                                   self.outputs)
        # (and for any strides, read-only or not: other views or constants later still
        # run compiled; numba passes a writable array where a read-only one is declared)
        seen = next(iter(self._seen))
        anyhow = tuple(t.copy(layout="A", readonly=True) for t in seen)
        threading.Thread(target=self._compile, args=(self._seen | {anyhow},), daemon=True,
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
            fn.disable_compile()  # another signature raises TypeError: one by one
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
