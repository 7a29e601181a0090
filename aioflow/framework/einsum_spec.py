"""Einsum equations as TF 2.21 reads them: "<in>[,<in>]-><out>", one or two inputs, each
subscript a run of one-character labels with at most one ellipsis ("...") standing for
broadcast dimensions. Shared by Einsum's shape function and its kernel, which raise TF's
messages (the kernel's own where it has one, else its shape function's)."""

from __future__ import annotations

from dataclasses import dataclass

ELLIPSIS = "..."


class EquationError(ValueError):
    """An equation TF rejects; the message is TF's."""


@dataclass(frozen=True)
class EinsumSpec:
    """A parsed equation: per input, its labels (None where the ellipsis stands) and
    whether it has an ellipsis; the output likewise."""

    equation: str
    inputs: tuple[tuple, ...]
    output: tuple

    def named(self, i: int) -> int:
        """The number of named labels of input i."""
        return sum(1 for label in self.inputs[i] if label is not None)

    def has_ellipsis(self, labels) -> bool:
        return None in labels


def _labels(subscript: str, equation: str, where: str) -> tuple:
    """The labels of one subscript, None for its ellipsis; TF's error for stray periods."""
    periods = subscript.count(".")
    if periods and (periods != 3 or ELLIPSIS not in subscript):
        raise EquationError(f"Expected at most one ellipsis (...), but found {periods} periods "
                            f"(.) in the {where} subscript: {subscript}")
    out = []
    i = 0
    while i < len(subscript):
        if subscript.startswith(ELLIPSIS, i):
            out.append(None)
            i += 3
        else:
            out.append(subscript[i])
            i += 1
    return tuple(out)


def parse(equation: str) -> EinsumSpec:
    """The equation's labels; TF's errors for a malformed one."""
    parts = equation.split("->")
    if len(parts) != 2:
        raise EquationError(f"Expecting exactly one '->' in einsum equation: {equation}")
    in_subs = parts[0].split(",")
    if len(in_subs) not in (1, 2):
        raise EquationError(f"Expecting 1 or 2 input subscripts in equation '{equation}' but "
                            f"got: {len(in_subs)}")
    inputs = tuple(_labels(s, equation, "input") for s in in_subs)
    output = _labels(parts[1], equation, "output")
    present = {label for labels in inputs for label in labels}
    for label in output:
        if label is not None and label not in present:
            raise EquationError(f"Einsum output subscripts for equation '{equation}' has label "
                                f"'{label}' which is not present in the input subscripts")
    seen = set()
    for label in output:
        if label is not None and label in seen:
            raise EquationError(f"Einsum output subscripts for equation '{equation}' has "
                                f"repeated label '{label}', which aioflow does not support")
        seen.add(label)
    return EinsumSpec(equation, inputs, output)


def output_dims(spec: EinsumSpec, shapes: list) -> list | None:
    """The output's dims (None for unknown ones) from the inputs' dims lists (None for an
    unknown rank): None when the rank itself is unknown."""
    label_dim: dict = {}
    ellipsis_dims: list = []
    for labels, dims in zip(spec.inputs, shapes, strict=False):
        if dims is None:
            if spec.has_ellipsis(labels):
                return None
            continue
        named = [label for label in labels if label is not None]
        if spec.has_ellipsis(labels):
            pos = labels.index(None)
            n_ell = len(dims) - len(named)
            if n_ell < 0:
                raise EquationError(f"Shape must be rank at least {len(named)} but is rank "
                                    f"{len(dims)} for equation: {spec.equation}")
            ell = dims[pos:pos + n_ell]
            named_dims = dims[:pos] + dims[pos + n_ell:]
            ellipsis_dims = _broadcast(ellipsis_dims, ell)
        else:
            if len(dims) != len(named):
                raise EquationError(f"Shape must be rank {len(named)} but is rank {len(dims)} "
                                    f"for equation: {spec.equation}")
            named_dims = dims
        for label, d in zip(named, named_dims, strict=False):
            old = label_dim.get(label)
            if old is not None and d is not None and old != d:
                raise EquationError(f"Dimensions must be equal, but are {old} and {d} for "
                                    f"equation: {spec.equation}")
            if old is None:
                label_dim[label] = d
    out = []
    for label in spec.output:
        if label is None:
            out.extend(ellipsis_dims)
        else:
            out.append(label_dim.get(label))
    return out


def _broadcast(a: list, b: list) -> list:
    """Two ellipsis dims lists broadcast (None: unknown)."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b, strict=False):
        if x == 1:
            out.append(y)
        elif y == 1 or y == x or y is None:
            out.append(x)
        elif x is None:
            out.append(y)
        else:
            raise EquationError(f"Incompatible broadcasting dimensions: {x} vs {y}")
    return out
