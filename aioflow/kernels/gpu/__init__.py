"""GPU kernels (device type "GPU"), registered on import: host-memory registrations of
the CPU's kernels for int32 and shape values (host_kernels), kernels in array-module
form (array, fill_select_pad, cwise, math, nn, state), control flow and transfers, and the
CPU kernels streamed on the device for the other ops TF runs on a GPU (streamed). Their
type constraints do not overlap, so the order of the imports does not matter.

The CPU kernel modules whose classes these registrations reuse are imported first, so
that this package registers the same kernels whatever order aioflow.kernels imports
its families in."""

# ruff: noqa: F401  (importing a module registers its kernels)
from ..array import array_kernels
from ..control_flow import control_flow_kernels
from ..image import resize_kernels
from ..math import cwise_kernels, reduction_kernels
from ..nn import conv_grad_kernels, topk_kernels
from ..state import resource_variable_kernels, variable_kernels
from ..transfer import sendrecv_kernels
from . import (
    array,
    control_flow,
    cwise,
    fill_select_pad,
    host_kernels,
    math,
    nn,
    state,
    streamed,
    transfer,
)
