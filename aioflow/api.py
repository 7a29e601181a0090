"""The public TF-1-like names that `aioflow/__init__.py` re-exports (`from aioflow.api
import *`): graph API, dtypes, shapes, errors, and the core op builders, plus the `nn`,
`math`, `bitwise` and `dtypes` namespaces."""

from __future__ import annotations

from aioflow import data, layers, losses, metrics, saved_model, summary, train  # noqa: I001  (tf.data; tf.layers; checkpoints; SavedModels; TensorBoard)
from aioflow.framework import dtypes, errors
from aioflow.framework.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from aioflow.framework.importer import import_graph_def
from aioflow.framework.ops import (
    Graph,
    Operation,
    Tensor,
    add_to_collection,
    colocate_with,
    control_dependencies,
    convert_to_tensor,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    register_tensor_conversion_function,
    reset_default_graph,
)
from aioflow.framework.random_seed import get_seed, set_random_seed
from aioflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from aioflow.framework.tensor_shape import Dimension, TensorShape
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.ops import bitwise, image, io, linalg, lookup, math, nn, queue, random, sparse, strings
from aioflow.ops.accumulator_ops import (
    ConditionalAccumulator,
    ConditionalAccumulatorBase,
    SparseConditionalAccumulator,
)
from aioflow.ops.array_ops import (
    boolean_mask,
    broadcast_dynamic_shape,
    broadcast_to,
    check_numerics,
    concat,
    expand_dims,
    fake_quant_with_min_max_args,
    fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_per_channel,
    fill,
    gather,
    gather_nd,
    group,
    identity,
    identity_n,
    invert_permutation,
    matrix_transpose,
    newaxis,
    no_op,
    one_hot,
    ones,
    ones_like,
    pad,
    placeholder,
    placeholder_with_default,
    quantization,
    rank,
    reshape,
    reverse,
    reverse_sequence,
    roll,
    scatter_nd,
    setdiff1d,
    shape,
    shape_n,
    size,
    slice,
    split,
    squeeze,
    stack,
    stop_gradient,
    strided_slice,
    tensor_scatter_add,
    tensor_scatter_nd_add,
    tensor_scatter_nd_max,
    tensor_scatter_nd_min,
    tensor_scatter_nd_sub,
    tensor_scatter_nd_update,
    tensor_scatter_sub,
    tensor_scatter_update,
    tile,
    transpose,
    tuple,
    unique,
    unique_with_counts,
    unstack,
    where,
    where_v2,
    with_dependencies,
    zeros,
    zeros_like,
)
from aioflow.ops.clip_ops import clip_by_value
from aioflow.ops.constant_op import constant
from aioflow.ops.control_flow_ops import Assert, case, cond, while_loop
from aioflow.ops.data_flow_ops import dynamic_partition, dynamic_stitch
from aioflow.ops.functional_ops import foldl, foldr, map_fn, scan
from aioflow.ops.image_codec_ops import saturate_cast
from aioflow.ops.io_ops import read_file
from aioflow.ops.linalg_ops import (
    einsum,
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_triangular_solve,
    qr,
)
from aioflow.ops.logging_ops import Print, timestamp
from aioflow.ops.logging_ops import print_v2 as print  # noqa: A001 - TF's name (tf.print)
from aioflow.ops.lookup_ops import initialize_all_tables, tables_initializer
from aioflow.ops.math_ops import (
    abs,
    acos,
    acosh,
    add,
    add_n,
    argmax,
    argmin,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cast,
    ceil,
    conj,
    cos,
    cosh,
    cumprod,
    cumsum,
    digamma,
    div,
    div_no_nan,
    divide,
    equal,
    erf,
    exp,
    expm1,
    floor,
    floordiv,
    floormod,
    greater,
    greater_equal,
    is_finite,
    is_inf,
    is_nan,
    less,
    less_equal,
    lgamma,
    linspace,
    log,
    log1p,
    log_sigmoid,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    matmul,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    range,
    realdiv,
    reciprocal,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    rint,
    round,
    rsqrt,
    scalar_mul,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    squared_difference,
    subtract,
    tan,
    tanh,
    tensordot,
    to_bfloat16,
    to_double,
    to_float,
    to_int32,
    to_int64,
    truediv,
    truncatediv,
    truncatemod,
)
from aioflow.ops.parallel_stack_op import parallel_stack
from aioflow.ops.parsing_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from aioflow.ops.queue_ops import (
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
from aioflow.ops.random_ops import (
    multinomial,
    random_gamma,
    random_normal,
    random_shuffle,
    random_uniform,
    truncated_normal,
)
from aioflow.ops.space_batch_ops import (
    batch_to_space,
    batch_to_space_nd,
    depth_to_space,
    space_to_batch,
    space_to_batch_nd,
    space_to_depth,
)
from aioflow.ops.sparse_ops import sparse_placeholder, sparse_to_dense
from aioflow.ops.tensor_array_ops import TensorArray

__all__ = [
    "Assert", "case", "cond", "while_loop", "TensorArray", "Print", "print",
    "map_fn", "scan", "foldl", "foldr",
    "FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "parse_example",
    "parse_single_example", "space_to_batch_nd", "batch_to_space_nd", "space_to_batch",
    "batch_to_space", "space_to_depth", "depth_to_space", "dynamic_partition",
    "dynamic_stitch", "invert_permutation", "linspace", "roll", "setdiff1d", "timestamp",
    "quantization", "fake_quant_with_min_max_args", "fake_quant_with_min_max_vars",
    "fake_quant_with_min_max_vars_per_channel",
    # modules / namespaces
    "dtypes", "errors", "nn", "math", "bitwise", "linalg", "image", "random",
    # random ops and seeds
    "set_random_seed", "get_seed", "random_uniform", "random_normal", "truncated_normal",
    "random_shuffle", "multinomial", "random_gamma",
    # linalg and extra array ops
    "einsum", "matrix_band_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag",
    "matrix_triangular_solve", "qr",
    "broadcast_dynamic_shape", "clip_by_value", "saturate_cast", "reverse_sequence",
    "unique",
    "unique_with_counts", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
    "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
    # dtypes and shapes
    "DType", "as_dtype", "bfloat16", "bool", "complex64", "complex128", "double", "float16",
    "float32", "float64", "half", "int8", "int16", "int32", "int64", "qint8", "qint16",
    "qint32", "quint8", "quint16", "resource", "string", "uint8", "uint16", "uint32",
    "uint64", "variant", "TensorShape", "Dimension", "TensorSpec",
    # graph API
    "Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph",
    "name_scope", "control_dependencies", "device", "colocate_with", "add_to_collection",
    "get_collection", "get_collection_ref", "convert_to_tensor",
    "register_tensor_conversion_function", "import_graph_def",
    # array ops
    "constant", "placeholder", "placeholder_with_default", "identity", "identity_n",
    "stop_gradient", "check_numerics", "no_op", "group", "tuple", "with_dependencies",
    "reshape", "shape", "shape_n", "size", "rank", "expand_dims", "squeeze", "transpose",
    "matrix_transpose", "concat", "stack", "parallel_stack", "unstack", "split", "fill",
    "zeros", "ones", "zeros_like", "ones_like", "tile", "slice", "strided_slice", "gather",
    "gather_nd", "scatter_nd", "one_hot", "pad", "broadcast_to", "reverse", "where",
    "where_v2", "boolean_mask", "newaxis",
    # math ops
    "cast", "to_float", "to_double", "to_int32", "to_int64", "to_bfloat16", "add",
    "subtract", "multiply", "divide", "div", "div_no_nan", "truediv", "realdiv",
    "floordiv", "floormod", "mod", "truncatediv", "truncatemod", "pow", "maximum",
    "minimum", "squared_difference", "negative", "abs", "sign", "square", "sqrt", "rsqrt",
    "exp", "expm1", "log", "log1p", "log_sigmoid", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "reciprocal", "floor", "ceil",
    "round", "rint", "erf", "lgamma", "digamma", "conj", "is_nan", "is_inf", "is_finite",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_not", "logical_xor", "add_n", "scalar_mul", "matmul", "range",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
    "reduce_any", "reduce_logsumexp", "tensordot", "argmax", "argmin", "cumsum", "cumprod",
    "sparse", "SparseTensor", "SparseTensorValue", "sparse_to_dense", "sparse_placeholder",
    "strings",
    "io",
    "read_file",
    "lookup", "tables_initializer", "initialize_all_tables",
    "queue", "QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue",
    "PriorityQueue", "ConditionalAccumulator", "ConditionalAccumulatorBase",
    "SparseConditionalAccumulator",
    "saved_model", "train", "summary", "data", "layers", "losses", "metrics",
]

# Variables (issue #11): TF 1.x's variable API.
from aioflow.ops import initializers  # noqa: E402
from aioflow.ops.init_ops import (  # noqa: E402
    glorot_normal_initializer,
    glorot_uniform_initializer,
    orthogonal_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
)
from aioflow.ops.state_ops import (  # noqa: E402
    assign,
    assign_add,
    assign_sub,
    count_up_to,
    is_variable_initialized,
    scatter_add,
    scatter_div,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_nd_add,
    scatter_nd_sub,
    scatter_nd_update,
    scatter_sub,
    scatter_update,
)
from aioflow.ops.variable_scope import (  # noqa: E402
    AUTO_REUSE,
    VariableScope,
    constant_initializer,
    get_local_variable,
    get_variable,
    get_variable_scope,
    ones_initializer,
    variable_scope,
    zeros_initializer,
)
from aioflow.ops.variables import (  # noqa: E402
    GraphKeys,
    Variable,
    global_variables,
    global_variables_initializer,
    local_variables,
    local_variables_initializer,
    report_uninitialized_variables,
    trainable_variables,
    variables_initializer,
)

__all__ += [
    "Variable", "GraphKeys", "get_variable", "get_local_variable", "variable_scope",
    "VariableScope", "get_variable_scope", "AUTO_REUSE", "global_variables",
    "local_variables", "trainable_variables", "global_variables_initializer",
    "local_variables_initializer", "variables_initializer",
    "report_uninitialized_variables", "is_variable_initialized", "initializers",
    "zeros_initializer", "ones_initializer", "constant_initializer", "assign",
    "assign_add", "assign_sub", "count_up_to", "scatter_update", "scatter_add",
    "scatter_sub", "scatter_mul", "scatter_div", "scatter_min", "scatter_max",
    "scatter_nd_update", "scatter_nd_add", "scatter_nd_sub", "glorot_normal_initializer",
    "glorot_uniform_initializer", "orthogonal_initializer", "random_normal_initializer",
    "random_uniform_initializer", "truncated_normal_initializer",
    "variance_scaling_initializer",
]

# -- symbolic gradients ------------------------------------------------------------------
from aioflow import test  # noqa: E402  (af.test.compute_gradient)
from aioflow.framework.indexed_slices import IndexedSlices  # noqa: E402
from aioflow.gradients import (  # noqa: E402
    AggregationMethod,
    NoGradient,
    NotDifferentiable,
    RegisterGradient,
    UnconnectedGradients,
    custom_gradient,
    gradients,
    hessians,
)

__all__ += [
    "IndexedSlices", "AggregationMethod", "custom_gradient", "NoGradient", "NotDifferentiable",
    "RegisterGradient", "UnconnectedGradients", "gradients", "hessians", "test",
]

# -- training: gradient clipping ---------------------------------------------------------
from aioflow.ops.clip_ops import (  # noqa: E402
    clip_by_average_norm,
    clip_by_global_norm,
    clip_by_norm,
    global_norm,
)

__all__ += ["clip_by_norm", "clip_by_global_norm", "clip_by_average_norm", "global_norm"]

# -- graph-mode assertions (check_ops), sets and the confusion matrix ----------------------
from aioflow.ops import sets  # noqa: E402
from aioflow.ops.check_ops import (  # noqa: E402
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_less,
    assert_less_equal,
    assert_non_negative,
    assert_rank_in,
    assert_type,
)
from aioflow.ops.confusion_matrix import confusion_matrix  # noqa: E402
from aioflow.ops.partitioned_variables import (  # noqa: E402
    PartitionedVariable,
    fixed_size_partitioner,
    min_max_variable_partitioner,
    variable_axis_size_partitioner,
)

__all__ += ["sets", "assert_equal", "assert_greater", "assert_greater_equal", "assert_less",
            "assert_less_equal", "assert_non_negative", "assert_rank_in", "assert_type",
            "confusion_matrix", "PartitionedVariable", "fixed_size_partitioner",
            "min_max_variable_partitioner", "variable_axis_size_partitioner"]

# Clusters (issue #27): the distributed runtime (importing it registers the "grpc://"
# session target); tf.train.Server is its Server (af.train, a builders' package, cannot
# import the runtime, so the package face hands it over).
from aioflow import distributed  # noqa: E402

train.Server = distributed.Server
__all__ += ["distributed"]
