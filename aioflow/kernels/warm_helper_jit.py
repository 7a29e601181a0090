"""The compiled half of the warm helper (aioflow/kernels/warm_helper.py): the loops that
wait for a job with the GIL released, and the native calls a job makes, in numba's
nopython mode. Imported (numba with it) only by the helper's background compile.

Atomics: `_load`, `_store` and `_cas` are LLVM's seq_cst atomic load, store and
compare-exchange on an int64 array element (numba exposes none on the CPU; an
@intrinsic emits them). seq_cst makes the two sides' "store my flag, then read yours"
sequences (the sleep handshake of warm_helper.py's docstring) see each other: on x86
the store is an xchg (a full barrier), so a later load cannot pass it, which a plain
store followed by a load could on TSO (its store buffer). The atomic loads are also
never hoisted out of a loop by the compiler, and each spin iteration calls
sched_yield, an opaque call, besides. Data: the caller's plain stores of a job's
words come before its seq_cst store of STATE = POSTED_NATIVE or POSTED_PYTHON, which
the helper's compare-exchange reads (release, then acquire: the helper sees the words); the
helper's results (STATUS, the GEMM's output) come before its seq_cst store of DONE,
which the caller's load reads before it looks at them.

Sleeping: a futex wait on a control word (through libc's syscall(): no GIL, no Python
object), woken by the other side's futex wake after it cleared the word.

Native calls: `_call4(addr, a, b, c, d)` calls a C function `int f(void*, void*, int,
void*)`-like (four integer or pointer arguments: a oneDNN primitive's execution,
sched_yield and clock_gettime with the rest ignored), `_syscall3` libc's syscall(),
and `_call_sgemm`
a BLAS-like `int f(char, char, i64 M, N, K, float alpha, void* A, i64 lda, void* B,
i64 ldb, float beta, void* C, i64 ldc)` (oneDNN's dnnl_sgemm), through their addresses
given as int64 at run time: no ctypes object is frozen into the compiled code, which
numba's disk cache could not keep."""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

from aioflow.kernels.warm_helper import (  # noqa: F401 - the control words' layout
    ARGS,
    CALL,
    DONE,
    FINISHED,
    IDLE,
    JOBS,
    KIND,
    POSTED_NATIVE,
    POSTED_PYTHON,
    PYTHON,
    RECLAIMED,
    RUN_PYTHON,
    SGEMM,
    SLEEPING,
    STATE,
    STATUS,
    STOP,
    STOPPED,
    TAKEN,
    WAITING,
    WORDS,
)

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_I8 = ir.IntType(8)
_F32 = ir.FloatType()


def _element(context, builder, arrty, arr, idx):
    a = context.make_array(arrty)(context, builder, arr)
    return builder.gep(a.data, [idx])


@intrinsic
def _load(typingctx, arr, idx):
    def codegen(context, builder, sig, args):
        ptr = _element(context, builder, sig.args[0], args[0], args[1])
        return builder.load_atomic(ptr, "seq_cst", 8)
    return types.int64(arr, idx), codegen


@intrinsic
def _store(typingctx, arr, idx, value):
    def codegen(context, builder, sig, args):
        ptr = _element(context, builder, sig.args[0], args[0], args[1])
        builder.store_atomic(args[2], ptr, "seq_cst", 8)
        return context.get_dummy_value()
    return types.void(arr, idx, value), codegen


@intrinsic
def _cas(typingctx, arr, idx, expected, new):
    """arr[idx] = new if it holds `expected`; the value it held."""
    def codegen(context, builder, sig, args):
        ptr = _element(context, builder, sig.args[0], args[0], args[1])
        pair = builder.cmpxchg(ptr, args[2], args[3], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)
    return types.int64(arr, idx, expected, new), codegen


@intrinsic
def _call4(typingctx, addr, a, b, c, d):
    """int addr(i64 a, i64 b, int c, i64 d), sign-extended (integer and pointer
    arguments travel in the same registers whatever their C type)."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I32, [_I64, _I64, _I32, _I64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        out = builder.call(fn, [args[1], args[2], builder.trunc(args[3], _I32), args[4]])
        return builder.sext(out, _I64)
    return types.int64(addr, a, b, c, d), codegen


@intrinsic
def _syscall3(typingctx, addr, number, a, b, c):
    """libc's syscall(number, a, b, c, 0, 0, 0) at addr (its variadic arguments all
    integers: they travel in the integer registers)."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I64, [_I64] * 7)
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        zero = ir.Constant(_I64, 0)
        return builder.call(fn, [args[1], args[2], args[3], args[4], zero, zero, zero])
    return types.int64(addr, number, a, b, c), codegen


@intrinsic
def _call_sgemm(typingctx, addr, arr, base):
    """The BLAS-like GEMM at addr called with arr[base:base + 13]: transa, transb (the
    characters' codes), M, N, K, alpha (float32 bits), A, lda, B, ldb, beta (bits), C,
    ldc."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I32, [_I8, _I8, _I64, _I64, _I64, _F32, _I64, _I64, _I64,
                                      _I64, _F32, _I64, _I64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        words = [builder.load(_element(context, builder, sig.args[1], args[1],
                                       builder.add(args[2], ir.Constant(_I64, i))))
                 for i in range(13)]
        for i in (0, 1):
            words[i] = builder.trunc(words[i], _I8)
        for i in (5, 10):
            words[i] = builder.bitcast(builder.trunc(words[i], _I32), _F32)
        return builder.sext(builder.call(fn, words), _I64)
    return types.int64(addr, arr, base), codegen


@numba.njit(nogil=True, cache=True)
def _now_ns(clock, ts):
    """CLOCK_MONOTONIC in ns through libc's clock_gettime at `clock` (ts: 2 int64s)."""
    _call4(clock, 1, ts.ctypes.data, 0, 0)
    return ts[0] * 1_000_000_000 + ts[1]


@numba.njit(nogil=True, cache=True)
def _run_native(ctrl):
    kind = ctrl[KIND]
    if kind == SGEMM:
        return _call_sgemm(ctrl[ARGS], ctrl, ARGS + 1)
    status = _call4(ctrl[ARGS], ctrl[ARGS + 1], ctrl[ARGS + 2], ctrl[ARGS + 3], ctrl[ARGS + 4])
    if status == 0 and ctrl[ARGS + 5] != 0:  # a second call (a stream's wait)
        status = _call4(ctrl[ARGS + 5], ctrl[ARGS + 6], ctrl[ARGS + 7], ctrl[ARGS + 8],
                        ctrl[ARGS + 9])
    return status


@numba.njit(nogil=True, cache=True)
def _sleep_on(ctrl, word, sys):
    """Sleeps while ctrl[word] is 1 (futex wait on its low 32 bits; returns at once if it
    is not 1, or on a wake or a signal: the caller looks again)."""
    _syscall3(sys[0], sys[1], ctrl.ctypes.data + 8 * word, sys[2], 1)


@numba.njit(nogil=True, cache=True)
def _wake(ctrl, word, sys):
    """ctrl[word] = 0 and wakes its sleeper, if it was 1."""
    if _load(ctrl, word) == 1:
        _store(ctrl, word, 0)
        _syscall3(sys[0], sys[1], ctrl.ctypes.data + 8 * word, sys[3], 1)


@numba.njit(nogil=True, cache=True)
def serve(ctrl, spin_ns, sys, ts):
    """The helper's life in compiled code, the GIL released: polls for a posted job up
    to spin_ns after its last one (sched_yield between polls), then
    sleeps (futex) until a caller posts one; runs native jobs itself; returns
    RUN_PYTHON when a Python job is posted (not taken: `take` takes it holding the GIL,
    so that a caller never waits for a helper waiting for the GIL), or STOPPED.
    sys: syscall()'s address, SYS_futex, FUTEX_WAIT and FUTEX_WAKE (private),
    clock_gettime's address, sched_yield's."""
    deadline = _now_ns(sys[4], ts) + spin_ns
    while True:
        if _load(ctrl, STOP) != 0:
            return STOPPED
        state = _load(ctrl, STATE)
        if state == POSTED_PYTHON:
            return RUN_PYTHON  # taken (`take`) once the helper holds the GIL
        if state == POSTED_NATIVE and _cas(ctrl, STATE, POSTED_NATIVE, TAKEN) == POSTED_NATIVE:
            _store(ctrl, JOBS, ctrl[JOBS] + 1)
            ctrl[STATUS] = _run_native(ctrl)
            _store(ctrl, STATE, DONE)
            _wake(ctrl, WAITING, sys)
            deadline = _now_ns(sys[4], ts) + spin_ns
            continue
        if _now_ns(sys[4], ts) >= deadline:
            # the sleep handshake (warm_helper.py): announce, look once more, sleep
            _store(ctrl, SLEEPING, 1)
            state = _load(ctrl, STATE)
            if state != POSTED_NATIVE and state != POSTED_PYTHON and _load(ctrl, STOP) == 0:
                _sleep_on(ctrl, SLEEPING, sys)
            _store(ctrl, SLEEPING, 0)
            deadline = _now_ns(sys[4], ts) + spin_ns
            continue
        _call4(sys[5], 0, 0, 0, 0)  # sched_yield


@numba.njit(nogil=True, cache=True)
def post(ctrl, kind, sys):
    """Posts the job whose arguments the caller wrote, waking the helper if it sleeps."""
    ctrl[KIND] = kind
    _store(ctrl, WAITING, 0)
    _store(ctrl, STATE, POSTED_PYTHON if kind == PYTHON else POSTED_NATIVE)
    _wake(ctrl, SLEEPING, sys)


@numba.njit(cache=True)
def take(ctrl):
    """The helper, holding the GIL (compiled without nogil: the GIL stays held), takes
    a posted Python job; whether it did (else the caller took it back)."""
    if _cas(ctrl, STATE, POSTED_PYTHON, TAKEN) != POSTED_PYTHON:
        return False
    _store(ctrl, JOBS, ctrl[JOBS] + 1)
    return True


@numba.njit(nogil=True, cache=True)
def python_done(ctrl, sys):
    """The helper finished a Python job."""
    _store(ctrl, STATE, DONE)
    _wake(ctrl, WAITING, sys)


@numba.njit(nogil=True, cache=True)
def reclaim_or_wait(ctrl, spin_ns, sys, ts):
    """The caller, its own share done: takes the job back if the helper has not taken
    it (RECLAIMED: the caller runs it), else polls up to spin_ns for it to be done and
    then sleeps until it is (FINISHED)."""
    posted = _load(ctrl, STATE)  # (only this caller posts: its own job, if still posted)
    if posted in (POSTED_NATIVE, POSTED_PYTHON) and _cas(ctrl, STATE, posted, IDLE) == posted:
        return RECLAIMED
    deadline = _now_ns(sys[4], ts) + spin_ns
    while _load(ctrl, STATE) != DONE:
        if _now_ns(sys[4], ts) >= deadline:
            _store(ctrl, WAITING, 1)
            if _load(ctrl, STATE) != DONE:
                _sleep_on(ctrl, WAITING, sys)
            continue
        _call4(sys[5], 0, 0, 0, 0)  # sched_yield
    _store(ctrl, WAITING, 0)
    _store(ctrl, STATE, IDLE)
    return FINISHED


@numba.njit(nogil=True, cache=True)
def stop(ctrl, sys):
    """Asks the helper to end, waking it if it sleeps."""
    _store(ctrl, STOP, 1)
    _wake(ctrl, SLEEPING, sys)
