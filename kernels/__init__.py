"""The kernel library (installed as aioflow.kernels): one module per op family."""

from . import (  # noqa: F401  (importing a module registers its kernels)
    array_extra_kernels,
    array_kernels,
    bitwise_kernels,
    control_flow_kernels,
    conv_kernels,
    cwise_kernels,
    function_kernels,
    gather_scatter_nd_kernels,
    linalg_kernels,
    matmul_kernels,
    nn_kernels,
    normalization_kernels,
    pooling_kernels,
    reduction_kernels,
    script_kernels,
    segment_kernels,
    sendrecv_kernels,
    sparse_kernels,
    special_math_kernels,
    tensor_array_kernels,
)
