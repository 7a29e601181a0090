"""A chain of element-wise float ops (Mul, AddV2, Sub, SigmoidGrad, TanhGrad, AddN,
Sigmoid, Tanh, ...) as a few numba loops: what a compiled while loop runs instead of one
NumPy call a node (an LSTM's gates: 10-13 nodes of 32x64 an iteration, ~2 µs of NumPy's
call overhead each, a few hundred nanoseconds of arithmetic).

Same values, bit for bit: each arithmetic op's scalar form (FORMS) is its NumPy kernel's
formula, operand for operand and in its order, in the inputs' float type (float32 stays
float32: its constants are float32), and numba compiles with fastmath off, so LLVM
neither reorders nor contracts a multiply and an add into an FMA; these are IEEE's
correctly rounded operations (+, -, *, /). Transcendental ops (UFUNCS: Tanh, Exp) run as
NumPy's own ufuncs on whole arrays between the numba loops (NumPy's SIMD versions and the
C library's differ in the last bits); Sigmoid as its kernel computes it, 1 / (1 + exp(-x)):
the negation in one loop, NumPy's exp, the rest in the next loop. A chain is therefore a
sequence of stages: a loop of the arithmetic whose inputs are ready, the ufuncs of its
results, the next loop, ...

`FusedChain(steps, outputs, ...)` is called with the chain's inputs (arrays of one shape
and float type, or constants: 0-d arrays and NumPy scalars) and returns its outputs, or
None: not compiled yet (it notes the types of its first OBSERVE calls, then compiles on a
daemon thread; numba's compile takes ~0.3-1 s, which must not stall the event loop),
inputs of other shapes or types (the caller then runs the nodes one by one), or numba is
missing or switched off (jit.py).
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
    "_OneOverOnePlus": "(_ONE / (_ONE + {0}))",  # Sigmoid's np.reciprocal(1 + e)
}
#: Transcendental ops: NumPy's ufunc on the whole array, as their kernels run them.
UFUNCS = {"Tanh": np.tanh, "Exp": np.exp}
#: The op types a chain takes (Sigmoid: Neg, Exp, _OneOverOnePlus).
OPS = frozenset(FORMS) - {"_OneOverOnePlus"} | {"AddN", "Sigmoid", *UFUNCS}
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


def loop_source(name: str, dtype: np.dtype, ndim: int, kinds: tuple, steps: list,
                outputs: list[int]) -> str:
    """The Python source of the numba loop `name(i0, i1, ...)`: `steps` are (op, operands)
    of FORMS with operands ("in", k) for argument k or ("step", j) for step j's value;
    argument k is an array of `ndim` dimensions, a 0-d array or a NumPy scalar as
    `kinds[k]` says (ARRAY, ZERO_D, SCALAR); the loop returns the values of the steps in
    `outputs` as new arrays of the arrays' shape. It raises ValueError when the arrays'
    shapes differ."""
    arrays = [k for k, kind in enumerate(kinds) if kind == ARRAY]
    index = ", ".join(f"a{d}" for d in range(ndim))
    lines = [f"def {name}({', '.join(f'i{k}' for k in range(len(kinds)))}):",
             f"    shape = i{arrays[0]}.shape"]
    if len(arrays) > 1:
        same = " or ".join(f"i{k}.shape != shape" for k in arrays[1:])
        lines += [f"    if {same}:", "        raise ValueError('shapes differ')"]
    for n, _ in enumerate(outputs):
        lines.append(f"    o{n} = np.empty(shape, np.{dtype.name})")
    lines.append(f"    _ONE = np.{dtype.name}(1)")
    lines += [f"    x{k} = i{k}[()]" for k, kind in enumerate(kinds) if kind == ZERO_D]
    lines += [f"    x{k} = i{k}" for k, kind in enumerate(kinds) if kind == SCALAR]
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


def primitives(steps: list, outputs: list[int]) -> tuple[list, list[int]]:
    """The chain's steps with each Sigmoid as its kernel's three (Neg, Exp,
    _OneOverOnePlus), operands renumbered; and the outputs' new step numbers."""
    prims: list = []
    final: list[int] = []
    for op, operands in steps:
        refs = [(kind, ref if kind == "in" else final[ref]) for kind, ref in operands]
        if op == "Sigmoid":
            prims.append(("Neg", refs))
            prims.append(("Exp", [("step", len(prims) - 1)]))
            prims.append(("_OneOverOnePlus", [("step", len(prims) - 1)]))
        else:
            prims.append((op, refs))
        final.append(len(prims) - 1)
    return prims, [final[k] for k in outputs]


class _Stages:
    """A chain as stages: per level, NumPy's ufuncs on values ready before it, then one
    numba loop of the arithmetic that needs nothing later (a ufunc's value is a level
    after its operand's). `source` is the runner `run(i0, ...)` calling them in turn;
    `loops` the numba loops' (name, source, argument refs: ("in", k) or ("step", p));
    `kinds` what each value is (ARRAY, ZERO_D, SCALAR). Raises ValueError for a chain
    with a loop of constants only."""

    def __init__(self, steps: list, outputs: list[int], kinds: tuple, dtype, ndim: int):
        prims, outs = primitives(steps, outputs)
        level: list[int] = []
        for op, operands in prims:
            deepest = max((level[r] for kind, r in operands if kind == "step"), default=0)
            level.append(deepest + 1 if op in UFUNCS else deepest)
        used_apart = set(outs)  # values needed outside their own level's loop
        for p, (op, operands) in enumerate(prims):
            for kind, r in operands:
                if kind == "step" and (op in UFUNCS or level[r] != level[p]
                                       or prims[r][0] in UFUNCS):
                    used_apart.add(r)
        value_kind = {("in", k): kind for k, kind in enumerate(kinds)}
        run = [f"def run({', '.join(f'i{k}' for k in range(len(kinds)))}):"]
        self.loops: list = []
        self.ufuncs = {}
        for lv in range(max(level, default=0) + 1):
            for p, (op, operands) in enumerate(prims):
                if level[p] == lv and op in UFUNCS:
                    self.ufuncs[f"_{op.lower()}"] = UFUNCS[op]
                    (ref,) = operands
                    run.append(f"    p{p} = _{op.lower()}({_name(ref)})")
                    value_kind[("step", p)] = ARRAY if value_kind[ref] == ARRAY else SCALAR
            mine = [p for p in range(len(prims)) if level[p] == lv and prims[p][0] not in UFUNCS]
            if not mine:
                continue
            args: list = []
            local = {p: j for j, p in enumerate(mine)}
            body = []
            for p in mine:
                refs = []
                for kind, r in prims[p][1]:
                    if kind == "step" and r in local:
                        refs.append(("step", local[r]))
                        continue
                    if (kind, r) not in args:
                        args.append((kind, r))
                    refs.append(("in", args.index((kind, r))))
                body.append((prims[p][0], refs))
            exported = [p for p in mine if p in used_apart]
            arg_kinds = tuple(value_kind[a] for a in args)
            if ARRAY not in arg_kinds or not exported:
                raise ValueError("a stage of constants only")  # (not fused)
            name = f"loop{lv}"
            self.loops.append((name, loop_source(name, dtype, ndim, arg_kinds, body,
                                                 [local[p] for p in exported]), args))
            for p in exported:
                value_kind[("step", p)] = ARRAY
            run.append(f"    {''.join(f'p{p}, ' for p in exported)}= "
                       f"{name}({', '.join(_name(a) for a in args)})")
        run.append(f"    return ({''.join(f'p{p}, ' for p in outs)})")
        self.kinds = value_kind
        self.source = "\n".join(run) + "\n"
        self.dtype, self.ndim = dtype, ndim


def _name(ref) -> str:
    kind, r = ref
    return f"i{r}" if kind == "in" else f"p{r}"


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
        self._fn = None         # the compiled chain once ready (its runner)
        self._stages: _Stages | None = None
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
        try:
            self._stages = _Stages(self.steps, self.outputs, self._scalars, self._dtype,
                                   self._ndim)
        except ValueError:
            self._failed = True
            self._done.set()
            return
        self.source = "".join([self._stages.source] + [s for _, s, _ in self._stages.loops])
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
                         name=f"aioflow-chain-{self.name}-jit").start()

    def _compile(self, signatures) -> None:
        try:
            import numba

            stages = self._stages
            namespace = {"np": np, **stages.ufuncs}
            for name, source, args in stages.loops:
                exec(compile(source, f"<aioflow fused chain {self.name}>", "exec"),  # noqa: S102
                     namespace)
                loop = namespace[name] = numba.njit(
                    nogil=True, boundscheck=False, error_model="numpy",
                    fastmath=False)(namespace[name])
                for signature in signatures:
                    loop.compile(tuple(signature[r] if kind == "in" else
                                       self._internal_type(stages.kinds[(kind, r)])
                                       for kind, r in args))
                loop.disable_compile()  # another signature raises TypeError (_retype)
            exec(compile(stages.source, f"<aioflow fused chain {self.name}>", "exec"),  # noqa: S102
                 namespace)
            self._fn = namespace["run"]
        except Exception:  # noqa: BLE001 - numba could not compile it: one by one
            self._failed = True
        finally:
            self._done.set()

    def _internal_type(self, kind):
        """The numba type of a value the chain makes: a new array (C order, writable),
        or a ufunc's scalar of a constant."""
        import numba

        scalar = numba.from_dtype(self._dtype)
        return numba.types.Array(scalar, self._ndim, "C") if kind == ARRAY else scalar

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for a started compile to end (tests, benchmarks); whether it compiled."""
        if self._started:
            self._done.wait(timeout)
        return self._fn is not None
