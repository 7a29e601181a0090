"""Tests for aioflow.framework.tensor_shape: Dimension and TensorShape semantics."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aioflow.framework import tensor_shape
from aioflow.framework.tensor_shape import Dimension, TensorShape
from aioflow.proto import tensor_shape_pb2

# -- Dimension ----------------------------------------------------------------------------------


def test_dimension_construction():
    assert Dimension(3).value == 3
    assert Dimension(None).value is None
    assert Dimension(np.int64(4)).value == 4
    assert type(Dimension(np.int64(4)).value) is int
    assert Dimension(Dimension(5)).value == 5
    assert Dimension(0).value == 0
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        Dimension(-1)
    with pytest.raises(TypeError, match="Dimension value must be integer or None"):
        Dimension(2.0)
    with pytest.raises(TypeError):
        Dimension("3")


def test_dimension_equality_and_unknown():
    assert Dimension(3) == 3
    assert Dimension(3) == Dimension(3)
    assert (Dimension(3) == Dimension(4)) is False
    assert (Dimension(3) != Dimension(4)) is True
    assert (Dimension(None) == 3) is None
    assert (Dimension(3) == Dimension(None)) is None
    assert (Dimension(None) == Dimension(None)) is None
    assert (Dimension(None) != 3) is None
    assert (Dimension(3) == "x") is False  # NotImplemented both ways -> identity -> False
    assert hash(Dimension(3)) == hash(Dimension(3))


def test_dimension_conversions():
    assert int(Dimension(7)) == 7
    assert [0, 1, 2, 3][Dimension(2)] == 2
    assert list(range(Dimension(3))) == [0, 1, 2]
    with pytest.raises(TypeError):
        int(Dimension(None))
    with pytest.raises(TypeError):
        [1, 2][Dimension(None)]
    assert bool(Dimension(1)) and not bool(Dimension(0)) and not bool(Dimension(None))
    assert repr(Dimension(3)) == "Dimension(3)"
    assert repr(Dimension(None)) == "Dimension(None)"
    assert str(Dimension(3)) == "3" and str(Dimension(None)) == "?"


def test_dimension_arithmetic():
    d3, d4, dn = Dimension(3), Dimension(4), Dimension(None)
    assert (d3 + d4).value == 7
    assert (d3 + 1).value == 4
    assert (1 + d3).value == 4
    assert (d4 - d3).value == 1
    assert (10 - d3).value == 7
    assert (d3 * d4).value == 12
    assert (2 * d3).value == 6
    assert (d4 // 3).value == 1
    assert (9 // d4).value == 2
    assert (d4 % 3).value == 1
    assert (9 % d4).value == 1
    for result in (d3 + dn, dn + 3, d3 - dn, 3 - dn, dn * 2, 2 * dn, dn // 2, 7 // dn, dn % 2):
        assert result.value is None
    with pytest.raises(ValueError, match="must be >= 0"):
        _ = d3 - d4
    with pytest.raises(TypeError, match="please use // instead"):
        _ = d4 / 2
    with pytest.raises(TypeError, match="please use // instead"):
        _ = 2 / d4


def test_dimension_comparisons():
    d3, dn = Dimension(3), Dimension(None)
    assert (d3 < 4) is True and (d3 <= 3) is True and (d3 > 4) is False and (d3 >= 4) is False
    for result in (d3 < dn, dn <= 3, dn > 1, d3 >= dn):
        assert result is None


def test_dimension_merge_and_compat():
    assert Dimension(3).merge_with(None).value == 3
    assert Dimension(None).merge_with(3).value == 3
    assert Dimension(None).merge_with(None).value is None
    assert Dimension(3).merge_with(3).value == 3
    with pytest.raises(ValueError, match="Dimensions 3 and 4 are not compatible"):
        Dimension(3).merge_with(4)
    assert Dimension(3).is_compatible_with(None)
    assert Dimension(None).is_compatible_with(5)
    assert not Dimension(3).is_compatible_with(4)
    Dimension(3).assert_is_compatible_with(3)
    with pytest.raises(ValueError):
        Dimension(3).assert_is_compatible_with(4)


def test_dimension_helpers_and_pickle():
    d = Dimension(5)
    assert tensor_shape.as_dimension(d) is d
    assert tensor_shape.as_dimension(5) == d
    assert tensor_shape.dimension_value(d) == 5
    assert tensor_shape.dimension_value(7) == 7
    assert tensor_shape.dimension_value(None) is None
    assert pickle.loads(pickle.dumps(d)).value == 5
    assert pickle.loads(pickle.dumps(Dimension(None))).value is None
    assert tensor_shape.dimension_at_index(TensorShape([1, 2]), 1).value == 2
    assert tensor_shape.dimension_at_index(TensorShape(None), 5).value is None


# -- TensorShape construction ---------------------------------------------------------------------


def test_shape_construction_forms():
    assert TensorShape([2, 3]).as_list() == [2, 3]
    assert TensorShape((2, None)).as_list() == [2, None]
    assert TensorShape([Dimension(2), Dimension(None)]).as_list() == [2, None]
    assert TensorShape([np.int32(4)]).as_list() == [4]
    assert TensorShape(3).as_list() == [3]
    assert TensorShape(np.array([1, 2])).as_list() == [1, 2]
    assert TensorShape(x for x in [5, 6]).as_list() == [5, 6]
    assert TensorShape(TensorShape([1, None])).as_list() == [1, None]
    assert TensorShape(None).rank is None
    assert TensorShape([]).rank == 0
    with pytest.raises(ValueError):
        TensorShape([-2])
    with pytest.raises(TypeError):
        TensorShape("ab")
    with pytest.raises(TypeError):
        TensorShape([1.5])


def test_shape_from_proto():
    proto = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2),
             tensor_shape_pb2.TensorShapeProto.Dim(size=-1, name="batch")]
    )
    assert TensorShape(proto).as_list() == [2, None]
    assert TensorShape(tensor_shape_pb2.TensorShapeProto(unknown_rank=True)).rank is None
    assert TensorShape(tensor_shape_pb2.TensorShapeProto()).as_list() == []
    assert tensor_shape.as_shape(proto).as_list() == [2, None]


def test_as_proto():
    proto = TensorShape([2, None, 0]).as_proto()
    assert isinstance(proto, tensor_shape_pb2.TensorShapeProto)
    assert [d.size for d in proto.dim] == [2, -1, 0]
    assert not proto.unknown_rank
    unknown = TensorShape(None).as_proto()
    assert unknown.unknown_rank and len(unknown.dim) == 0
    scalar = TensorShape([]).as_proto()
    assert not scalar.unknown_rank and len(scalar.dim) == 0
    # The wire bytes TF writes for the shape [2, ?].
    assert TensorShape([2, None]).as_proto().SerializeToString() == (
        b"\x12\x02\x08\x02\x12\x0b\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    )


# -- TensorShape queries ------------------------------------------------------------------------


def test_rank_dims_and_elements():
    s = TensorShape([2, None, 4])
    assert s.rank == 3 and s.ndims == 3
    assert [d.value for d in s.dims] == [2, None, 4]
    assert all(isinstance(d, Dimension) for d in s.dims)
    assert not s.is_fully_defined()
    assert s.num_elements() is None
    full = TensorShape([2, 3, 4])
    assert full.is_fully_defined() and full.num_elements() == 24
    assert TensorShape([]).num_elements() == 1
    assert TensorShape([3, 0]).num_elements() == 0
    unknown = TensorShape(None)
    assert unknown.rank is None and unknown.ndims is None and unknown.dims is None
    assert unknown.num_elements() is None and not unknown.is_fully_defined()
    with pytest.raises(ValueError, match=r"as_list\(\) is not defined on an unknown TensorShape"):
        unknown.as_list()
    full.assert_is_fully_defined()
    with pytest.raises(ValueError, match="is not fully defined"):
        s.assert_is_fully_defined()


def test_len_iter_bool():
    s = TensorShape([2, None])
    assert len(s) == 2
    assert [d.value for d in s] == [2, None]
    assert bool(s) and bool(TensorShape([]))
    assert not bool(TensorShape(None))
    with pytest.raises(ValueError, match="Cannot take the length of shape with unknown rank"):
        len(TensorShape(None))
    with pytest.raises(ValueError, match="Cannot iterate over a shape with unknown rank"):
        iter(TensorShape(None))


def test_getitem():
    s = TensorShape([1, None, 3, 4])
    assert isinstance(s[0], Dimension)
    assert s[0] == 1 and s[0].value == 1
    assert s[1].value is None
    assert s[-1].value == 4
    assert s[1:3] == TensorShape([None, 3])
    assert s[::2] == TensorShape([1, 3])
    assert s[:] == s
    assert s[5:] == TensorShape([])
    with pytest.raises(IndexError):
        _ = s[4]


def test_getitem_unknown_rank():
    u = TensorShape(None)
    assert u[3].value is None
    assert u[1:4] == TensorShape([None, None, None])
    assert u[:2] == TensorShape([None, None])
    assert u[1:].rank is None
    assert u[-2:].rank is None
    assert u[:-1].rank is None
    with pytest.raises(ValueError, match="Steps are not yet handled"):
        _ = u[::2]


def test_eq_hash_repr_str():
    assert TensorShape([2, None]) == TensorShape([2, None])
    assert TensorShape([2, None]) == [2, None]
    assert TensorShape([2, 3]) == (2, 3)
    assert TensorShape([2, 3]) != TensorShape([2, 4])
    assert TensorShape([2]) != TensorShape([2, 1])
    assert TensorShape(None) == TensorShape(None)
    assert TensorShape(None) != TensorShape([])
    assert TensorShape([1]) != "ab"
    assert hash(TensorShape([2, None])) == hash(TensorShape((2, None)))
    assert repr(TensorShape([2, None])) == "TensorShape([2, None])"
    assert repr(TensorShape(None)) == "TensorShape(None)"
    assert repr(TensorShape([])) == "TensorShape([])"
    assert str(TensorShape([2, None])) == "(2, None)"
    assert str(TensorShape([5])) == "(5,)"
    assert str(TensorShape([])) == "()"
    assert str(TensorShape(None)) == "<unknown>"


def test_pickle():
    for s in (TensorShape([2, None]), TensorShape(None), TensorShape([])):
        assert pickle.loads(pickle.dumps(s)) == s


# -- combination ---------------------------------------------------------------------------------


def test_merge_with():
    assert TensorShape([2, None]).merge_with([None, 3]) == TensorShape([2, 3])
    assert TensorShape(None).merge_with([1, None]) == TensorShape([1, None])
    assert TensorShape([1, None]).merge_with(None) == TensorShape([1, None])
    assert TensorShape(None).merge_with(None).rank is None
    assert TensorShape([]).merge_with([]) == TensorShape([])
    with pytest.raises(ValueError, match=r"Shapes \(2, 3\) and \(2, 4\) are not compatible"):
        TensorShape([2, 3]).merge_with([2, 4])
    with pytest.raises(ValueError, match=r"Shapes \(2,\) and \(2, 1\) are not compatible"):
        TensorShape([2]).merge_with([2, 1])


def test_is_compatible_with():
    assert TensorShape(None).is_compatible_with([1, 2])
    assert TensorShape([1, 2]).is_compatible_with(None)
    assert TensorShape([None, 2]).is_compatible_with([5, 2])
    assert not TensorShape([None, 2]).is_compatible_with([5, 3])
    assert not TensorShape([1]).is_compatible_with([1, 1])
    assert TensorShape([]).is_compatible_with([])
    assert not TensorShape([]).is_compatible_with([1])
    TensorShape([None]).assert_is_compatible_with([4])
    with pytest.raises(ValueError, match=r"Shapes \(3,\) and \(4,\) are incompatible"):
        TensorShape([3]).assert_is_compatible_with([4])


def test_most_specific_compatible_shape():
    a = TensorShape([1, 2, None, 4])
    assert a.most_specific_compatible_shape([1, 3, 5, 4]) == TensorShape([1, None, None, 4])
    assert a.most_specific_compatible_shape([1]).rank is None
    assert a.most_specific_compatible_shape(None).rank is None
    assert TensorShape(None).most_specific_compatible_shape(a).rank is None


def test_concatenate():
    assert TensorShape([1, 2]).concatenate([None, 3]) == TensorShape([1, 2, None, 3])
    assert TensorShape([1]).concatenate(None).rank is None
    assert TensorShape(None).concatenate([1]).rank is None
    assert TensorShape([1]) + TensorShape([2]) == TensorShape([1, 2])
    assert [0] + TensorShape([2]) == TensorShape([0, 2])


def test_rank_checks():
    s = TensorShape([2, None])
    assert s.with_rank(2) is not None and s.with_rank(2) == s
    assert TensorShape(None).with_rank(3) == TensorShape([None, None, None])
    with pytest.raises(ValueError, match=r"Shape \(2, None\) must have rank 3"):
        s.with_rank(3)
    assert s.with_rank_at_least(1) is s and s.with_rank_at_least(2) is s
    assert TensorShape(None).with_rank_at_least(5).rank is None
    with pytest.raises(ValueError, match=r"Shape \(2, None\) must have rank at least 3"):
        s.with_rank_at_least(3)
    assert s.with_rank_at_most(2) is s
    with pytest.raises(ValueError, match=r"must have rank at most 1"):
        s.with_rank_at_most(1)
    s.assert_has_rank(2)
    TensorShape(None).assert_has_rank(7)
    with pytest.raises(ValueError, match="must have rank 1"):
        s.assert_has_rank(1)
    s.assert_same_rank([1, 1])
    s.assert_same_rank(None)
    with pytest.raises(ValueError, match="must have the same rank"):
        s.assert_same_rank([1])


def test_constructors():
    assert tensor_shape.unknown_shape().rank is None
    assert tensor_shape.unknown_shape(rank=2) == TensorShape([None, None])
    assert tensor_shape.unknown_shape(ndims=1) == TensorShape([None])
    assert tensor_shape.unknown_shape(0) == TensorShape([])
    assert tensor_shape.scalar() == TensorShape([])
    assert tensor_shape.vector(3) == TensorShape([3])
    assert tensor_shape.matrix(2, None) == TensorShape([2, None])
    s = TensorShape([1])
    assert tensor_shape.as_shape(s) is s
    assert tensor_shape.as_shape([1, 2]) == TensorShape([1, 2])
    assert tensor_shape.as_shape(None).rank is None


# -- properties -----------------------------------------------------------------------------------

_dims = st.one_of(st.none(), st.integers(min_value=0, max_value=6))
shapes = st.one_of(st.none(), st.lists(_dims, max_size=5)).map(TensorShape)


@st.composite
def compatible_pairs(draw):
    """Two shapes that describe the same concrete shape with parts forgotten."""
    full = draw(st.lists(st.integers(min_value=0, max_value=6), max_size=5))

    def forget():
        if draw(st.integers(0, 5)) == 0:
            return TensorShape(None)
        return TensorShape([None if draw(st.booleans()) else d for d in full])

    return forget(), forget()


@given(shapes, shapes)
def test_prop_compat_symmetric(a, b):
    assert a.is_compatible_with(b) == b.is_compatible_with(a)


@given(shapes, shapes)
def test_prop_merge_commutative_and_compatible(a, b):
    if a.is_compatible_with(b):
        m1, m2 = a.merge_with(b), b.merge_with(a)
        assert m1 == m2
        assert m1.is_compatible_with(a) and m1.is_compatible_with(b)
    else:
        with pytest.raises(ValueError, match="are not compatible"):
            a.merge_with(b)
        with pytest.raises(ValueError, match="are not compatible"):
            b.merge_with(a)


@given(compatible_pairs())
def test_prop_merge_of_compatible_pair(pair):
    a, b = pair
    assert a.is_compatible_with(b)
    merged = a.merge_with(b)
    assert merged == b.merge_with(a)
    # The merge is at least as specific as either input and merges idempotently.
    assert merged.merge_with(a) == merged
    assert merged.merge_with(b) == merged
    if a.rank is not None and b.rank is not None:
        for m, x, y in zip(merged.as_list(), a.as_list(), b.as_list(), strict=True):
            assert m == (x if x is not None else y)


@given(shapes)
def test_prop_merge_idempotent_and_self_compatible(a):
    assert a.merge_with(a) == a
    assert a.is_compatible_with(a)
    assert a.merge_with(None) == a


@given(shapes, shapes)
def test_prop_most_specific_compatible(a, b):
    m = a.most_specific_compatible_shape(b)
    assert m.is_compatible_with(a) and m.is_compatible_with(b)
    assert m == b.most_specific_compatible_shape(a)


@given(shapes)
def test_prop_proto_round_trip(a):
    data = a.as_proto().SerializeToString()
    parsed = tensor_shape_pb2.TensorShapeProto.FromString(data)
    assert TensorShape(parsed) == a


@given(shapes, shapes)
def test_prop_concatenate_rank(a, b):
    c = a.concatenate(b)
    if a.rank is None or b.rank is None:
        assert c.rank is None
    else:
        assert c.rank == a.rank + b.rank
        assert c[: a.rank] == a and c[a.rank:] == b
