"""tf.compat.v1.nn.rnn_cell: TF 1's recurrent cells as layers (BasicRNNCell, GRUCell,
BasicLSTMCell, LSTMCell with peepholes, clipping and projection, MultiRNNCell,
DropoutWrapper, LSTMStateTuple), with TF's variable names (`<scope>/basic_lstm_cell/kernel`,
`gates/kernel`, `cell_0/...`) so that TF's checkpoints of them restore here."""

from __future__ import annotations

import collections
import hashlib

from aioflow.framework import constant_value, dtypes, nest, ops, tensor_shape
from aioflow.layers.base import Layer
from aioflow.ops import (
    array_ops,
    clip_ops,
    constant_op,
    init_ops,
    math_ops,
    nn_impl,
    nn_ops,
    partitioned_variables,
    random_ops,
    tensor_array_ops,
)
from aioflow.ops import variable_scope as vs
from aioflow.ops.rnn import concat_shape as _concat


def _zero_state_tensors(state_size, batch_size, dtype):
    def get_state_shape(s):
        c = _concat(batch_size, s)
        size = array_ops.zeros(c, dtype=dtype)
        size.set_shape(_concat(batch_size, s, static=True))
        return size

    return nest.map_structure(get_state_shape, state_size)


class RNNCell(Layer):
    """The base of TF 1's RNN cells: `output, new_state = cell(inputs, state)`."""

    def __call__(self, inputs, state, scope=None):
        if scope is not None:
            with vs.variable_scope(scope) as captured:
                return super().__call__(inputs, state, scope=captured)
        with vs.variable_scope(vs.get_variable_scope()):
            return super().__call__(inputs, state)

    @property
    def state_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        raise NotImplementedError("Abstract method")

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            inputs = ops.convert_to_tensor(inputs, name="inputs")
            batch_size = inputs.shape.as_list()[0] or array_ops.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(f"batch_size and dtype cannot be None while constructing initial "
                             f"state: batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """Zeros of the state's structure for `batch_size` rows."""
        with ops.name_scope(type(self).__name__ + "ZeroState"):
            return _zero_state_tensors(self.state_size, batch_size, dtype)


class LayerRNNCell(RNNCell):
    """A cell that is a plain layer when called: no extra variable scope around the call
    (TF's LayerRNNCell), so its ops go under the layer's own scope (rnn/while/gru_cell)."""

    def __call__(self, inputs, state, scope=None, *args, **kwargs):
        return Layer.__call__(self, inputs, state, *args, scope=scope, **kwargs)


def _input_depth(input_shape) -> int:
    depth = input_shape.as_list()[-1]
    if depth is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, received shape: "
                         f"{input_shape}")
    return depth


class BasicRNNCell(LayerRNNCell):
    """output = new_state = activation(W [inputs, state] + b)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None,
                 **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_shape) -> None:
        depth = _input_depth(input_shape)
        self._kernel = self.add_weight("kernel", shape=[depth + self._num_units,
                                                        self._num_units])
        self._bias = self.add_weight("bias", shape=[self._num_units],
                                     initializer=init_ops.zeros_initializer())
        self.built = True

    def call(self, inputs, state):
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        output = self._activation(gate_inputs)
        return output, output


class GRUCell(LayerRNNCell):
    """Gated recurrent unit (Cho et al.)."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = activation or math_ops.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_shape) -> None:
        depth = _input_depth(input_shape)
        n = self._num_units
        self._gate_kernel = self.add_weight("gates/kernel", shape=[depth + n, 2 * n],
                                            initializer=self._kernel_initializer)
        self._gate_bias = self.add_weight(
            "gates/bias", shape=[2 * n], initializer=self._bias_initializer
            if self._bias_initializer is not None else init_ops.constant_initializer(1.0))
        self._candidate_kernel = self.add_weight("candidate/kernel", shape=[depth + n, n],
                                                 initializer=self._kernel_initializer)
        self._candidate_bias = self.add_weight(
            "candidate/bias", shape=[n], initializer=self._bias_initializer
            if self._bias_initializer is not None else init_ops.zeros_initializer())
        self.built = True

    def call(self, inputs, state):
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._gate_kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._gate_bias)
        value = math_ops.sigmoid(gate_inputs)
        r, u = array_ops.split(value=value, num_or_size_splits=2, axis=1)
        r_state = r * state
        candidate = math_ops.matmul(array_ops.concat([inputs, r_state], 1),
                                    self._candidate_kernel)
        candidate = nn_ops.bias_add(candidate, self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """(c, h): an LSTM's cell state and output."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent dtypes for internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


class BasicLSTMCell(LayerRNNCell):
    """LSTM (Hochreiter & Schmidhuber) with a forget bias, as TF's basic cell."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple: bool = True,
                 activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units) if self._state_is_tuple \
            else 2 * self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_shape) -> None:
        depth = _input_depth(input_shape)
        self._kernel = self.add_weight("kernel", shape=[depth + self._num_units,
                                                        4 * self._num_units])
        self._bias = self.add_weight("bias", shape=[4 * self._num_units],
                                     initializer=init_ops.zeros_initializer())
        self.built = True

    def call(self, inputs, state):
        one = constant_op.constant(1, dtype=dtypes.int32)
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = array_ops.split(value=state, num_or_size_splits=2, axis=one)
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, h], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        i, j, f, o = array_ops.split(value=gate_inputs, num_or_size_splits=4, axis=one)
        forget_bias_tensor = constant_op.constant(self._forget_bias, dtype=f.dtype)
        new_c = math_ops.add(
            math_ops.multiply(c, math_ops.sigmoid(math_ops.add(f, forget_bias_tensor))),
            math_ops.multiply(math_ops.sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), math_ops.sigmoid(o))
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple \
            else array_ops.concat([new_c, new_h], 1)
        return new_h, new_state


def _shards(num_shards):
    """The partitioner of a weight split in `num_shards` (None: not split)."""
    return None if num_shards is None else partitioned_variables.fixed_size_partitioner(
        num_shards)


class LSTMCell(LayerRNNCell):
    """LSTM with optional peepholes, cell clipping and an output projection."""

    def __init__(self, num_units, use_peepholes: bool = False, cell_clip=None,
                 initializer=None, num_proj=None, proj_clip=None, num_unit_shards=None,
                 num_proj_shards=None, forget_bias=1.0, state_is_tuple: bool = True,
                 activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh
        out = num_proj or num_units
        self._state_size = LSTMStateTuple(num_units, out) if state_is_tuple \
            else num_units + out
        self._output_size = out

    @property
    def state_size(self):
        return self._state_size

    @property
    def output_size(self):
        return self._output_size

    def build(self, input_shape) -> None:
        depth = _input_depth(input_shape)
        h_depth = self._num_units if self._num_proj is None else self._num_proj
        self._kernel = self.add_weight("kernel", shape=[depth + h_depth, 4 * self._num_units],
                                       initializer=self._initializer,
                                       partitioner=_shards(self._num_unit_shards))
        self._bias = self.add_weight("bias", shape=[4 * self._num_units],
                                     initializer=init_ops.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", shape=[self._num_units],
                                             initializer=self._initializer)
            self._w_i_diag = self.add_weight("w_i_diag", shape=[self._num_units],
                                             initializer=self._initializer)
            self._w_o_diag = self.add_weight("w_o_diag", shape=[self._num_units],
                                             initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight("projection/kernel",
                                                shape=[self._num_units, self._num_proj],
                                                initializer=self._initializer,
                                                partitioner=_shards(self._num_proj_shards))
        self.built = True

    def call(self, inputs, state):
        num_proj = self._num_units if self._num_proj is None else self._num_proj
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array_ops.slice(state, [0, 0], [-1, self._num_units])
            m_prev = array_ops.slice(state, [0, self._num_units], [-1, num_proj])
        lstm_matrix = math_ops.matmul(array_ops.concat([inputs, m_prev], 1), self._kernel)
        lstm_matrix = nn_ops.bias_add(lstm_matrix, self._bias)
        i, j, f, o = array_ops.split(value=lstm_matrix, num_or_size_splits=4, axis=1)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev
                 + sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple \
            else array_ops.concat([c, m], 1)
        return m, new_state


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input (scopes cell_0, ...)."""

    def __init__(self, cells, state_is_tuple: bool = True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not nest.is_nested(cells):
            raise TypeError(f"cells must be a list or tuple, but received: {cells}.")
        self._cells = cells
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        with ops.name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    @property
    def trainable_weights(self) -> list:
        return [w for cell in self._cells for w in cell.trainable_weights]

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, state):
        cur_state_pos = 0
        cur_inp = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with vs.variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    cur_state = state[i]
                else:
                    cur_state = array_ops.slice(state, [0, cur_state_pos],
                                                [-1, cell.state_size])
                    cur_state_pos += cell.state_size
                cur_inp, new_state = cell(cur_inp, cur_state)
                new_states.append(new_state)
        new_states = tuple(new_states) if self._state_is_tuple \
            else array_ops.concat(new_states, 1)
        return cur_inp, new_states


def _default_dropout_state_filter_visitor(substate):
    """TF's default: no dropout on an LSTM's memory c, nor on a TensorArray."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return not isinstance(substate, tensor_array_ops.TensorArray)


def _filter_flags(visitor, structure) -> list:
    """Per leaf of `structure` (nest.flatten's order), whether to drop it: the visitor
    says True (look inside), False (keep all of it) or a shallow structure of bools (TF's
    get_traverse_shallow_structure)."""
    verdict = visitor(structure)
    if isinstance(verdict, bool):
        if not verdict:
            return [False] * len(nest.flatten(structure))
        if not nest.is_nested(structure):
            return [True]
        children = structure.values() if isinstance(structure, dict) else structure
        return [f for child in children for f in _filter_flags(visitor, child)]
    flags = []
    for flag, child in zip(nest.flatten(verdict), structure, strict=True):
        flags.extend([flag] * len(nest.flatten(child)))
    return flags


class _CellWrapper(RNNCell):
    """What every wrapper shares (TF's _RNNCellWrapperV1): the wrapped cell's sizes, and
    its zero state under "<Wrapper>ZeroState"."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        self._cell = cell

    @property
    def wrapped_cell(self):
        return self._cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        with ops.name_scope(type(self).__name__ + "ZeroState"):
            return self._cell.zero_state(batch_size, dtype)


class DropoutWrapper(_CellWrapper):
    """Dropout on a cell's inputs, outputs and state (keep probabilities), seeded per
    kind as TF's (md5 of the seed and a salt); with `variational_recurrent`, one noise per
    sequence (drawn at construction, as TF's) for every step. The state filter keeps an
    LSTM's memory c undropped, as TF's default."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0,
                 state_keep_prob=1.0, variational_recurrent: bool = False,
                 input_size=None, dtype=None, seed=None, dropout_state_filter_visitor=None,
                 **kwargs):
        super().__init__(cell, **kwargs)
        if dropout_state_filter_visitor is not None and \
                not callable(dropout_state_filter_visitor):
            raise TypeError(f"dropout_state_filter_visitor must be callable. Received: "
                            f"{dropout_state_filter_visitor}")
        self._dropout_state_filter = (dropout_state_filter_visitor
                                      or _default_dropout_state_filter_visitor)
        with ops.name_scope("DropoutWrapperInit"):  # TF makes these tensors (and ops) here
            probs = []
            for prob, attr in ((input_keep_prob, "input_keep_prob"),
                               (state_keep_prob, "state_keep_prob"),
                               (output_keep_prob, "output_keep_prob")):
                tensor = ops.convert_to_tensor(prob)
                value = constant_value.constant_value(tensor)
                if value is not None and not 0 <= value <= 1:
                    raise ValueError(f"Parameter {attr} must be between 0 and 1. Received "
                                     f"{value}")
                probs.append(float(value) if value is not None else tensor)
        self._input_keep_prob, self._state_keep_prob, self._output_keep_prob = probs
        self._variational_recurrent = variational_recurrent
        self._seed = seed
        self._recurrent_input_noise = None
        self._recurrent_state_noise = None
        self._recurrent_output_noise = None
        if variational_recurrent:
            self._make_noise(cell, input_size, dtype)

    def _make_noise(self, cell, input_size, dtype) -> None:
        """TF's per-sequence noise: uniform [1, ...size] per input, state and output."""
        if dtype is None:
            raise ValueError("When variational_recurrent=True, dtype must be provided")

        def noise_of(salt, sizes):
            flat = [random_ops.random_uniform(
                        array_ops.concat(([1], tensor_shape.TensorShape(size).as_list()), 0),
                        seed=self._gen_seed(salt, i), dtype=dtype)
                    for i, size in enumerate(nest.flatten(sizes))]
            return nest.pack_sequence_as(sizes, flat)

        if self._should(self._input_keep_prob):
            if input_size is None:
                raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 "
                                 "or is unknown, input_size must be provided")
            self._recurrent_input_noise = noise_of("input", input_size)
        self._recurrent_state_noise = noise_of("state", cell.state_size)
        self._recurrent_output_noise = noise_of("output", cell.output_size)

    def _gen_seed(self, salt_prefix: str, index: int):
        if self._seed is None:
            return None
        salt = f"{salt_prefix}_{index}"
        string = (str(self._seed) + salt).encode("utf-8")
        return int(hashlib.md5(string).hexdigest()[:8], 16) & 0x7FFFFFFF

    @staticmethod
    def _variational_value(value, noise, keep_prob):
        """value / keep_prob where keep_prob + noise >= 1, else 0."""
        binary_tensor = math_ops.floor(keep_prob + noise)
        ret = math_ops.divide(value, keep_prob) * binary_tensor
        ret.set_shape(value.get_shape())
        return ret

    def _dropout(self, values, salt_prefix: str, recurrent_noise, keep_prob, flags=None):
        flat = nest.flatten(values)
        flags = flags if flags is not None else [True] * len(flat)
        noise = nest.flatten(recurrent_noise) if self._variational_recurrent else None
        out = []
        for i, (value, drop) in enumerate(zip(flat, flags, strict=True)):
            if not drop:
                out.append(value)
            elif self._variational_recurrent:
                out.append(self._variational_value(value, noise[i], keep_prob))
            else:
                out.append(nn_impl.dropout_v2(value, rate=1.0 - keep_prob,
                                              seed=self._gen_seed(salt_prefix, i)))
        return nest.pack_sequence_as(values, out)

    @staticmethod
    def _should(p) -> bool:
        return not isinstance(p, float) or p < 1

    def __call__(self, inputs, state, scope=None):
        if self._should(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._recurrent_input_noise,
                                   self._input_keep_prob)
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._should(self._state_keep_prob):
            new_state = self._dropout(new_state, "state", self._recurrent_state_noise,
                                      self._state_keep_prob,
                                      _filter_flags(self._dropout_state_filter, new_state))
        if self._should(self._output_keep_prob):
            output = self._dropout(output, "output", self._recurrent_output_noise,
                                   self._output_keep_prob)
        return output, new_state


class ResidualWrapper(_CellWrapper):
    """The wrapped cell's output plus its input (or `residual_fn(inputs, outputs)`)."""

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def __call__(self, inputs, state, scope=None):
        outputs, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state
        nest.assert_same_structure(inputs, outputs)
        for inp, out in zip(nest.flatten(inputs), nest.flatten(outputs), strict=True):
            inp.get_shape().assert_is_compatible_with(out.get_shape())
        res = [inp + out for inp, out in zip(nest.flatten(inputs), nest.flatten(outputs),
                                              strict=True)]
        return nest.pack_sequence_as(outputs, res), new_state


class DeviceWrapper(_CellWrapper):
    """The wrapped cell built on `device`."""

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with ops.name_scope(type(self).__name__ + "ZeroState"), ops.device(self._device):
            return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        with ops.device(self._device):
            return self._cell(inputs, state, scope=scope)
