"""GPU kernels (device type "GPU"), registered on import. Host-memory registrations
come first (the registry takes the first registration that matches a node), the
kernels in array-module form next, the CPU kernels streamed on the device last."""

from . import host_kernels  # noqa: F401  (first: int32 and shape registrations)
from . import array, control_flow, cwise, math, nn, state, transfer  # noqa: F401
from . import streamed  # noqa: F401  (last: only ops without a kernel of their own)
