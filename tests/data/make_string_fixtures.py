"""Make the string-op fixtures of tests/data with real TensorFlow (2.21, CPU).

Run from the project root with a throwaway TensorFlow install (never an aioflow
dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfenv/bin/python tests/data/make_string_fixtures.py

It writes (deterministically):

* ``string_kernels.json`` -- one case per entry: ``op``, ``inputs`` (a list of tensors;
  a list of tensors for a list input such as StringJoin's), ``attrs`` and either
  ``outputs`` (TF's values) or ``error`` (TF's class name and message, as the kernel
  wrote it: eager's ``{{function_node ...}}`` prefix and `` [Op:...]`` suffix removed).
* ``string_hash_buckets.json`` -- strings of every length 0..200 (ASCII, random bytes,
  unicode) with TF's ``Fingerprint64`` (``tf.fingerprint``, little-endian) and the
  buckets of ``StringToHashBucketFast`` / ``StringToHashBucketStrong``.
* ``string_saver_graph.pb`` / ``.json`` -- a GraphDef with the checkpoint nodes TF's
  sharded Saver writes (StringJoin, ShardedFilename, ShardedFilespec, SaveV2, RestoreV2,
  MergeV2Checkpoints) over constants, and the values TF fetched from its string nodes.
* ``string_opdefs.json`` -- TF's OpDefs (text format, without docs) of the string and
  checkpoint ops aioflow registers.

A tensor is ``{"dtype": name, "shape": [...], "values": [flat values]}``; a string value
is its bytes decoded as UTF-8 with ``surrogateescape`` (so invalid UTF-8 survives JSON);
floats are JSON numbers or the strings "nan", "inf", "-inf".
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

OPDEF_NAMES = [
    "StringJoin", "ReduceJoin", "Substr", "StringLength", "AsString", "StringToNumber",
    "RegexReplace", "StaticRegexReplace", "StaticRegexFullMatch", "RegexFullMatch",
    "StringSplitV2", "StringStrip", "StringUpper", "StringLower", "StringToHashBucketFast",
    "StringToHashBucketStrong", "EncodeBase64", "DecodeBase64", "SaveV2", "RestoreV2",
    "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec", "StringFormat",
]


def S(*values, shape=None):
    """A string tensor (str items are UTF-8 encoded)."""
    arr = np.empty(0, dtype=object) if not values else np.array(values, dtype=object)
    flat = [v.encode() if isinstance(v, str) else v for v in arr.ravel().tolist()]
    return ("string", list(arr.shape) if shape is None else shape, flat)


def T(dtype, values):
    arr = np.asarray(values)
    return (dtype, list(arr.shape), arr.ravel().tolist())


def s(value):
    """A string scalar."""
    return S(value, shape=[])


def i32(v):
    return T("int32", v)


def i64(v):
    return T("int64", v)


# (op, [inputs...] (a list for a list input), attrs)
CASES = [
    # -- StringJoin
    ("StringJoin", [[S("a", "b"), S("c", "d")]], {}),
    ("StringJoin", [[S("a", "b"), s("x")]], {"separator": "-"}),
    ("StringJoin", [[s("x"), s("y"), s("z")]], {"separator": ", "}),
    ("StringJoin", [[S("é", "ü"), S("日", "本")]], {"separator": "→"}),
    ("StringJoin", [[S(), s("x")]], {}),
    ("StringJoin", [[S(["a"], ["b"]), S("c", "d")]], {}),
    ("StringJoin", [[S("a", "b"), S("c", "d", "e")]], {}),
    ("StringJoin", [[S(["a", "b"], ["c", "d"]), s("!"), S(["1", "2"], ["3", "4"])]], {}),
    # -- ReduceJoin
    *[("ReduceJoin", [S(["a", "b", "c"], ["d", "e", "f"]), i32(ax)], {"separator": sep,
                                                                    "keep_dims": kd})
      for ax, sep, kd in [(0, "", False), (1, "-", False), (-1, "", True), ([0, 1], "|", False),
                          ([1, 0], "", True), ([], "", False), (-2, "", False)]],
    ("ReduceJoin", [S(["a", "b"], ["c", "d"]), i32(2)], {}),
    ("ReduceJoin", [S(["a", "b"], ["c", "d"]), i32(-3)], {}),
    ("ReduceJoin", [S(["a", "b"], ["c", "d"]), i32([0, 0])], {}),
    ("ReduceJoin", [S(["a", "b"], ["c", "d"]), i32([1, -1])], {}),
    ("ReduceJoin", [S("é", "日本"), i32(0)], {"separator": "·"}),
    ("ReduceJoin", [S(shape=[0, 2]), i32(0)], {"separator": "-"}),
    ("ReduceJoin", [S(shape=[0, 2]), i32(1)], {"separator": "-"}),
    ("ReduceJoin", [s("abc"), i32([])], {}),
    ("ReduceJoin", [s("abc"), i32(0)], {}),
    ("ReduceJoin", [S(["a", "b"], ["c", "d"]), i32([[0]])], {}),
    # -- Substr, BYTE
    ("Substr", [S("Hello", "World"), i32(1), i32(3)], {}),
    ("Substr", [S("Hello", "World"), i32([0, 2]), i32([5, 1])], {}),
    ("Substr", [S("Hello"), i32(-3), i32(2)], {}),
    ("Substr", [S("Hello"), i32(-5), i32(100)], {}),
    ("Substr", [S("Hello"), i32(5), i32(2)], {}),
    ("Substr", [S("Hello"), i32(6), i32(2)], {}),
    ("Substr", [S("Hello"), i32(-6), i32(2)], {}),
    ("Substr", [S("Hello", "Hi"), i32([1, 3]), i32([1, 1])], {}),
    ("Substr", [S("Hello"), i32(1), i32(-1)], {}),
    ("Substr", [s("Hello"), i32(1), i32(2)], {}),
    ("Substr", [S(["ab", "cd"], ["ef", "gh"]), i32([0, 1]), i32([1, 1])], {}),
    ("Substr", [S(["ab", "cd"], ["ef", "gh"]), i32([[0], [1]]), i32([[1], [1]])], {}),
    ("Substr", [S("abc", "def"), i32([0, 1, 2]), i32([1, 1, 1])], {}),
    ("Substr", [S("abc", "def"), i32([0, 1]), i32([1, 1, 1])], {}),
    ("Substr", [S("abc", "def"), i32([0, 1]), i32(1)], {}),
    ("Substr", [S([["ab"]]), i32([[[0, 1]]]), i32([[[1, 1]]])], {}),
    ("Substr", [s("abc"), i32([0, 1, 2]), i32([1, 1, 1])], {}),
    ("Substr", [S("héllo"), i64(1), i64(2)], {}),
    # -- Substr, UTF8_CHAR
    ("Substr", [S("héllo", "日本語"), i32(1), i32(2)], {"unit": "UTF8_CHAR"}),
    ("Substr", [S("héllo"), i32(-2), i32(5)], {"unit": "UTF8_CHAR"}),
    ("Substr", [S("日本語"), i32(4), i32(1)], {"unit": "UTF8_CHAR"}),
    ("Substr", [S("日本語"), i32(3), i32(1)], {"unit": "UTF8_CHAR"}),
    ("Substr", [S("日本語"), i32(-4), i32(1)], {"unit": "UTF8_CHAR"}),
    ("Substr", [S(b"a\xffb"), i32(1), i32(1)], {"unit": "UTF8_CHAR"}),
    ("Substr", [S(b"a\xe6\x97b"), i32(0), i32(2)], {"unit": "UTF8_CHAR"}),
    # -- StringLength
    ("StringLength", [S("héllo", "", "日本", "a")], {}),
    ("StringLength", [S("héllo", "", "日本", "a")], {"unit": "UTF8_CHAR"}),
    ("StringLength", [S(b"a\xff\x80b", b"\xe6\x97")], {"unit": "UTF8_CHAR"}),
    ("StringLength", [s("日本")], {"unit": "UTF8_CHAR"}),
    # -- AsString
    ("AsString", [i32([1, -2, 0, 2147483647])], {}),
    ("AsString", [i32([1, -2, 0])], {"width": 5}),
    ("AsString", [i32([1, -2, 0])], {"width": 5, "fill": "0"}),
    ("AsString", [i32([1, -2, 0])], {"width": 5, "fill": "-"}),
    ("AsString", [i32([1, -2, 0])], {"width": 5, "fill": "x"}),
    ("AsString", [i32([1, -2, 0])], {"width": 5, "fill": "ab"}),
    ("AsString", [i32([1])], {"precision": 2}),
    ("AsString", [i32([1])], {"scientific": True}),
    ("AsString", [i32([1])], {"shortest": True}),
    ("AsString", [T("int64", [-(2**63), 2**63 - 1])], {}),
    ("AsString", [T("uint64", [2**64 - 1])], {}),
    ("AsString", [T("int8", [-128, 127])], {}),
    ("AsString", [T("uint8", [255])], {}),
    ("AsString", [T("bool", [True, False])], {}),
    ("AsString", [T("float32", [3.14159, 1e10, -0.0, 1e-7, 0.1, 123456789.0])], {}),
    ("AsString", [T("float64", [3.14159, 1e10, -0.0, 1e-7, 0.1, 1e300])], {}),
    ("AsString", [T("float64", [3.14159, 1e10, -0.0, 1e-7, 0.1])], {"precision": 2}),
    ("AsString", [T("float64", [3.14159, 1e10, -0.0, 1e-7, 0.1])], {"scientific": True}),
    ("AsString", [T("float64", [3.14159, 1e10, -0.0, 1e-7, 0.1, 100000.0, 1e6])],
     {"shortest": True}),
    ("AsString", [T("float32", [3.14159, 1e10, 0.1])], {"shortest": True, "precision": 3}),
    ("AsString", [T("float64", [3.14159, -2.5])],
     {"scientific": True, "precision": 3, "width": 14}),
    ("AsString", [T("float64", [3.14159, -2.5])], {"width": 12, "fill": "0"}),
    ("AsString", [T("float64", [1.0])], {"scientific": True, "shortest": True}),
    ("AsString", [T("float32", [float("nan"), float("inf"), float("-inf"), -float("nan")])], {}),
    ("AsString", [T("float16", [1.5, 65504.0])], {}),
    ("AsString", [T("complex64", [1 + 2j, -0.5j])], {}),
    ("AsString", [T("complex128", [1 + 2j])], {"precision": 1}),
    ("AsString", [S("a", "é")], {}),
    ("AsString", [T("bool", [True])], {"width": 6}),
    ("AsString", [T("int32", [7])], {"width": 3, "fill": " "}),
    ("AsString", [T("float64", [2.0])], {"width": 6, "fill": "-"}),
    ("AsString", [T("float64", [2.0])], {"width": 6, "fill": "+"}),
    ("AsString", [T("float64", [2.0])], {"width": 6, "fill": "#"}),
    # -- StringToNumber
    ("StringToNumber", [S("1.5", " 2", "1e3", "-7", "nan", "inf", "-inf", "+3.25", "1e40",
                          "0x10", "1.5 ", "  -0", ".5", "5.", "INF", "NaN", "infinity",
                          "1e-50")], {}),
    ("StringToNumber", [S("1.5", " 2", "1e3", "-7", "nan", "inf", "1e300", "0x1p3", "1e400",
                          "1e-400")], {"out_type": "float64"}),
    ("StringToNumber", [S("1", "-2", " 3", "4 ", "+5", "2147483647", "-2147483648", "007")],
     {"out_type": "int32"}),
    ("StringToNumber", [S("9223372036854775807", "-9223372036854775808", "12")],
     {"out_type": "int64"}),
    ("StringToNumber", [S("4294967295", "0")], {"out_type": "uint32"}),
    ("StringToNumber", [S("18446744073709551615")], {"out_type": "uint64"}),
    *[("StringToNumber", [S("1", bad)], {"out_type": out})
      for out, bad in [("float32", "abc"), ("float32", ""), ("float32", "1.5x"),
                       ("float32", "1,5"), ("float32", "日本"), ("int32", "1.5"),
                       ("int32", "2147483648"), ("int32", ""), ("int32", "0x10"),
                       ("int64", "9223372036854775808"), ("int32", "- 1"),
                       ("uint32", "-1"), ("uint32", "4294967296"), ("float64", "1 2"),
                       ("int32", "١٢")]],
    # -- StaticRegexReplace / RegexReplace
    *[("StaticRegexReplace", [S(*inp)], {"pattern": p, "rewrite": r, "replace_global": g})
      for inp, p, r, g in [
          (("aaa bab", "xyz"), "a+", "X", True),
          (("aaa bab", "xyz"), "a+", "X", False),
          (("hello world", "ab cd"), r"(\w+) (\w+)", r"\2 \1", True),
          (("hello world",), r"(\w+)", r"<\0>", True),
          (("hello world",), r"o", r"\\", True),
          (("abxd",), "x*", "-", True),
          (("abc",), "", "-", True),
          (("日本語",), ".", "[\\0]", True),
          (("日本語", "día"), "本|í", "_", True),
          (("line1\nline2\n",), "$", "E", True),
          (("line1\nline2\n",), "(?m)$", "E", True),
          (("a1٣b",), r"\d", "#", True),
          (("a_é b",), r"\w", "#", True),
          (("a\vb\tc",), r"\s", "#", True),
          (("aBc",), "[[:upper:]]", "#", True),
          (("aBc1",), "[^[:alpha:]]", "#", True),
          (("aBc",), "(?i)b", "#", True),
          (("abc",), "(?P<x>b)", r"[\1]", True),
          (("abc",), "(?<x>b)", r"[\1]", True),
          (("a.b*c",), r"\Q.b*\E", "#", True),
          (("abc",), r"c\z", "#", True),
          (("ab",), r"(a)|(b)", r"[\1\2]", True),
          ((b"a\xffb",), ".", "#", True),
          (("aaa",), "a{2}", "#", True),
          (("abab",), "(ab)+?", "#", True),
          (("a\nb",), "(?s)a.b", "#", True),
          (("a\nb",), "a.b", "#", True),
          (("ABC",), "[A-Z]", r"\0\0", False),
          (("tab",), "a", "\t", True),
      ]],
    *[("StaticRegexReplace", [S("abc")], {"pattern": p, "rewrite": r})
      for p, r in [("(a", "x"), ("a)", "x"), ("[a", "x"), ("a**", "x"), ("(?=a)", "x"),
                   ("(?!a)", "x"), ("(?<=a)b", "x"), ("(?<!a)b", "x"), (r"(a)\1", "x"),
                   (r"a\Z", "x"), ("(a)", r"\2"), ("a", r"\x"), ("a", "\\"),
                   ("(?P<1a>b)", "x"), ("x{2,1}", "x"), ("a{1001}", "x"), (r"\pL", "x"),
                   (r"\p{Greek}", "x"), ("[[:foo:]]", "x"), ("(?P=n)", "x"), ("*a", "x"),
                   ("a++", "x"), (r"\8", "x"), ("[z-a]", "x"), ("(?i", "x"), ("a|*", "x"),
                   (r"\C", "x"), ("(?u)a", "x")]],
    # RE2 syntax and semantics that Python's `re` spells or means differently
    *[("StaticRegexReplace", [S(*inp)], {"pattern": p, "rewrite": r, "replace_global": g})
      for inp, p, r, g in [
          (("é foo_x foo", "foo"), r"\bfoo\b", "#", True),
          (("éa ab",), r"\Ba", "#", True),
          (("a1 \v٣",), r"[\d\s]", "#", True),
          (("a1\v٣",), r"[^\d]", "#", True),
          (("a1\v٣",), r"[\D]", "#", True),
          (("a \v",), r"[\S]", "#", True),
          (("a \v",), r"\S", "#", True),
          (("aeA",), r"\x{65}|\101", "#", True),
          (("a{,2}aa",), "a{,2}", "#", True),
          (("aaaa",), "a{2,}", "#", True),
          (("é É",), "(?i)É", "#", True),
          (("ab AB c C",), "a(?i)b|c", "#", True),
          (("aaa",), "(?U)a+", "#", True),
          (("aaa",), "(?U)a+?", "#", True),
          (("xYz xyz",), "x(?i:Y)z", "#", True),
          (("a1b",), "[[:^alpha:]]", "#", True),
          (("a1b",), "[^[:^digit:]]", "#", True),
          (("aB1٣é",), r"\pN", "#", True),
          (("aB1٣É",), r"\p{Lu}", "#", True),
          (("aB1 ",), r"\PL", "#", True),
          (("aB1٣",), r"[\p{Lu}\d]", "#", True),
          (("a\nb",), "(?s).", "#", True),
          (("a\na\n",), "a$", "#", True),
          (("a\na\n",), "(?m)a$", "#", True),
          (("a\na",), "(?m)^a", "#", True),
          (("日本",), "x*", "-", True),
          (("日本",), "", "-", False),
          (("abc",), "(x)?b", r"[\1]", True),
          (("abc",), "b", r"\\1", True),
          (("abc",), "(b)", r"<\1\x\1>", True),
          (("abc",), "(b)", r"<\1\x\1>", False),
          (("bbb",), "(a*)*", "#", True),
          (("a]b-c",), "[]a]", "#", True),
          (("a]b-c",), "[^]a]", "#", True),
          (("a]b-c",), "[a-]", "#", True),
          (("a[b&c~",), r"[\[&~]", "#", True),
          (("ab",), "a|", "#", True),
          (("ab",), "()", "#", True),
          (("a.b",), r"\.", r"\0\0", True),
          (("a\tb",), r"\t", "T", True),
          (("aaa",), "a{1000}", "#", True),
          (("ab",), "(?P<n>a)(?P<n>b)", "#", True),
          (("aaa",), "^*a", "#", True),
          (("a+b",), r"a\+b", "#", True),
          (("abc",), "(?i)(?-i)B", "#", True),
          (("AbC",), "(?i:a)(b)(?-i:C)", r"\1", True),
      ]],
    *[("StaticRegexFullMatch", [S(*inp)], {"pattern": p})
      for inp, p in [(("foo bar",), r"\w+\s\w+"), (("é",), r"\w"), (("a\n",), r"a\z"),
                     (("aXb",), "a(?i)xb"), (("ab",), "(?U)a.*"), (("",), "(a|)"),
                     (("a",), "(?i)A|b")]],
    *[("StaticRegexReplace", [S("abc")], {"pattern": p, "rewrite": "x"})
      for p in [r"\e", r"\G", r"\u0041", r"\x{110000}", r"\xZ", "(?#c)a", "(?P>a)",
                "a{2}{3}", "a{2}*", "a*{2}", "(?i-)a", "(?-)a", "[[:alpha:]", "a\\",
                "(?P<a", "(?P<>a)", "(?P<a-b>a)", r"[a-\d]", "[a"]],
    ("RegexReplace", [S("aaa bab", "xyz"), s("a+"), s("X")], {}),
    ("RegexReplace", [S("aaa bab", "xyz"), s("a+"), s("X")], {"replace_global": False}),
    ("RegexReplace", [S("hello world"), s(r"(\w+) (\w+)"), s(r"\2 \1")], {}),
    ("RegexReplace", [S("abc"), s("(a"), s("x")], {}),
    ("RegexReplace", [S("abc"), S("a", "b"), s("x")], {}),
    ("RegexReplace", [S("abc"), s("a"), S("x", "y")], {}),
    ("RegexReplace", [S("abc"), s("(a)"), s(r"\3")], {}),
    ("RegexReplace", [s("abc"), s("b"), s("X")], {}),
    # -- StaticRegexFullMatch / RegexFullMatch
    *[("StaticRegexFullMatch", [S(*inp)], {"pattern": p})
      for inp, p in [(("abc", "ab", "abcd", ""), "ab.?"), (("ab",), "a|ab"),
                     (("abc\n",), "abc$"), (("abc\n",), "abc"), (("日本",), ".."),
                     (("日本",), "......"), (("A1",), r"[[:alpha:]]\d"),
                     (("x",), "(?=x)x"), (("x",), "x("), (("٣",), r"\d"),
                     ((b"\xff",), "."), (("Ab",), "(?i)aB")]],
    ("RegexFullMatch", [S("abc", "ab"), s("ab.?")], {}),
    ("RegexFullMatch", [S("abc"), S("a", "b")], {}),
    ("RegexFullMatch", [S("abc"), s("[")], {}),
    # -- StringSplitV2
    ("StringSplitV2", [S("1<>2<><>3", "4<>5", ""), s("<>")], {}),
    ("StringSplitV2", [S("1<>2<><>3", "4<>5"), s("<>")], {"maxsplit": 1}),
    ("StringSplitV2", [S("  a b\tc\n ", "", " ", "x  y"), s("")], {}),
    ("StringSplitV2", [S("  a b\tc\n ", "a  b  c "), s("")], {"maxsplit": 1}),
    ("StringSplitV2", [S("a\vb\fc\rd"), s("")], {}),
    ("StringSplitV2", [S("a,b,", ",c"), s(",")], {"maxsplit": 0}),
    ("StringSplitV2", [S("日,本,語"), s(",")], {"maxsplit": -5}),
    ("StringSplitV2", [S("a\u00a0b\u3000c"), s("")], {}),
    ("StringSplitV2", [S(), s(",")], {}),
    ("StringSplitV2", [S(["a,b"], ["c"]), s(",")], {}),
    ("StringSplitV2", [s("a,b"), s(",")], {}),
    ("StringSplitV2", [S("a,b"), S(",", ";")], {}),
    # -- StringStrip, StringUpper, StringLower
    ("StringStrip", [S(" \t a b \n\v\f\r", "", "x", "\u00a0y\u00a0")], {}),
    ("StringStrip", [s("  z ")], {}),
    ("StringUpper", [S("abc é ß ǆ", "Hello")], {}),
    ("StringUpper", [S("abc é ß ǆ ﬁ", "Hello")], {"encoding": "utf-8"}),
    ("StringLower", [S("ABC É İ Σ ǅ", "Hello")], {}),
    ("StringLower", [S("ABC É İ ΟΔΟΣ ǅ", "Hello")], {"encoding": "utf-8"}),
    ("StringUpper", [S(b"a\xffb")], {"encoding": "utf-8"}),
    ("StringUpper", [S("a")], {"encoding": "latin-1"}),
    ("StringLower", [S("A")], {"encoding": "UTF-8"}),
    # -- hash buckets
    ("StringToHashBucketFast", [S(["", "a"], ["hello", "日本"])], {"num_buckets": 10}),
    ("StringToHashBucketStrong", [S("", "a", "hello")], {"num_buckets": 10, "key": [1, 2]}),
    ("StringToHashBucketStrong", [S("a")], {"num_buckets": 10, "key": [1]}),
    # -- base64
    ("EncodeBase64", [S("", "a", "ab", "abc", "abcd", b"\xfb\xff\xfe", "日本")], {}),
    ("EncodeBase64", [S("", "a", "ab", "abc", "abcd", b"\xfb\xff\xfe")], {"pad": True}),
    ("DecodeBase64", [S("", "YQ", "YQ==", "YWI", "YWI=", "YWJj", "-_-_", "5pel5pys",
                        "YWJjZA", "YWJjZA==", "YR", "YWJ=")], {}),
    *[("DecodeBase64", [S("YQ", bad)], {})
      for bad in ["Y", "YWJjZ", "YQ=", "YQ===", "Y===", "+/+/", "YW Jj", "YQ==YQ==", "=YQ",
                  "YW=j", "é", "YWJjZ=="]],
    # -- ShardedFilename / ShardedFilespec
    ("ShardedFilename", [s("/tmp/ckpt"), i32(3), i32(10)], {}),
    ("ShardedFilename", [s("a"), i32(123456), i32(-1)], {}),
    ("ShardedFilename", [S("a", "b"), i32(0), i32(1)], {}),
    ("ShardedFilename", [s("a"), i32([0]), i32(1)], {}),
    ("ShardedFilename", [s("a"), i32(0), i32([1])], {}),
    ("ShardedFilespec", [s("/tmp/ckpt"), i32(7)], {}),
    ("ShardedFilespec", [S("a"), i32(7)], {}),
    ("ShardedFilespec", [s("a"), i32([7])], {}),
]


def encode_value(dtype: str, v):
    if dtype == "string":
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, complex):
        return [encode_value("float64", v.real), encode_value("float64", v.imag)]
    if isinstance(v, float) and not math.isfinite(v):
        return ("-" if math.copysign(1.0, v) < 0 else "") + str(abs(v))
    return v


def tensor_json(arr: np.ndarray, dtype_name: str) -> dict:
    arr = np.asarray(arr)
    flat = arr.ravel().tolist()
    return {"dtype": dtype_name, "shape": list(arr.shape),
            "values": [encode_value(dtype_name, v) for v in flat]}


def input_json(spec) -> dict:
    dtype, shape, flat = spec
    return {"dtype": dtype, "shape": shape, "values": [encode_value(dtype, v) for v in flat]}


def make_tf_tensor(tf, spec):
    dtype, shape, flat = spec
    if dtype == "string":
        arr = np.array(flat, dtype=object).reshape(shape)
        return tf.constant(arr, dtype=tf.string)
    if dtype.startswith("complex"):
        return tf.constant(np.array(flat, dtype=dtype).reshape(shape))
    return tf.constant(np.array(flat, dtype=dtype).reshape(shape))


_PREFIX = re.compile(r"^\{\{function_node [^}]*\}\} ")
_SUFFIX = re.compile(r" \[Op:\w+\]( name: .*)?$", re.S)


def run_case(tf, op, inputs, attrs):
    od = tf.raw_ops.__dict__[op]
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(op)
    kwargs = {}
    for arg, spec in zip(op_def.input_arg, inputs, strict=True):
        if isinstance(spec, list):
            kwargs[arg.name] = [make_tf_tensor(tf, t) for t in spec]
        else:
            kwargs[arg.name] = make_tf_tensor(tf, spec)
    for k, v in attrs.items():
        if k == "out_type":
            v = tf.as_dtype(v)
        kwargs[k] = v
    try:
        out = od(**kwargs)
    except Exception as e:  # noqa: BLE001  (recorded for the tests)
        msg = getattr(e, "message", str(e))
        msg = _SUFFIX.sub("", _PREFIX.sub("", msg))
        return {"error": {"class": type(e).__name__, "message": msg}}
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return {"outputs": [tensor_json(o.numpy(), o.dtype.name) for o in outs]}


def make_kernel_cases(tf):
    out = []
    for op, inputs, attrs in CASES:
        entry = {"op": op,
                 "inputs": [[input_json(t) for t in spec] if isinstance(spec, list)
                            else input_json(spec) for spec in inputs],
                 "attrs": attrs}
        entry.update(run_case(tf, op, inputs, attrs))
        out.append(entry)
    return out


def hash_strings() -> list[bytes]:
    rng = random.Random(1234)
    out = []
    for n in range(201):
        out.append(bytes(rng.randrange(32, 127) for _ in range(n)))
        out.append(bytes(rng.randrange(256) for _ in range(n)))
    for n in range(0, 120, 7):
        out.append("".join(rng.choice("éü日本語😀ß→ab") for _ in range(n)).encode())
    out += [b"", b"\x00", b"\x00" * 64, b"\xff" * 65, b"a" * 1000, b"hello", "日本".encode()]
    return out


def make_hash_fixture(tf) -> dict:
    strings = hash_strings()
    t = tf.constant(np.array(strings, dtype=object))
    fp = tf.fingerprint(tf.reshape(t, [-1, 1]), method="farmhash64").numpy()
    fps = [int.from_bytes(bytes(row), "little") for row in fp]
    fast = {str(n): tf.raw_ops.StringToHashBucketFast(input=t, num_buckets=n).numpy().tolist()
            for n in (1, 7, 1000, 2**31 - 1, 2**63 - 1)}
    strong = {str(n): tf.raw_ops.StringToHashBucketStrong(input=t, num_buckets=n,
                                                          key=[12345, 2**62 + 99]).numpy()
              .tolist() for n in (7, 2**63 - 1)}
    return {"strings": [b.hex() for b in strings], "fingerprint64": [str(f) for f in fps],
            "fast": fast, "strong_key": [12345, 2**62 + 99], "strong": strong}


def make_opdefs() -> dict:
    from google.protobuf import text_format
    from tensorflow.python.framework import op_def_registry

    out = {}
    for name in OPDEF_NAMES:
        op_def = op_def_registry.get(name)
        op_def.ClearField("summary")
        op_def.ClearField("description")
        for a in list(op_def.input_arg) + list(op_def.output_arg):
            a.ClearField("description")
        for a in op_def.attr:
            a.ClearField("description")
        out[name] = text_format.MessageToString(op_def, as_one_line=True)
    return out


def make_saver_graph(tf):
    """The checkpoint nodes of a sharded Saver, over constants (no variables)."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        prefix = v1.placeholder_with_default("/tmp/model.ckpt", [], name="save/Const")
        tmp = tf.strings.join([prefix, "_temp/part"], name="save/StringJoin")
        num = tf.constant(2, name="save/num_shards")
        shard = tf.constant(0, name="save/ShardedFilename/shard")
        fname = tf.raw_ops.ShardedFilename(basename=tmp, shard=shard, num_shards=num,
                                           name="save/ShardedFilename")
        w = tf.constant([1.0, 2.0], name="w")
        save = tf.raw_ops.SaveV2(prefix=fname, tensor_names=["w"], shape_and_slices=[""],
                                 tensors=[w], name="save/SaveV2")
        with tf.control_dependencies([save]):
            pack = tf.stack([fname], name="save/MergeV2Checkpoints/checkpoint_prefixes")
        tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=pack, destination_prefix=prefix,
                                      name="save/MergeV2Checkpoints")
        spec = tf.raw_ops.ShardedFilespec(basename=prefix, num_shards=num,
                                          name="save/ShardedFilespec")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["w"], shape_and_slices=[""],
                             dtypes=[tf.float32], name="save/RestoreV2")
        with v1.Session(graph=g) as sess:
            values = sess.run({"save/StringJoin:0": tmp, "save/ShardedFilename:0": fname,
                               "save/ShardedFilespec:0": spec})
    (HERE / "string_saver_graph.pb").write_bytes(
        g.as_graph_def().SerializeToString(deterministic=True))
    return {k: v.decode() for k, v in values.items()}


def main() -> None:
    import tensorflow as tf

    def dump(name, obj):
        (HERE / name).write_text(json.dumps(obj, indent=1, ensure_ascii=True) + "\n")

    dump("string_kernels.json", {"tensorflow": tf.__version__, "cases": make_kernel_cases(tf)})
    dump("string_hash_buckets.json", {"tensorflow": tf.__version__, **make_hash_fixture(tf)})
    dump("string_saver_graph.json", {"tensorflow": tf.__version__,
                                     "fetches": make_saver_graph(tf)})
    dump("string_opdefs.json", {"tensorflow": tf.__version__, "opdefs": make_opdefs()})


if __name__ == "__main__":
    main()
