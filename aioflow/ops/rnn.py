"""TF 1's recurrent network builders (rnn.py): dynamic_rnn (a v1 while loop over time,
inputs and outputs in TensorArrays, sequence lengths copying state through), static_rnn
(the cell unrolled), bidirectional_dynamic_rnn; with TF's variable scopes ("rnn",
"bidirectional_rnn/fw", ...), so a cell's variables are named as TF names them."""

from __future__ import annotations

import numbers

from aioflow.framework import constant_value as constant_value_mod
from aioflow.framework import dtypes, nest, ops, tensor_shape
from aioflow.ops import (
    array_ops,
    constant_op,
    control_flow_ops,
    math_ops,
    tensor_array_ops,
)
from aioflow.ops import variable_scope as vs


def _concat_part(x, what: str):
    """One side of _concat: (the shape tensor or None, its static dims)."""
    if isinstance(x, ops.Tensor):
        static = constant_value_mod.constant_value(x)
        if x.shape.rank == 0:
            x = array_ops.expand_dims(x, 0)
        elif x.shape.rank != 1:
            raise ValueError(f"{what} tensor must be either a scalar or vector, but received "
                             f"tensor: {x}")
        return x, (static.tolist() if static is not None else None)
    shape = tensor_shape.as_shape([x] if isinstance(x, numbers.Integral) else x)
    static = shape.as_list() if shape.rank is not None else None
    tensor = (constant_op.constant(shape.as_list(), dtype=dtypes.int32)
              if shape.is_fully_defined() else None)
    return tensor, static


def concat_shape(prefix, suffix, static: bool = False):
    """[prefix] + suffix as a static list or a shape tensor (TF's rnn_cell_impl._concat:
    both sides become constants first, even for the static list, as TF's graphs show);
    either may be an int, a TensorShape, a list or a (scalar or vector) tensor."""
    p, p_static = _concat_part(prefix, "Prefix")
    s, s_static = _concat_part(suffix, "suffix")
    if static:
        shape = tensor_shape.TensorShape(p_static).concatenate(s_static)
        return shape.as_list() if shape.rank is not None else None
    if p is None or s is None:
        raise ValueError(f"Prefix or suffix can't be None. Received prefix = {prefix} and "
                         f"suffix = {suffix}")
    return array_ops.concat((p, s), 0)


def _should_cache() -> bool:
    """TF's rule: variables made by an RNN outside a while loop get a caching device (their
    reads then carry no colocation)."""
    ctxt = ops.get_default_graph()._get_control_flow_context()
    while ctxt is not None:
        if isinstance(ctxt, control_flow_ops.WhileContext):
            return False
        ctxt = ctxt.outer_context
    return True


def _transpose_batch_time(x):
    """[batch, time, ...] <-> [time, batch, ...]."""
    shape = x.get_shape()
    if shape.rank is not None and shape.rank < 2:
        return x
    x_rank = array_ops.rank(x)
    x_t = array_ops.transpose(x, array_ops.concat(([1, 0], math_ops.range(2, x_rank)),
                                                  axis=0))
    dims = shape.as_list() if shape.rank is not None else None
    if dims is not None:
        x_t.set_shape([dims[1], dims[0]] + dims[2:])
    return x_t


def _best_effort_input_batch_size(flat_input):
    for input_ in flat_input:
        shape = input_.shape
        if shape.rank is None:
            continue
        if shape.rank < 2:
            raise ValueError(f"Input tensor should have rank >= 2. Received input={input_} "
                             f"of rank {shape.rank}")
        batch_size = shape.as_list()[1]
        if batch_size is not None:
            return batch_size
    return array_ops.shape(flat_input[0])[1]


def _infer_state_dtype(explicit_dtype, state):
    if explicit_dtype is not None:
        return explicit_dtype
    if nest.is_nested(state):
        inferred = [element.dtype for element in nest.flatten(state)]
        if not inferred:
            raise ValueError(f"Unable to infer dtype from argument state={state}.")
        return inferred[0]
    return state.dtype


def _shape_list(size) -> list:
    if isinstance(size, ops.Tensor):
        value = constant_value_mod.constant_value(size)
        return [int(v) for v in value.ravel()] if value is not None else [None]
    if isinstance(size, tensor_shape.TensorShape):
        return size.as_list()
    return [size]


def _initial_state(cell, batch_size, dtype, initial_state):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If no initial_state is provided, argument `dtype` must be "
                         "specified")
    return cell.zero_state(batch_size, dtype)


def _assert_has_shape(x, shape):
    x_shape = array_ops.shape(x)
    packed_shape = array_ops.stack(shape)
    return control_flow_ops.Assert(
        math_ops.reduce_all(math_ops.equal(x_shape, packed_shape)),
        [f"Expected shape for Tensor {x.name} is ", packed_shape, " but saw shape: ",
         x_shape])


def _rnn_step(time, sequence_length, min_sequence_length, max_sequence_length, zero_output,
              state, call_cell, skip_conditionals: bool = False):
    """One step where rows past their sequence length copy their state through and
    output zeros (TF's _rnn_step)."""
    flat_state = nest.flatten(state)
    flat_zero_output = nest.flatten(zero_output)
    copy_cond = time >= sequence_length

    def _copy_one_through(output, new_output):
        if output.shape.rank == 0:
            return new_output
        with ops.colocate_with(new_output.op):
            return array_ops.where(copy_cond, output, new_output)

    def _copy_some_through(flat_new_output, flat_new_state):
        return ([_copy_one_through(z, n) for z, n in
                 zip(flat_zero_output, flat_new_output, strict=True)]
                + [_copy_one_through(s, n) for s, n in
                   zip(flat_state, flat_new_state, strict=True)])

    def _maybe_copy_some_through():
        new_output, new_state = call_cell()
        flat_new_state = nest.flatten(new_state)
        flat_new_output = nest.flatten(new_output)
        return control_flow_ops.cond(
            time < min_sequence_length, lambda: flat_new_output + flat_new_state,
            lambda: _copy_some_through(flat_new_output, flat_new_state))

    if skip_conditionals:
        new_output, new_state = call_cell()
        final = _copy_some_through(nest.flatten(new_output), nest.flatten(new_state))
    else:
        final = control_flow_ops.cond(time >= max_sequence_length,
                                      lambda: flat_zero_output + flat_state,
                                      _maybe_copy_some_through)
    final_output = final[:len(flat_zero_output)]
    final_state = final[len(flat_zero_output):]
    for output, zero in zip(final_output, flat_zero_output, strict=True):
        output.set_shape(zero.get_shape())
    for sub, flat_sub in zip(final_state, flat_state, strict=True):
        sub.set_shape(flat_sub.get_shape())
    return (nest.pack_sequence_as(zero_output, final_output),
            nest.pack_sequence_as(state, final_state))


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory: bool = False,
                time_major: bool = False, scope=None):
    """(outputs, final state) of `cell` run over the time axis of `inputs` in a while
    loop (TF 1's tf.nn.dynamic_rnn)."""
    with vs.variable_scope(scope or "rnn") as varscope:
        if _should_cache() and varscope.caching_device is None:
            varscope.set_caching_device(lambda op: op.device)
        flat_input = nest.flatten(inputs)
        if not time_major:
            flat_input = [ops.convert_to_tensor(x) for x in flat_input]
            flat_input = tuple(_transpose_batch_time(x) for x in flat_input)
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
            if sequence_length.get_shape().rank not in (None, 1):
                raise ValueError(f"Argument sequence_length must be a vector of length "
                                 f"batch_size. Received sequence_length={sequence_length} "
                                 f"of shape: {sequence_length.get_shape()}")
            sequence_length = array_ops.identity(sequence_length, name="sequence_length")
        batch_size = _best_effort_input_batch_size(flat_input)
        state = _initial_state(cell, batch_size, dtype, initial_state)
        if sequence_length is not None:
            with ops.control_dependencies([_assert_has_shape(sequence_length, [batch_size])]):
                sequence_length = array_ops.identity(sequence_length, name="CheckSeqLen")
        inputs = nest.pack_sequence_as(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(cell, inputs, state, parallel_iterations,
                                                 swap_memory, sequence_length, dtype)
        if not time_major:
            outputs = nest.map_structure(_transpose_batch_time, outputs)
        return outputs, final_state


def _dynamic_rnn_loop(cell, inputs, initial_state, parallel_iterations, swap_memory,
                      sequence_length=None, dtype=None):
    state = initial_state
    flat_input = nest.flatten(inputs)
    flat_output_size = nest.flatten(cell.output_size)
    input_shape = array_ops.shape(flat_input[0])
    time_steps = input_shape[0]
    batch_size = _best_effort_input_batch_size(flat_input)
    inputs_got_shape = tuple(x.get_shape().with_rank_at_least(3) for x in flat_input)
    const_time_steps, const_batch_size = inputs_got_shape[0].as_list()[:2]
    for i, shape in enumerate(inputs_got_shape):
        if not shape[2:].is_fully_defined():
            raise ValueError(f"Input size (depth of inputs) must be accessible via shape "
                             f"inference, but saw value None for input={flat_input[i]}.")
    state_dtype = _infer_state_dtype(dtype, state)

    def _create_zero_array(size):
        return array_ops.zeros(array_ops.stack(concat_shape(batch_size, size)), state_dtype)

    flat_zero_output = tuple(_create_zero_array(size) for size in flat_output_size)
    zero_output = nest.pack_sequence_as(cell.output_size, flat_zero_output)
    if sequence_length is not None:
        min_sequence_length = math_ops.reduce_min(sequence_length)
        max_sequence_length = math_ops.reduce_max(sequence_length)
    else:
        max_sequence_length = time_steps
    time = array_ops.constant(0, dtype=dtypes.int32, name="time")
    with ops.name_scope("dynamic_rnn") as scope:
        base_name = scope

    def _create_ta(name, element_shape, dtype):
        return tensor_array_ops.TensorArray(dtype=dtype, size=time_steps,
                                            element_shape=element_shape,
                                            tensor_array_name=base_name + name)

    output_ta = tuple(
        _create_ta(f"output_{i}", tensor_shape.TensorShape([const_batch_size] +
                                                           _shape_list(size)), state_dtype)
        for i, size in enumerate(flat_output_size))
    input_ta = tuple(_create_ta(f"input_{i}", x.shape[1:], x.dtype)
                     for i, x in enumerate(flat_input))
    input_ta = tuple(ta.unstack(x) for ta, x in zip(input_ta, flat_input, strict=True))

    def _time_step(time, output_ta_t, state):
        input_t = tuple(ta.read(time) for ta in input_ta)
        for input_, shape in zip(input_t, inputs_got_shape, strict=True):
            input_.set_shape(shape[1:])
        input_t = nest.pack_sequence_as(inputs, input_t)

        def call_cell():
            return cell(input_t, state)

        if sequence_length is not None:
            output, new_state = _rnn_step(time, sequence_length, min_sequence_length,
                                          max_sequence_length, zero_output, state, call_cell,
                                          skip_conditionals=True)
        else:
            output, new_state = call_cell()
        output = nest.flatten(output)
        output_ta_t = tuple(ta.write(time, out)
                            for ta, out in zip(output_ta_t, output, strict=True))
        return time + 1, output_ta_t, new_state

    loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    _, output_final_ta, final_state = control_flow_ops.while_loop(
        cond=lambda time, *_: time < loop_bound, body=_time_step,
        loop_vars=(time, output_ta, state), parallel_iterations=parallel_iterations,
        maximum_iterations=time_steps, swap_memory=swap_memory)
    final_outputs = tuple(ta.stack() for ta in output_final_ta)
    for output, size in zip(final_outputs, flat_output_size, strict=True):
        output.set_shape(concat_shape([const_time_steps, const_batch_size], size,
                                      static=True))
    return nest.pack_sequence_as(cell.output_size, final_outputs), final_state


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
               scope=None):
    """The cell unrolled over a Python list of inputs: (outputs, final state)."""
    if not nest.is_nested(inputs):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    outputs = []
    with vs.variable_scope(scope or "rnn") as varscope:
        if _should_cache() and varscope.caching_device is None:
            varscope.set_caching_device(lambda op: op.device)
        first_input = inputs
        while nest.is_nested(first_input):
            first_input = first_input[0]
        batch = first_input.get_shape().with_rank_at_least(1).as_list()[0]
        batch_size = batch if batch is not None else array_ops.shape(first_input)[0]
        state = _initial_state(cell, batch_size, dtype, initial_state)
        if sequence_length is not None:
            sequence_length = ops.convert_to_tensor(sequence_length, name="sequence_length")
            flat_output_size = nest.flatten(cell.output_size)

            def _zero(size):
                out = array_ops.zeros(array_ops.stack(concat_shape(batch_size, size)),
                                      _infer_state_dtype(dtype, state))
                out.set_shape(tensor_shape.TensorShape(concat_shape(batch, size,
                                                                    static=True)))
                return out

            zero_output = nest.pack_sequence_as(cell.output_size,
                                                tuple(_zero(s) for s in flat_output_size))
            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
            min_sequence_length = math_ops.reduce_min(sequence_length)
            max_sequence_length = math_ops.reduce_max(sequence_length)
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()

            def call_cell(input_=input_, state=state):
                return cell(input_, state)

            if sequence_length is not None:
                output, state = _rnn_step(time, sequence_length, min_sequence_length,
                                          max_sequence_length, zero_output, state, call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
        return outputs, state


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory: bool = False,
                              time_major: bool = False, scope=None):
    """((outputs forward, outputs backward), (final states)): the backward cell reads
    the sequences reversed (by their lengths)."""
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        time_axis, batch_axis = (0, 1) if time_major else (1, 0)

        def _reverse(input_):
            if sequence_length is not None:
                return array_ops.reverse_sequence(input_, seq_lengths=sequence_length,
                                                  seq_axis=time_axis, batch_axis=batch_axis)
            return array_ops.reverse(input_, axis=[time_axis])

        with vs.variable_scope("bw") as bw_scope:
            inputs_reverse = nest.map_structure(_reverse, inputs)
            tmp, state_bw = dynamic_rnn(
                cell_bw, inputs_reverse, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
    output_bw = _reverse(tmp)
    return (output_fw, output_bw), (state_fw, state_bw)


def _reverse_seq(input_seq, lengths):
    """The list of time steps reversed (each row by its own length when given)."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_input_seq = tuple(nest.flatten(input_) for input_ in input_seq)
    flat_results = [[] for _ in range(len(input_seq))]
    for sequence in zip(*flat_input_seq, strict=True):
        input_shape = tensor_shape.unknown_shape(rank=sequence[0].get_shape().rank)
        for input_ in sequence:
            input_shape.assert_is_compatible_with(input_.get_shape())
            input_.set_shape(input_shape)
        s_joined = array_ops.stack(sequence)
        s_reversed = array_ops.reverse_sequence(s_joined, lengths, 0, 1)
        result = array_ops.unstack(s_reversed)
        for r, flat_result in zip(result, flat_results, strict=True):
            r.set_shape(input_shape)
            flat_result.append(r)
    return [nest.pack_sequence_as(input_, flat_result)
            for input_, flat_result in zip(input_seq, flat_results, strict=True)]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs of forward and backward concatenated per step, final forward state, final
    backward state): static_rnn forward and over the reversed steps."""
    if not nest.is_nested(inputs):
        raise TypeError(f"Argument `inputs` must be a sequence. Received: {inputs}")
    if not inputs:
        raise ValueError("Argument `inputs` must not be empty.")
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                                    sequence_length, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, output_state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw,
                                              dtype, sequence_length, scope=bw_scope)
    output_bw = _reverse_seq(tmp, sequence_length)
    flat_outputs = tuple(array_ops.concat([fw, bw], 1) for fw, bw in
                         zip(nest.flatten(output_fw), nest.flatten(output_bw), strict=True))
    outputs = nest.pack_sequence_as(output_fw, flat_outputs)
    return outputs, output_state_fw, output_state_bw
