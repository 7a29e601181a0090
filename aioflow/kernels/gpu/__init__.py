"""GPU kernels (device type "GPU"), registered on import: host-memory registrations of
the CPU's kernels for int32 and shape values (host_kernels), kernels in array-module
form (array, cwise, math, nn, state), control flow and transfers, and the CPU kernels
streamed on the device for the other ops TF runs on a GPU (streamed). Their type
constraints do not overlap, so the order of the imports does not matter."""

# ruff: noqa: F401  (importing a module registers its kernels)
from . import array, control_flow, cwise, host_kernels, math, nn, state, streamed, transfer
