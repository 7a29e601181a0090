"""The memory and primitive layer over oneDNN's C API (dnnl_api.py) that aioflow's oneDNN
kernels share:

* `MemoryDesc`: a memory descriptor, from a NumPy array's shape and strides (logical
  dimensions in oneDNN's order, N C H W / O I H W, strides taken from the array, so an
  NHWC or HWIO array is described as it lies: no copy), from a format tag, or cloned
  from what a primitive descriptor chose (`any`: blocked layouts).
* `Primitive`: a primitive descriptor and its primitive, the memory descriptors it
  chose, and `execute(args)` binding NumPy buffers as memories without a copy.
* `PrimitiveCache`: primitives by key (shapes, strides, attributes), least recently
  used dropped past a capacity, as TF's MklPrimitiveFactory caches its primitives:
  creating a primitive descriptor costs 0.1-1 ms, executing one microseconds.
* `WeightsCache`: a filter reordered to the layout a primitive chose, kept while the
  same read-only array comes back (a Const, or a variable's value: aioflow's variables
  are copy-on-write, so a read-only value held here is never changed in place).
* the OpenMP team size of each call (`set_threads`): oneDNN 3.x has no
  dnnl_set_max_threads; the wheel's OpenMP runtime (libgomp) takes omp_set_num_threads,
  which holds for the calling thread's later parallel regions. A primitive splits its
  work for the thread count current when it is CREATED and asks OpenMP for exactly that
  team whenever it runs, so the count is set before creating and is part of every
  cache key. (Intel's SYCL build threads with TBB: there a primitive takes the TBB
  arena's workers, all the cores, whatever the count; dnnl_api.openmp().)

Everything is created on one CPU engine; each thread executes on a stream of its own.
Scratchpads: with the wheel's default build, a primitive whose attributes leave the
scratchpad to the library shares the scratchpad of the thread that CREATED it, so it
must not run in another thread while that thread runs a primitive ("primitives cannot
migrate between threads", oneDNN's dnnl_scratchpad_mode_t); aioflow's primitives are
cached process-wide and run on the event loop and on worker threads (8 MobileNetV2 or
InceptionV3 runs in flight gave outputs differing from one run's in up to 60% of runs).
So every primitive made here takes the scratchpad from the caller: `Primitive` refuses
attributes that leave it to the library (`PostOps` and `user_scratchpad()` do not), and
each call passes a buffer of the executing thread's own (`_scratch`): any number of
calls, forward and backward, run at once. A primitive descriptor made only as another's
hint (`PrimitiveDesc`, never executed) takes any attributes.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections import OrderedDict
from ctypes import byref, c_char_p, c_void_p

import numpy as np

from aioflow.kernels import warm_helper
from aioflow.kernels.onednn import dnnl_api as api

_DATA_TYPES = {np.dtype(np.float32): api.F32, np.dtype(np.int32): api.S32}


def data_type(dtype) -> int | None:
    """oneDNN's data type for a NumPy dtype (None: not one the kernels run on oneDNN)."""
    return _DATA_TYPES.get(np.dtype(dtype))


class _Engine:
    """The process's CPU engine, created on first use."""

    handle = None
    lock = threading.Lock()


def engine() -> c_void_p:
    if _Engine.handle is None:
        with _Engine.lock:
            if _Engine.handle is None:
                handle = c_void_p()
                api.call("dnnl_engine_create", byref(handle), api.ENGINE_CPU, 0)
                _Engine.handle = handle
    return _Engine.handle


_local = threading.local()


def stream() -> c_void_p:
    """This thread's stream (CPU streams run primitives in the calling thread)."""
    s = getattr(_local, "stream", None)
    if s is None:
        s = c_void_p()
        api.call("dnnl_stream_create", byref(s), engine(), api.STREAM_DEFAULT_FLAGS)
        _local.stream = s
    return s


# -- OpenMP threads -------------------------------------------------------------------------------

def _find_omp():
    if not api.openmp():  # TBB's threads (the SYCL build): every primitive takes the arena's
        return None
    try:
        omp = ctypes.CDLL("libgomp.so.1")
        omp.omp_set_num_threads.argtypes = [ctypes.c_int]
        omp.omp_set_num_threads.restype = None
        return omp.omp_set_num_threads
    except (OSError, AttributeError):
        return None


_omp_set_num_threads = _find_omp()


def set_threads(n: int) -> None:
    """The OpenMP team of this thread's next primitives: n threads (a C call only when
    n changes for this thread)."""
    if getattr(_local, "threads", 0) != n and _omp_set_num_threads is not None:
        _omp_set_num_threads(max(1, n))
        _local.threads = n


# The warm helper runs its share of a split call as one single-threaded primitive.
warm_helper.at_thread_start(lambda: set_threads(1))


# -- memory descriptors ---------------------------------------------------------------------------

class MemoryDesc:
    """An owned dnnl_memory_desc_t (destroyed with this object)."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle: c_void_p):
        self.handle = handle

    @classmethod
    def strided(cls, dims, dtype, strides) -> MemoryDesc:
        """Logical dims with strides in elements (an array as it lies in memory)."""
        handle = c_void_p()
        api.call("dnnl_memory_desc_create_with_strides", byref(handle), len(dims),
                 api.dims(dims), data_type(dtype), api.dims(strides))
        return cls(handle)

    @classmethod
    def tagged(cls, dims, dtype, tag: int) -> MemoryDesc:
        """Logical dims in a format tag (FORMAT_ANY: the primitive chooses)."""
        handle = c_void_p()
        api.call("dnnl_memory_desc_create_with_tag", byref(handle), len(dims),
                 api.dims(dims), data_type(dtype), tag)
        return cls(handle)

    @classmethod
    def clone(cls, md) -> MemoryDesc:
        handle = c_void_p()
        api.call("dnnl_memory_desc_clone", byref(handle), md)
        return cls(handle)

    @property
    def size(self) -> int:
        """Bytes a buffer of this descriptor takes."""
        return api._lib.dnnl_memory_desc_get_size(self.handle)

    def __eq__(self, other) -> bool:
        return isinstance(other, MemoryDesc) and bool(
            api._lib.dnnl_memory_desc_equal(self.handle, other.handle))

    __hash__ = None

    def __del__(self):
        if self.handle and api._lib is not None:
            api._lib.dnnl_memory_desc_destroy(self.handle)
            self.handle = None


def array_desc(a: np.ndarray, order) -> MemoryDesc:
    """The descriptor of array `a` with its axes taken in `order` as oneDNN's logical
    dimensions (NHWC -> N C H W: order (0, 3, 1, 2)); strides from the array."""
    item = a.itemsize
    return MemoryDesc.strided([a.shape[i] for i in order], a.dtype,
                              [a.strides[i] // item for i in order])


_c_char = ctypes.c_char
_addressof = ctypes.addressof


class _Quick:
    """Functions of the loaded library that return at once, called holding the GIL
    (through a ctypes.PyDLL view of the same library): a ctypes call through CDLL lets
    go of the GIL, and with another thread waiting for it (a pool thread running
    primitives beside the event loop) each of a primitive's dozen argument calls became
    a GIL hand-over, the caller then waiting for the GIL back. Only the primitive's
    execution itself lets go of the GIL."""

    set_data_handle = None
    stream_wait = None

    @classmethod
    def bind(cls) -> None:
        lib = ctypes.PyDLL(api._lib._name, handle=api._lib._handle)
        for attr, name in (("set_data_handle", "dnnl_memory_set_data_handle"),
                           ("stream_wait", "dnnl_stream_wait")):
            fn = getattr(lib, name)
            fn.argtypes = api._SIGNATURES[name]
            fn.restype = ctypes.c_int
            setattr(cls, attr, fn)


def address(a: np.ndarray) -> int:
    """The address of a's first element (a writable contiguous array's through ctypes,
    4x faster than the array interface, which read-only arrays take)."""
    try:
        return _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError):  # read-only, not contiguous, or empty
        return a.__array_interface__["data"][0]


class _Memories:
    """One thread's dnnl_memory objects for one primitive's arguments (made once, pointed
    at each call's buffers with dnnl_memory_set_data_handle) and their exec-arg array."""

    __slots__ = ("handles", "exec_args", "addresses", "__weakref__")

    def __init__(self, args):
        lib = api._lib
        eng = engine()
        self.handles = []
        #: The data address each memory points at now (a call re-points only what moved:
        #: a Const filter, its bias and the thread's scratchpad stay where they are).
        self.addresses = [None] * len(args)
        self.exec_args = (api.ExecArg * len(args))()
        for i, (arg, md, _) in enumerate(args):
            mem = c_void_p()
            api.check(lib.dnnl_memory_create(byref(mem), md.handle, eng, None),
                      "dnnl_memory_create")
            self.handles.append(mem)
            self.exec_args[i].arg = arg
            self.exec_args[i].memory = mem

    def __del__(self):
        if api._lib is not None:
            for mem in self.handles:
                api._lib.dnnl_memory_destroy(mem)


# -- primitives -----------------------------------------------------------------------------------

class PostOps:
    """A primitive attribute with post-ops, built from a spec: a tuple of
    ("eltwise", alg, alpha, beta), ("sum", scale) and ("binary", alg, MemoryDesc), and
    the scratchpad the caller's."""

    def __init__(self, spec):
        self.attr = c_void_p()
        api.call("dnnl_primitive_attr_create", byref(self.attr))
        api.call("dnnl_primitive_attr_set_scratchpad_mode", self.attr,
                 api.SCRATCHPAD_MODE_USER)
        if not spec:
            return
        ops = c_void_p()
        api.call("dnnl_post_ops_create", byref(ops))
        try:
            for op in spec:
                if op[0] == "eltwise":
                    api.call("dnnl_post_ops_append_eltwise", ops, op[1], op[2], op[3])
                elif op[0] == "sum":
                    api.call("dnnl_post_ops_append_sum", ops, op[1], 0, 0)
                else:
                    api.call("dnnl_post_ops_append_binary", ops, op[1], op[2].handle)
            api.call("dnnl_primitive_attr_set_post_ops", self.attr, ops)
        finally:
            api._lib.dnnl_post_ops_destroy(ops)

    def __del__(self):
        if self.attr and api._lib is not None:
            api._lib.dnnl_primitive_attr_destroy(self.attr)
            self.attr = None


class _UserScratchpad:
    """An attribute with no post-ops and the caller's scratchpad, made on first use."""

    attr: PostOps | None = None
    lock = threading.Lock()


def user_scratchpad():
    """A primitive attribute (dnnl_primitive_attr_t) with no post-ops that leaves the
    scratchpad to the caller."""
    if _UserScratchpad.attr is None:
        with _UserScratchpad.lock:
            if _UserScratchpad.attr is None:
                _UserScratchpad.attr = PostOps(())
    return _UserScratchpad.attr.attr


def _scratch(size: int) -> np.ndarray:
    """This thread's scratchpad buffer, at least `size` bytes (a thread runs one
    primitive at a time; its OpenMP team works in the buffer the thread passes)."""
    buf = getattr(_local, "scratch", None)
    if buf is None or buf.size < size:
        buf = _local.scratch = np.empty(max(size, 1 << 16), np.uint8)
    return buf


def scratchpad_mode(pd: c_void_p) -> int:
    """The scratchpad mode of a primitive descriptor's attributes (SCRATCHPAD_MODE_USER:
    the caller's)."""
    attr, mode = c_void_p(), ctypes.c_int()
    api.call("dnnl_primitive_desc_get_attr", pd, byref(attr))
    api.call("dnnl_primitive_attr_get_scratchpad_mode", attr, byref(mode))
    return mode.value


class PrimitiveDesc:
    """An owned primitive descriptor made by `create(pd_out)` (a oneDNN
    *_primitive_desc_create call): the forward hint a backward primitive is made with,
    never executed."""

    def __init__(self, create, name: str):
        self.pd = c_void_p()
        api.check(create(byref(self.pd)), name)

    def __del__(self):
        if self.pd and api._lib is not None:
            api._lib.dnnl_primitive_desc_destroy(self.pd)
            self.pd = None


class Primitive:
    """A primitive descriptor made by `create(pd_out)` (a oneDNN *_primitive_desc_create
    call), its primitive, and the memory descriptors it chose, by query. Its attributes
    must leave the scratchpad to the caller (PostOps, user_scratchpad()): a library
    scratchpad is refused with ValueError (the module docstring)."""

    def __init__(self, create, name: str):
        self.pd = c_void_p()
        self.handle = c_void_p()
        api.check(create(byref(self.pd)), name)
        if scratchpad_mode(self.pd) != api.SCRATCHPAD_MODE_USER:
            api._lib.dnnl_primitive_desc_destroy(self.pd)
            self.pd = None
            raise ValueError(f"{name}: a primitive run from several threads needs the "
                             "caller's scratchpad (attributes from PostOps or "
                             "user_scratchpad())")
        api.call("dnnl_primitive_create", byref(self.handle), self.pd)
        self._local = threading.local()  # this thread's _Memories, by argument layout
        self.scratch_md = None
        self.scratch_size = 0
        md = api._lib.dnnl_primitive_desc_query_md(self.pd, api.QUERY_SCRATCHPAD_MD, 0)
        size = api._lib.dnnl_memory_desc_get_size(md) if md else 0
        if size:
            self.scratch_md = MemoryDesc.clone(md)
            self.scratch_size = size

    def md(self, query: int, index: int = 0) -> MemoryDesc:
        """The memory descriptor the primitive chose (a clone this object owns)."""
        return MemoryDesc.clone(api._lib.dnnl_primitive_desc_query_md(self.pd, query, index))

    @property
    def impl(self) -> str:
        """The implementation oneDNN chose (e.g. 'brg:avx512_core')."""
        out = c_char_p()
        api.call("dnnl_primitive_desc_query", self.pd, api.QUERY_IMPL_INFO_STR, 0, byref(out))
        return out.value.decode()

    def execute(self, args, key=None) -> None:
        """Run with args [(DNNL_ARG_*, MemoryDesc, ndarray), ...] on this thread's stream;
        each buffer is the memory's data, no copy (or its address, an int, for a buffer
        the caller keeps alive). The memory objects are this thread's, made on its first
        call with these descriptors and re-pointed on later ones. `key`: a caller that
        always passes the same descriptors may pass `memories_key(args)` once made."""
        if self.scratch_size:
            args = [*args, (api.ARG_SCRATCHPAD, self.scratch_md, _scratch(self.scratch_size))]
        self._execute(args, key)

    def memories_key(self, args) -> tuple:
        """The key of args' descriptors (and the scratchpad's) among this thread's
        memory objects."""
        key = tuple(id(md) for _, md, _ in args)
        return (*key, id(self.scratch_md)) if self.scratch_size else key

    def _execute(self, args, key=None) -> None:
        lib = api._lib
        if key is None:
            key = tuple(id(md) for _, md, _ in args)
        memories = getattr(self._local, "memories", None)
        if memories is None:
            memories = self._local.memories = {}
        mems = memories.get(key)
        if mems is None:
            mems = memories[key] = _Memories(args)
        set_handle = _Quick.set_data_handle
        if set_handle is None:
            _Quick.bind()
            set_handle = _Quick.set_data_handle
        addresses = mems.addresses
        for i, (_, _, array) in enumerate(args):
            where = array if array.__class__ is int else address(array)
            if where != addresses[i]:
                status = set_handle(mems.handles[i], where)
                if status:
                    api.check(status, "dnnl_memory_set_data_handle")
                addresses[i] = where
        s = stream()
        api.check(lib.dnnl_primitive_execute(self.handle, s, len(args), mems.exec_args),
                  "dnnl_primitive_execute")
        api.check(_Quick.stream_wait(s), "dnnl_stream_wait")

    def __del__(self):
        if api._lib is not None:
            if self.handle:
                api._lib.dnnl_primitive_destroy(self.handle)
            if self.pd:
                api._lib.dnnl_primitive_desc_destroy(self.pd)
            self.handle = self.pd = None


def reorder(src_md: MemoryDesc, dst_md: MemoryDesc) -> Primitive:
    eng = engine()
    attr = user_scratchpad()
    return Primitive(lambda pd: api._lib.dnnl_reorder_primitive_desc_create(
        pd, src_md.handle, eng, dst_md.handle, eng, attr), "dnnl_reorder_primitive_desc_create")


class PrimitiveCache:
    """Primitives (or anything built once per key) by key, at most `capacity`, least
    recently used dropped first. `get(key, make)` builds with make() on a miss; two
    threads missing at once may both build, one result is kept."""

    def __init__(self, capacity: int = 1024):
        self.capacity = capacity
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, make):
        entries = self._entries
        with self._lock:
            value = entries.get(key)
            if value is not None:
                entries.move_to_end(key)
                return value
        value = make()
        with self._lock:
            value = entries.setdefault(key, value)
            if len(entries) > self.capacity:
                entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def never_written(a: np.ndarray) -> bool:
    """Whether nothing can write a's values while `a` is held: a is read-only, and so is
    the buffer it views, or that buffer is bytes, or nothing but views like `a` refer to
    it (a Const's value: the graph optimizer's folded filters are read-only views of an
    array only they hold). A variable's read is not: its Var holds the buffer, and a ref
    variable's Assign writes into it in place."""
    if a.flags.writeable:
        return False
    base = a.base
    if base is None or isinstance(base, bytes):
        return True
    if not isinstance(base, np.ndarray):
        return False
    # references: a.base, `base` here, getrefcount's argument (a Var's .value: a 4th)
    return not base.flags.writeable or sys.getrefcount(base) <= 3


class WeightsCache:
    """A filter in the layout a primitive chose, reordered once per filter buffer.

    Kept only for a filter nothing can write (`never_written`: a Const's value) and
    reused while the same array object, of the same shape and strides, comes back for the
    same primitive; anything else (a variable's value) is reordered on every call.
    One entry per kernel (one node's filter)."""

    __slots__ = ("_entry",)

    def __init__(self):
        self._entry = None  # (array, (shape, strides), plan, reordered)

    def holds(self, w: np.ndarray, plan) -> bool:
        """Whether w's reordered copy for `plan` is kept (w is never written)."""
        entry = self._entry
        return entry is not None and entry[0] is w and entry[2] is plan

    def get(self, w: np.ndarray, plan) -> np.ndarray:
        """w in plan.w_md's layout, through plan.w_reorder."""
        entry = self._entry
        # (the same array object keeps its data pointer; its shape could be reassigned)
        key = (w.shape, w.strides)
        if entry is not None and entry[0] is w and entry[1] == key and entry[2] is plan:
            return entry[3]
        out = np.empty(plan.w_md.size // w.itemsize, w.dtype)
        plan.w_reorder.execute([(api.ARG_FROM, plan.user_w_md, w),
                                (api.ARG_TO, plan.w_md, out)])
        self._entry = (w, key, plan, out) if never_written(w) else None
        return out
