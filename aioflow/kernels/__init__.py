"""The kernel library (installed as aioflow.kernels): one subpackage per op family
(array, math, nn, image, state, data_flow, control_flow, call, transfer, strings, io, random,
sparse, training). Importing a module registers its kernels; this list imports every one. A new
kernel module goes in its family's folder and gets a line here."""

# ruff: noqa: F401  (importing a module registers its kernels)
from .array import (
    array_grad_kernels,
    array_kernels,
    diag_kernels,
    gather_scatter_nd_kernels,
    parallel_concat_kernels,
    partition_stitch_kernels,
    reorder_kernels,
    space_batch_kernels,
    tensor_scatter_kernels,
    unique_kernels,
)
from .call import (
    function_kernels,
    functional_kernels,
    script_kernels,
    symbolic_gradient_kernels,
)
from .control_flow import control_flow_kernels
from .data import (
    batch_kernels,
    cache_kernels,
    file_kernels,
    generator_kernels,
    iterator_kernels,
    map_kernels,
    prefetch_kernels,
    reduce_kernels,
    shuffle_kernels,
    source_kernels,
    transform_kernels,
    window_kernels,
)
from .data_flow import (
    accumulator_kernels,
    list_kernels,
    queue_kernels,
    stack_kernels,
    tensor_array_kernels,
)
from .image import (
    crop_and_resize_grad_kernels,
    image_codec_kernels,
    nms_kernels,
    resize_area_kernels,
    resize_grad_kernels,
    resize_kernels,
)
from .io import (
    file_io_kernels,
    io_kernels,
    logging_kernels,
    parsing_kernels,
    summary_kernels,
)
from .math import (
    bitwise_kernels,
    cwise_kernels,
    grad_kernels,
    histogram_kernels,
    linalg_kernels,
    matmul_kernels,
    reduction_kernels,
    segment_kernels,
    special_math_kernels,
    triangular_solve_kernels,
)
from .nn import (
    activation_grad_kernels,
    activation_kernels,
    conv_grad_kernels,
    conv_kernels,
    fake_quant_grad_kernels,
    fake_quant_kernels,
    fused_kernels,
    normalization_grad_kernels,
    normalization_kernels,
    pooling_grad_kernels,
    pooling_kernels,
    topk_kernels,
)
from .onednn import (  # registered when oneDNN loads
    batch_norm_onednn,
    conv_grad_onednn,
    conv_onednn,
    pooling_grad_onednn,
    pooling_onednn,
)
from .random import candidate_sampler_kernels, random_gamma_grad_kernels, random_kernels
from .sparse import set_kernels, sparse_grad_kernels, sparse_kernels
from .state import (
    lookup_kernels,
    resource_variable_kernels,
    unsafe_read_kernels,
    variable_kernels,
)
from .strings import string_kernels
from .training import apply_kernels
from .transfer import sendrecv_kernels

# isort: split
# GPU kernels last: the streamed ones wrap the CPU kernels registered above
from . import gpu
