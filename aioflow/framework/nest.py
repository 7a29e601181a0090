"""Nested structures as tf.nest sees them: lists, tuples, namedtuples and dicts nest (dict
values in sorted-key order); anything else (a Tensor, a TensorArray) is a leaf. Used by
control flow, map_fn & co., printing, and the dataset and gradient builders."""

from __future__ import annotations


def _is_namedtuple(x) -> bool:
    return isinstance(x, builtins_tuple) and hasattr(x, "_fields")


builtins_tuple = type(())


def is_nested(x) -> bool:
    """Whether `x` is a list, tuple or dict (a TensorArray is a leaf)."""
    return isinstance(x, (list, builtins_tuple, dict))


def _children(x) -> list:
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(x) -> list:
    """The leaves of `x` in order (dict values by sorted key, as tf.nest)."""
    if not is_nested(x):
        return [x]
    out: list = []
    for child in _children(x):
        out.extend(flatten(child))
    return out


def _rebuild(template, children: list):
    if isinstance(template, dict):
        by_key = dict(zip(sorted(template), children, strict=True))
        try:
            return type(template)((k, by_key[k]) for k in template)
        except TypeError:
            return {k: by_key[k] for k in template}
    if _is_namedtuple(template):
        return type(template)(*children)
    if isinstance(template, builtins_tuple):
        return builtins_tuple(children)
    return list(children)


def pack_sequence_as(structure, flat_sequence):
    """`flat_sequence` packed into the nesting of `structure`."""
    flat_sequence = list(flat_sequence)
    if not is_nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == "
                             f"{len(flat_sequence)} > 1")
        return flat_sequence[0]
    pos = [0]

    def pack(s):
        if not is_nested(s):
            v = flat_sequence[pos[0]]
            pos[0] += 1
            return v
        return _rebuild(s, [pack(c) for c in _children(s)])

    n = len(flatten(structure))
    if n != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {n} elements, but "
                         f"flat_sequence had {len(flat_sequence)} elements.")
    return pack(structure)


def _describe_structure(x) -> str:
    return f"type={type(x).__name__} str={x}"


class _Dot:
    """A leaf printed as "." (TF's "Entire ... structure" lines)."""

    def __repr__(self) -> str:
        return "."


def _same_sequence_type(a, b) -> bool:
    """tf.nest's check_types: mappings match mappings; namedtuples of one name and fields
    match; list subtypes match lists; otherwise the types must be equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        return True
    if _is_namedtuple(a) and _is_namedtuple(b):
        return type(a).__name__ == type(b).__name__ and a._fields == b._fields
    if isinstance(a, list) and isinstance(b, list):
        return True
    return type(a) is type(b)


def _structure_mismatch(a, b, check_types: bool):
    """(error class, TF's "More specifically" reason) for the first mismatch, or None."""
    if is_nested(a) != is_nested(b):
        seq, other = (a, b) if is_nested(a) else (b, a)
        return ValueError, (f'Substructure "{_describe_structure(seq)}" is a sequence, while '
                            f'substructure "{_describe_structure(other)}" is not')
    if not is_nested(a):
        return None
    if check_types and not _same_sequence_type(a, b):
        return TypeError, (f"The two namedtuples don't have the same sequence type. First "
                           f"structure {_describe_structure(a)} has type {type(a).__name__}, "
                           f"while second structure {_describe_structure(b)} has type "
                           f"{type(b).__name__}")
    if isinstance(a, dict) and isinstance(b, dict) and sorted(a) != sorted(b):
        return ValueError, (f"The two dictionaries don't have the same set of keys. First "
                            f"structure has keys {_describe_structure(sorted(a))}, while "
                            f"second structure has keys {_describe_structure(sorted(b))}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        return ValueError, (f"The two structures don't have the same number of elements. "
                            f"First structure: {_describe_structure(a)}. Second structure: "
                            f"{_describe_structure(b)}")
    for x, y in zip(ca, cb, strict=True):
        found = _structure_mismatch(x, y, check_types)
        if found is not None:
            return found
    return None


def assert_same_structure(a, b, check_types: bool = True) -> None:
    """ValueError (nesting, lengths, dict keys) or TypeError (sequence types) unless `a`
    and `b` nest the same way; the message is tf.nest's."""
    found = _structure_mismatch(a, b, check_types)
    if found is None:
        return
    error, reason = found
    dots = [pack_sequence_as(s, [_Dot()] * len(flatten(s))) for s in (a, b)]
    raise error(f"The two structures don't have the same nested structure.\n\n"
                f"First structure: {_describe_structure(a)}\n\n"
                f"Second structure: {_describe_structure(b)}\n\n"
                f"More specifically: {reason}\n"
                f"Entire first structure:\n{dots[0]}\n"
                f"Entire second structure:\n{dots[1]}")


def map_structure(fn, *structures):
    """`fn` applied leaf-wise over structures of the same nesting."""
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats, strict=True)])
