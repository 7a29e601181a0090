"""The fast path of tf.Example parsing (parsing_kernels.py): fixed-shape dense features
read straight from the protobuf wire format by a numba loop, as TF's fast parser
(example_proto_fast_parsing.cc) reads them, instead of building a protobuf message and
converting its lists value by value.

A compiled loop, `_scan` (and its helpers, each compiled on its own), walks each
serialized Example: Example.features (field 1),
its map entries (key 1, value 2), each Feature's one list (bytes_list 1, float_list 2,
int64_list 3) and the list's values (field 1, packed or not). The values of the wanted
keys are written into one output buffer: float32 bytes copied as they are, int64 varints
decoded, bytes values as (start, end) offsets into the input. The features of unwanted
keys are walked too, so that a malformed one is noticed.

The loop answers only when the Example is plainly well formed and every wanted feature
has the wanted type and exactly its shape's count of values. Anything else (a malformed
message, a field the protobuf runtime would merge or override: a key twice, two lists in
one Feature, `features` twice; a key that is not UTF-8; a type or count mismatch; a
required feature missing) makes it answer -1, and the caller parses that input with the protobuf
runtime (the slow path), which gives TF's value or TF's error. So the fast path changes
speed only: where it answers, the slow path answers the same.

The loop compiles on a daemon thread (aioflow/kernels/background_jit.py); callers parse
with the slow path until `ready()`. Without numba (or AIOFLOW_JIT=0) there is no fast
path."""

from __future__ import annotations

import sys

import numpy as np

from aioflow.kernels import jit
from aioflow.kernels.background_jit import BackgroundCompile

#: Feature's fields: which list a feature holds (TF's feature.proto).
BYTES, FLOAT, INT64 = 1, 2, 3
#: Columns of a plan's `meta` rows, one row per wanted feature.
KEY_START, KEY_END, KIND, STRIDE, BASE, SIZE, REQUIRED = range(7)
#: At most this many features (the loop's answer is a bit mask of the found ones).
MAX_FEATURES = 62
_ITEM_BYTES = {BYTES: 16, FLOAT: 4, INT64: 8}  # bytes: a (start, end) pair of int64


def _varint(buf, pos, end):
    value = np.uint64(0)
    shift = 0
    while pos < end and shift < 64:
        byte = buf[pos]
        pos += 1
        if shift == 63 and byte > 1:
            return value, -1
        value |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            return value, pos
        shift += 7
    return value, -1


def _length(buf, pos, end):
    value, pos = _varint(buf, pos, end)
    if pos < 0 or value > np.uint64(end - pos):
        return 0, -1
    return np.int64(value), pos


def _tag(buf, pos, end):  # a field number of at least 1, in at most 5 bytes
    start = pos
    value, pos = _varint(buf, pos, end)
    if pos < 0 or pos - start > 5 or value < np.uint64(8) or \
            value >= np.uint64(1 << 32):
        return 0, 0, -1
    return np.int64(value >> np.uint64(3)), np.int64(value & np.uint64(7)), pos


def _skip(buf, pos, end, wire):
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 2:
        size, pos = _length(buf, pos, end)
        return -1 if pos < 0 else pos + size
    width = 8 if wire == 1 else 4 if wire == 5 else -1
    if width < 0 or pos + width > end:
        return -1
    return pos + width


def _put64(out, at, value):
    for b in range(8):
        out[at + b] = np.uint8((value >> np.uint64(8 * b)) & np.uint64(0xFF))


def _list_values(buf, out, pos, end, kind, stride, at, write):
    """The count of values of the list buf[pos:end], written from out[at] when
    `write` (at most `stride` of them); -1: malformed or too many."""
    count = 0
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return -1
        if field != 1:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return -1
            continue
        if kind == 2:  # float_list: 4 bytes each, packed or one at a time
            if wire == 2:
                size, pos = _length(buf, pos, end)
                if pos < 0 or size % 4:
                    return -1
            elif wire == 5 and pos + 4 <= end:
                size = 4
            else:
                return -1
            if write:
                if count + size // 4 > stride:
                    return -1
                o = at + count * 4
                for q in range(size):
                    out[o + q] = buf[pos + q]
            pos += size
            count += size // 4
        elif kind == 3:  # int64_list: varints, packed or one at a time
            limit = end
            if wire == 2:
                size, pos = _length(buf, pos, end)
                if pos < 0:
                    return -1
                stop = limit = pos + size
            elif wire == 0:
                stop = pos + 1  # one varint (of at least one byte)
            else:
                return -1
            while pos < stop:
                value, pos = _varint(buf, pos, limit)
                if pos < 0:
                    return -1
                if write:
                    if count >= stride:
                        return -1
                    _put64(out, at + count * 8, value)
                count += 1
        else:  # bytes_list: each value a length-delimited field
            if wire != 2:
                return -1
            size, pos = _length(buf, pos, end)
            if pos < 0:
                return -1
            if write:
                if count >= stride:
                    return -1
                _put64(out, at + count * 16, np.uint64(pos))
                _put64(out, at + count * 16 + 8, np.uint64(pos + size))
            pos += size
            count += 1
    return count


def _feature(buf, pos, end):
    """(the Feature's list field: 0 none, -1 malformed or two; its start, end)."""
    kind, start, stop = 0, 0, 0
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return -1, 0, 0
        if 1 <= field <= 3:
            if wire != 2 or kind != 0:
                return -1, 0, 0
            size, pos = _length(buf, pos, end)
            if pos < 0:
                return -1, 0, 0
            kind, start, stop = field, pos, pos + size
            pos = stop
        else:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return -1, 0, 0
    return kind, start, stop


def _match(buf, keys, meta, start, stop):
    """The wanted feature whose key is buf[start:stop], or -1."""
    nfeat = meta.shape[0]
    for j in range(nfeat):
        a = meta[j, KEY_START]
        if meta[j, KEY_END] - a != stop - start:
            continue
        same = True
        for q in range(stop - start):
            if keys[a + q] != buf[start + q]:
                same = False
                break
        if same:
            return j
    return -1


def _utf8(buf, start, stop):
    """Whether buf[start:stop] is valid UTF-8 (a map key is a proto3 string)."""
    q = start
    while q < stop:
        c = buf[q]
        if c < 0x80:
            q += 1
            continue
        lo, hi = 0x80, 0xBF  # the first continuation byte's range
        if 0xC2 <= c <= 0xDF:
            n = 1
        elif 0xE0 <= c <= 0xEF:
            n = 2
            lo = 0xA0 if c == 0xE0 else 0x80
            hi = 0x9F if c == 0xED else 0xBF
        elif 0xF0 <= c <= 0xF4:
            n = 3
            lo = 0x90 if c == 0xF0 else 0x80
            hi = 0x8F if c == 0xF4 else 0xBF
        else:
            return False
        if q + n >= stop or not lo <= buf[q + 1] <= hi:
            return False
        for k in range(2, n + 1):
            if not 0x80 <= buf[q + k] <= 0xBF:
                return False
        q += n + 1
    return True


def _example(buf, keys, meta, out, n, start, end, i):  # noqa: C901 - one message's walk
    """The found mask of the Example buf[start:end] (the i-th of n), its values written
    to out; -1: the slow path."""
    nfeat = meta.shape[0]
    fstart, fend = 0, 0
    seen_features = False
    pos = start
    while pos < end:
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return -1
        if field == 1:
            if wire != 2 or seen_features:
                return -1
            size, pos = _length(buf, pos, end)
            if pos < 0:
                return -1
            seen_features = True
            fstart, fend = pos, pos + size
            pos = fend
        else:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return -1
    seen, got = 0, 0
    pos = fstart
    while pos < fend:
        field, wire, pos = _tag(buf, pos, fend)
        if pos < 0:
            return -1
        if field != 1:
            pos = _skip(buf, pos, fend, wire)
            if pos < 0:
                return -1
            continue
        if wire != 2:
            return -1
        size, pos = _length(buf, pos, fend)
        if pos < 0:
            return -1
        entry_end = pos + size
        kstart, kstop, vstart, vstop = 0, 0, -1, -1
        has_key = False
        while pos < entry_end:
            field, wire, pos = _tag(buf, pos, entry_end)
            if pos < 0:
                return -1
            if field == 1 or field == 2:
                if wire != 2:
                    return -1
                size, pos = _length(buf, pos, entry_end)
                if pos < 0:
                    return -1
                if field == 1:
                    if has_key:
                        return -1
                    has_key = True
                    kstart, kstop = pos, pos + size
                else:
                    if vstart >= 0:
                        return -1
                    vstart, vstop = pos, pos + size
                pos += size
            else:
                pos = _skip(buf, pos, entry_end, wire)
                if pos < 0:
                    return -1
        j = _match(buf, keys, meta, kstart, kstop)
        if j < 0:
            if not _utf8(buf, kstart, kstop):
                return -1
        elif (seen >> j) & 1:
            return -1
        else:
            seen |= 1 << j
        if vstart < 0:
            continue
        kind, lstart, lstop = _feature(buf, vstart, vstop)
        if kind < 0:
            return -1
        if kind == 0:
            continue
        if j < 0:
            if _list_values(buf, out, lstart, lstop, kind, 0, 0, False) < 0:
                return -1
            continue
        if kind != meta[j, KIND]:
            return -1
        stride = meta[j, STRIDE]
        at = n * meta[j, BASE] + i * meta[j, SIZE]
        if _list_values(buf, out, lstart, lstop, kind, stride, at, True) != stride:
            return -1
        got |= 1 << j
    for j in range(nfeat):
        if not (got >> j) & 1 and meta[j, REQUIRED]:
            return -1
    return got


def _scan(buf, ends, keys, meta, found, out):
    """Scan the Examples of `buf` (example i is buf[ends[i-1]:ends[i]]; no `ends`: buf is
    one Example) for the features of `meta` (rows of KEY_START.. REQUIRED; keys[KEY_START:
    KEY_END] is the key). Feature j of example i goes to out[n * BASE + i * SIZE:], n the
    number of examples. With a `found` (n x features), found[i, j] is 1 when example i
    has feature j, else 0 (its default). The answer: -1 (use the slow path), else the
    last example's found features as a bit mask."""
    nfeat = meta.shape[0]
    n = len(ends) if len(ends) else 1

    mask = 0
    start = 0
    for i in range(n):
        end = ends[i] if len(ends) else len(buf)
        if end < start or end > len(buf):
            return -1
        mask = _example(buf, keys, meta, out, n, start, end, i)
        if mask < 0:
            return -1
        if len(found):
            for j in range(nfeat):
                found[i * nfeat + j] = (mask >> j) & 1
        start = end
    return mask


#: The scan's helpers, callees before callers: _compile makes each a numba function of
#: its own (as closures of one function, every call site inlined, the compile took ~45 s
#: on a loaded 2-core machine).
_HELPERS = ("_varint", "_length", "_tag", "_skip", "_put64", "_list_values", "_feature",
            "_match", "_utf8", "_example")
_AVAILABLE = jit.ENABLED and sys.byteorder == "little"
_compiled = None  # the compiled _scan, once _compile has run
_NO_ENDS = np.zeros(0, np.int64)
_NO_FOUND = np.zeros(0, np.uint8)


def _compile() -> None:
    """Compile the scan (on the background thread): the module's helpers are replaced
    by their numba functions, so that the compiled callers call compiled callees; then
    one call compiles the scan's one signature, and a second checks it."""
    global _compiled
    import numba

    compile_ = numba.njit(nogil=True, cache=True, boundscheck=False)
    names = globals()
    for name in _HELPERS:
        if not isinstance(names[name], numba.core.dispatcher.Dispatcher):
            names[name] = compile_(names[name])
    scan = compile_(_scan)
    keys = b"x"
    meta = np.array([[0, 1, FLOAT, 1, 0, 4, 1]], np.int64)
    out = np.zeros(4, np.uint8)
    data = _example_x()
    if scan(data, _NO_ENDS, keys, meta, _NO_FOUND, out) != 1 or \
            scan(data, np.array([len(data)], np.int64), keys, meta, np.zeros(1, np.uint8),
                 out) != 1 or out.view(np.float32)[0] != 1.0:
        raise RuntimeError("the Example scan's warm-up did not read its feature")
    scan.disable_compile()  # another argument type raises TypeError: never a compile
    _compiled = scan        # on the loop


def _example_x() -> bytes:
    """An Example {"x": float_list [1.0]} in the wire format, written out by hand."""
    floats = b"\x0a\x04" + np.float32(1.0).tobytes()       # FloatList.value, packed
    feature = b"\x12" + bytes([len(floats)]) + floats       # Feature.float_list
    entry = b"\x0a\x01x\x12" + bytes([len(feature)]) + feature
    features = b"\x0a" + bytes([len(entry)]) + entry        # Features.feature entry
    return b"\x0a" + bytes([len(features)]) + features      # Example.features


_group = BackgroundCompile("example-parse", _compile, _AVAILABLE)


def available() -> bool:
    return _AVAILABLE


def ready() -> bool:
    """Whether the loop is compiled; callers use the slow path (and start the compile)
    until it is."""
    return _group.ready()


def compile_in_background() -> None:
    _group.start()


def wait_ready(timeout: float | None = None) -> bool:
    """Compile now and wait (tests, benchmarks' warm-ups); whether it is compiled."""
    return _group.wait_ready(timeout)


class Feature:
    """A wanted dense feature: its key, list kind (BYTES/FLOAT/INT64), shape (fully
    defined), and default (an array of the shape, or None: required)."""

    __slots__ = ("key", "kind", "shape", "default", "stride")

    def __init__(self, key: str, kind: int, shape: tuple, default):
        self.key, self.kind, self.shape, self.default = key, kind, tuple(shape), default
        self.stride = int(np.prod(self.shape, dtype=np.int64))


_DTYPE = {FLOAT: np.dtype(np.float32), INT64: np.dtype(np.int64)}


class Plan:
    """The fast parse of one set of dense features (a kernel keeps it while its keys
    and defaults stay the same): `parse_one` for a scalar input, `parse_batch` for a
    vector. Both answer the features' arrays, or None: use the slow path."""

    def __init__(self, features: list[Feature]):
        self.features = features
        encoded = [f.key.encode("utf-8") for f in features]
        self.keys = b"".join(encoded)
        rows, start, base = [], 0, 0
        for f, key in zip(features, encoded, strict=True):
            size = f.stride * _ITEM_BYTES[f.kind]
            rows.append([start, start + len(key), f.kind, f.stride, base, size,
                         int(f.default is None)])
            start += len(key)
            base += -(-size // 8) * 8  # each feature's block starts 8-byte aligned
        self.meta = np.array(rows, np.int64).reshape(len(features), 7)
        self.bases = [row[BASE] for row in rows]
        self.all_found = (1 << len(features)) - 1
        # Every feature found, none of bytes (the common case): arrays over the buffer.
        self.views = None if any(f.kind == BYTES for f in features) else [
            (f.shape, _DTYPE[f.kind], base) for f, base in zip(features, self.bases,
                                                                strict=True)]
        self.row_bytes = max(base, 8)

    @staticmethod
    def build(features: list[Feature]) -> Plan | None:
        """The plan, or None where the fast path does not apply: no numba, too many
        features, a key twice, or a feature with no values (its shape has a 0)."""
        if not _AVAILABLE or not features or len(features) > MAX_FEATURES:
            return None
        if len({f.key for f in features}) != len(features) or \
                any(f.stride == 0 for f in features):
            return None
        return Plan(features)

    @staticmethod
    def _array(f: Feature, out: np.ndarray, at: int, shape: tuple, data: bytes):
        """Feature f's values, of `shape`, from out[at:] (np.ndarray over the buffer:
        a slice's .view(dtype) costs several times more)."""
        if f.kind == BYTES:
            count = int(np.prod(shape, dtype=np.int64))
            spans = np.ndarray((2 * count,), np.int64, out, at).tolist()
            arr = np.empty(count, dtype=object)
            arr[:] = [data[spans[k]:spans[k + 1]] for k in range(0, 2 * count, 2)]
            return arr.reshape(shape)
        return np.ndarray(shape, _DTYPE[f.kind], out, at)

    def parse_one(self, data: bytes) -> list | None:
        if type(data) is not bytes:
            return None
        out = np.empty(self.row_bytes, np.uint8)
        mask = _compiled(data, _NO_ENDS, self.keys, self.meta, _NO_FOUND, out)
        if mask == self.all_found and self.views is not None:
            return [np.ndarray(shape, dtype, out, base) for shape, dtype, base in self.views]
        if mask < 0:
            return None
        return [self._array(f, out, base, f.shape, data) if (mask >> j) & 1 else f.default
                for j, (f, base) in enumerate(zip(self.features, self.bases, strict=True))]

    def parse_batch(self, data: list) -> list | None:
        n = len(data)
        if not n:
            return None
        buf = b"".join(data)
        ends = np.cumsum([len(d) for d in data], dtype=np.int64)
        nfeat = len(self.features)
        found = np.empty(n * nfeat, np.uint8)
        out = np.empty(self.row_bytes * n, np.uint8)
        if _compiled(buf, ends, self.keys, self.meta, found, out) < 0:
            return None
        found = found.reshape(n, nfeat)
        result = []
        for j, (f, base) in enumerate(zip(self.features, self.bases, strict=True)):
            arr = self._array(f, out, n * base, (n, *f.shape), buf)
            missing = np.flatnonzero(found[:, j] == 0)
            if len(missing):
                arr[missing] = f.default
            result.append(arr)
        return result
