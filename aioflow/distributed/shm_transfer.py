"""Large tensors between processes of one machine through shared memory: instead of
sending a big numeric tensor's bytes inside the RecvTensorResponse, the sending task
writes it once into a /dev/shm file and the response names the file in
`transport_options` (TF's field for "how to receive the tensor", used by TF's own
out-of-band transports when RecvTensorRequest.dma_ok is set). The receiver maps the
file (the array is a view of the mapping: no copy) and unlinks it at once; a file nobody
mapped is removed by its sender after LEFTOVER_S.

Buffers are reused, so that a tensor sent every step costs one memcpy into pages already
there (a fresh tmpfs file costs the kernel a page allocation and zeroing per 4 KiB, and
both sides a page-table walk; measured, that is most of a 64 MB transfer): the receiver
keeps the files it got (renamed into its own name, mapped) in a BufferPool, and offers
those no array uses any more in its next request's `transport_options`; the sender
writes into an offered file large enough (its mappings cached, WriterCache) and names it
in the response as before. A buffer is free again once the array viewing it is gone (a
weak reference says so; views keep their base alive). The pool's files are unlinked when
it drops them, when it is closed, and at exit."""

from __future__ import annotations

import atexit
import itertools
import mmap
import os
import socket
import threading
import weakref

import numpy as np

#: Tensors at least this large go through shared memory (smaller ones inline).
MIN_BYTES = 1 << 20
#: The Any.type_url naming a shared-memory file in transport_options.
TYPE_URL = "type.googleapis.com/aioflow.SharedMemoryTensor"
#: The Any.type_url of a request's free buffers ("path size" lines) in transport_options.
OFFER_TYPE_URL = "type.googleapis.com/aioflow.SharedMemoryBuffers"
#: How many buffers a receiver keeps per peer.
POOL_SIZE = 4
#: A file its receiver never mapped (the step failed first) is removed after this long.
LEFTOVER_S = 60.0
_DIR = "/dev/shm"
_names = itertools.count()


def available() -> bool:
    return os.path.isdir(_DIR) and os.access(_DIR, os.W_OK)


def is_local_host(host: str) -> bool:
    """Whether `host` names this machine (then a peer there can map our files)."""
    if host in ("localhost", "127.0.0.1", "::1", "[::1]", "") or host.startswith("127."):
        return True
    try:
        name = socket.gethostname()
        return host == name or host in socket.gethostbyname_ex(name)[2]
    except OSError:
        return False


def write(array: np.ndarray) -> str:
    """Write `array`'s bytes into a new shared-memory file; its path (the caller
    schedules `remove_later`)."""
    path = f"{_DIR}/aioflow-{os.getpid()}-{next(_names)}"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:  # write(2) fills tmpfs faster than stores through a fresh mapping
        data = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        while data.nbytes:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
    return path


def remove_later(path: str, loop) -> None:
    """Remove the file after LEFTOVER_S unless its receiver has (on `loop`'s thread)."""
    loop.call_later(LEFTOVER_S, _unlink, path)


def read(path: str, dtype, shape) -> np.ndarray:
    """The array in a shared-memory file, as a read-only view of its mapping; the file
    is unlinked (the mapping lives as long as the array)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if not size:  # (an empty tensor: nothing to map)
            return np.zeros(shape, dtype)
        # MAP_POPULATE: the pages mapped in one call, not faulted in one by one
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mapped = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
        _unlink(path)
    count = int(np.prod(shape)) if shape else 1
    return np.frombuffer(mapped, dtype=dtype, count=count).reshape(shape)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# -- reused buffers ----------------------------------------------------------------------
class Incoming:
    """A tensor a response put in the shared-memory file `path` (decoded by wire.py; the
    receiver's pool turns it into the array)."""

    __slots__ = ("path", "dtype", "shape")

    def __init__(self, path: str, dtype, shape):
        self.path, self.dtype, self.shape = path, dtype, list(shape)

    def array(self) -> np.ndarray:
        """The array, the file unlinked (no pool)."""
        return read(self.path, self.dtype, self.shape)


class _Buffer:
    __slots__ = ("path", "mapped", "user", "offered")

    def __init__(self, path: str, mapped):
        self.path, self.mapped, self.user, self.offered = path, mapped, None, False

    @property
    def free(self) -> bool:
        return not self.offered and (self.user is None or self.user() is None)


class BufferPool:
    """A receiver's shared-memory buffers for one peer (used on one event loop)."""

    def __init__(self, size: int = POOL_SIZE):
        self.size = size
        self.buffers: dict[str, _Buffer] = {}
        _pools.add(self)
        sweep()

    def offer(self) -> bytes:
        """The free buffers, marked offered: a request's transport_options value."""
        lines = []
        for buffer in self.buffers.values():
            if buffer.free:
                buffer.offered = True
                lines.append(f"{buffer.path} {len(buffer.mapped)}")
        return "\n".join(lines).encode()

    def settle(self, offered: bytes, incoming: Incoming | None) -> np.ndarray | None:
        """The array of `incoming` (a pool buffer, or a new file adopted or unlinked);
        the other offered buffers are free again. None: no shared-memory tensor."""
        used = incoming.path if incoming is not None else None
        for line in offered.decode().splitlines():
            path = line.rpartition(" ")[0]
            if path != used and path in self.buffers:
                self.buffers[path].offered = False
        if incoming is None:
            return None
        buffer = self.buffers.get(used)
        if buffer is None:
            buffer = self._adopt(incoming)
            if buffer is None:
                return incoming.array()
        buffer.offered = False
        count = int(np.prod(incoming.shape)) if incoming.shape else 1
        array = np.frombuffer(buffer.mapped, dtype=incoming.dtype, count=count)
        array = array.reshape(incoming.shape)
        array.flags.writeable = False
        buffer.user = weakref.ref(array)
        return array

    def _adopt(self, incoming: Incoming) -> _Buffer | None:
        """Keep a new file: renamed into this process's name, mapped (None: the pool is
        full of buffers in use)."""
        if len(self.buffers) >= self.size:
            victim = next((b for b in self.buffers.values() if b.free), None)
            if victim is None:
                return None
            self.drop(victim.path)
        path = f"{_DIR}/aioflow-pool-{os.getpid()}-{next(_names)}"
        try:
            os.rename(incoming.path, path)
        except OSError:
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if not size:
                _unlink(path)
                return None
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            mapped = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        buffer = self.buffers[path] = _Buffer(path, mapped)
        return buffer

    def drop(self, path: str) -> None:
        """Forget a buffer (an offer whose call failed: its sender may still write)."""
        buffer = self.buffers.pop(path, None)
        if buffer is not None:
            _unlink(path)

    def drop_offered(self, offered: bytes) -> None:
        for line in offered.decode().splitlines():
            self.drop(line.rpartition(" ")[0])

    def close(self) -> None:
        for path in list(self.buffers):
            self.drop(path)
        _pools.discard(self)


_pools: weakref.WeakSet = weakref.WeakSet()


def sweep() -> None:
    """Remove the files of processes that are gone (killed before they could)."""
    for name in os.listdir(_DIR):
        parts = name.split("-")
        if parts[0] != "aioflow" or len(parts) < 3:
            continue
        pid = parts[2] if parts[1] == "pool" else parts[1]
        if pid.isdigit() and not _alive(int(pid)):
            _unlink(f"{_DIR}/{name}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@atexit.register
def _close_pools() -> None:
    for pool in list(_pools):
        pool.close()


class WriterCache:
    """A sender's writable mappings of the buffers receivers offered (the most recent
    few), so that writing a tensor into one is a memcpy."""

    def __init__(self, size: int = 2 * POOL_SIZE):
        self.size = size
        self.mappings: dict[str, mmap.mmap] = {}
        self.lock = threading.Lock()

    def write_into(self, offered: bytes, array: np.ndarray) -> str | None:
        """Write `array` into the smallest offered buffer that holds it; its path (None:
        none fits or can be opened; then write() a new file)."""
        fits = []
        for line in offered.decode().splitlines():
            path, _, size = line.rpartition(" ")
            if int(size) >= array.nbytes and path.startswith(f"{_DIR}/aioflow-pool-"):
                fits.append((int(size), path))
        for _, path in sorted(fits):
            mapped = self._mapping(path)
            if mapped is not None:
                dest = np.frombuffer(mapped, dtype=np.uint8, count=array.nbytes)
                np.copyto(dest, np.ascontiguousarray(array).reshape(-1).view(np.uint8))
                return path
        return None

    def _mapping(self, path: str):
        with self.lock:
            mapped = self.mappings.get(path)
            if mapped is not None:
                return mapped
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return None
        try:
            size = os.fstat(fd).st_size
            mapped = mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                               prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        with self.lock:
            self.mappings[path] = mapped
            while len(self.mappings) > self.size:
                del self.mappings[next(iter(self.mappings))]
        return mapped
