"""Large tensors between processes of one machine through shared memory: instead of
sending a big numeric tensor's bytes inside the RecvTensorResponse, the sending task
writes it once into a /dev/shm file and the response names the file in
`transport_options` (TF's field for "how to receive the tensor", used by TF's own
out-of-band transports when RecvTensorRequest.dma_ok is set). The receiver maps the
file (the array is a view of the mapping: no copy) and unlinks it at once; a file nobody
mapped is removed by its sender after LEFTOVER_S."""

from __future__ import annotations

import itertools
import mmap
import os
import socket

import numpy as np

#: Tensors at least this large go through shared memory (smaller ones inline).
MIN_BYTES = 1 << 20
#: The Any.type_url naming a shared-memory file in transport_options.
TYPE_URL = "type.googleapis.com/aioflow.SharedMemoryTensor"
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
