"""summarize(value): a value as an error message may quote it, cut as NumPy's repr cuts a
large array ("[0, 1, 2, ..., 9997, 9998, 9999]"), so that a message stays readable and
short whatever the user passed (a 1000x64 nested list is a few hundred characters)."""

from __future__ import annotations

import reprlib

import numpy as np

#: Arrays of more elements than this are summarized (NumPy's default print threshold).
THRESHOLD = 1000
_MAX_CHARS = 300

_short = reprlib.Repr()
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 6
_short.maxlevel = 3
_short.maxstring = _short.maxother = 80
_short.maxlong = 40


def summarize(value) -> str:
    """repr(value), summarized: arrays as NumPy's repr does (edge items and "..."), nested
    lists through an array of them, anything else cut by reprlib."""
    if isinstance(value, np.ndarray):
        return _cut(np.array_repr(value))
    if isinstance(value, (list, tuple)):
        try:
            array = np.asarray(value, dtype=object)
        except ValueError:  # ragged
            array = None
        if array is not None and array.size > THRESHOLD:
            text = np.array2string(array, threshold=THRESHOLD, separator=", ",
                                   formatter={"all": _short.repr})
            return _cut(text)
    try:
        return _cut(_short.repr(value))
    except ValueError:  # an int too long for str() (sys.get_int_max_str_digits)
        return f"<{type(value).__name__} too large to print>"


def _cut(text: str) -> str:
    if len(text) <= _MAX_CHARS:
        return text
    half = _MAX_CHARS // 2
    return f"{text[:half]}...{text[-half:]}"
