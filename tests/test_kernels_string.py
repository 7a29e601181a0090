"""String kernels side by side with TF 2.21: every case of tests/data/string_kernels.json
(made by tests/data/make_string_fixtures.py) runs through aioflow's kernel and must give
TF's values, or TF's error class and message; plus the OpDefs field by field, the RE2
translation's differences from Python's `re`, the pool decision, and runs in a session
(errors naming the node)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from kernel_testutil import create
from op_def_compare import ours

import aioflow as af
from aioflow.framework import dtypes, errors
from aioflow.kernels.strings import re2_compat, string_kernels
from aioflow.proto import op_def_pb2

DATA = Path(__file__).parent / "data"
FIXTURE = json.loads((DATA / "string_kernels.json").read_text())
OPDEFS = json.loads((DATA / "string_opdefs.json").read_text())["opdefs"]


def _decode(dtype: str, v):
    if dtype == "string":
        return v.encode("utf-8", "surrogateescape")
    if dtype.startswith("complex"):
        return complex(_decode("float64", v[0]), _decode("float64", v[1]))
    if isinstance(v, str):
        return float(v)
    return v


def tensor(t: dict) -> np.ndarray:
    """A fixture tensor as aioflow holds it (strings: an object array of bytes)."""
    values = [_decode(t["dtype"], v) for v in t["values"]]
    if t["dtype"] == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(t["shape"])
    dtype = dtypes.as_dtype(t["dtype"]).as_numpy_dtype
    return np.array(values, dtype=dtype).reshape(t["shape"])


def _attrs(attrs: dict) -> dict:
    out = dict(attrs)
    if "out_type" in out:
        out["out_type"] = dtypes.as_dtype(out["out_type"])
    return out


def _case_id(case) -> str:
    return f"{case['op']}-{json.dumps(case['attrs'], ensure_ascii=True)[:40]}"


def run_case(case) -> list:
    inputs = []
    for spec in case["inputs"]:
        inputs.extend(tensor(t) for t in spec) if isinstance(spec, list) \
            else inputs.append(tensor(spec))
    kernel = create(case["op"], inputs, **_attrs(case["attrs"]))
    if kernel.expensive is None:
        kernel.is_expensive(inputs)
    return list(kernel.compute(None, inputs))


def assert_tensor_equal(got, want: dict) -> None:
    expected = tensor(want)
    got = np.asarray(got)
    assert got.shape == expected.shape, (got, expected)
    if want["dtype"] == "string":
        assert got.dtype == object
        assert got.ravel().tolist() == expected.ravel().tolist()
        return
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    for a, b in zip(got.ravel().tolist(), expected.ravel().tolist(), strict=True):
        if isinstance(b, float) and math.isnan(b):
            assert math.isnan(a)
        else:
            assert a == b and (not isinstance(b, float) or
                               math.copysign(1, a) == math.copysign(1, b)), (got, expected)


#: Patterns RE2 accepts that aioflow refuses (they cannot be translated to Python's `re`;
#: aioflow/kernels/strings/re2_compat.py lists them): TF's InvalidArgumentError wording instead of
#: values.
REFUSED_PATTERNS = {"\\p{Greek}": "invalid character class range: \\p{Greek}"}


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_case_id)
def test_matches_tensorflow(case):
    pattern = case["attrs"].get("pattern")
    if pattern in REFUSED_PATTERNS:
        with pytest.raises(errors.InvalidArgumentError) as info:
            run_case(case)
        assert info.value.message == f"Invalid pattern: {pattern}, error: " \
                                     f"{REFUSED_PATTERNS[pattern]}"
        return
    if "error" in case:
        cls = getattr(errors, case["error"]["class"])
        with pytest.raises(errors.OpError) as info:
            run_case(case)
        assert type(info.value) is cls, info.value
        assert info.value.message == case["error"]["message"]
        return
    outputs = run_case(case)
    assert len(outputs) == len(case["outputs"])
    for got, want in zip(outputs, case["outputs"], strict=True):
        assert_tensor_equal(got, want)


@pytest.mark.parametrize("name", sorted(OPDEFS))
def test_op_def_equals_tensorflows(name):
    expected = text_format.Parse(OPDEFS[name], op_def_pb2.OpDef())
    got = ours(name)
    assert got == expected, text_format.MessageToString(got)


# -- RE2 versus Python's re: the differences the translation exists for ----------------------

def _replace(pattern: str, rewrite: str, text: str, global_: bool = True) -> str:
    compiled, groups = re2_compat.compile_re2(pattern.encode())
    return re2_compat.replace(compiled, groups, re2_compat.parse_rewrite(rewrite.encode()),
                              text.encode("utf-8", "surrogateescape"),
                              global_).decode("utf-8", "surrogateescape")


@pytest.mark.parametrize("pattern, rewrite, text, ours, pythons", [
    ("$", "E", "a\n", "a\nE", "aE\nE"),                 # $ is the end of the text
    (r"\d", "#", "1٣", "#٣", "##"),                      # ASCII classes
    (r"\s", "#", "a\vb", "a\vb", "a#b"),                 # \s has no \v
    (r"\w", "#", "aé", "#é", "##"),
    (r"\bx", "#", "éx", "é#", "éx"),                     # ASCII word boundary
    ("x*", "-", "abxd", "-a-b-d-", "-a-b--d-"),          # no empty match after a match
    ("a{,2}", "#", "a{,2}", "#", "##{#,#2#}#"),           # not a repetition in RE2
    ("(b)", r"[\0]", "abc", "a[b]c", "a[\x00]c"),        # \0 is the whole match
])
def test_re2_semantics_differ_from_pythons(pattern, rewrite, text, ours, pythons):
    assert _replace(pattern, rewrite, text) == ours
    assert re.sub(pattern, rewrite, text) == pythons


@pytest.mark.parametrize("pattern, rewrite, text, expected", [
    ("(?P<1a>b)", r"<\1>", "abc", "a<b>c"),     # RE2 accepts names Python refuses
    ("a(?i)b|c", "#", "aB C", "# #"),           # mid-pattern flags, through |
    ("(?U)a+", "#", "aaa", "###"),              # ungreedy
    (r"\Q.*\E", "#", "a.*", "a#"),              # quoted text
    (r"\x{65}\101", "#", "eA", "#"),            # hex and octal escapes
    ("[[:upper:]]", "#", "aBc", "a#c"),         # POSIX classes
    (r"\p{Lu}", "#", "aÉ", "a#"),               # Unicode categories
    (".", "#", "a\udcffb", "#\udcff#"),         # invalid UTF-8 is matched by nothing
    ("(b)", r"<\1\x>", "abc", "a<bc"),          # global: the rewrite up to a bad escape
])
def test_re2_translation(pattern, rewrite, text, expected):
    assert _replace(pattern, rewrite, text) == expected


def test_bad_rewrite_leaves_a_single_replacement_alone():
    assert _replace("(b)", r"<\1\x>", "abc", global_=False) == "abc"
    assert _replace("(b)", r"\2", "abc") == "abc"   # a group the pattern lacks


@pytest.mark.parametrize("pattern, error", [
    ("(?=a)", "invalid perl operator: (?="),
    ("(?<=a)b", "invalid perl operator: (?<"),
    (r"(a)\1", "invalid escape sequence: \\1"),
    (r"a\Z", "invalid escape sequence: \\Z"),
    ("a++", "bad repetition operator: ++"),
    ("a{1001}", "invalid repetition size: {1001}"),
    ("[z-a]", "invalid character class range: z-a"),
    ("(a", "missing ): (a"),
    ("[a", "missing ]: [a"),
    (r"\p{Greek}", "invalid character class range: \\p{Greek}"),   # refused: a script
    ("[[:^alpha:]x]", None),                                        # translated
])
def test_refused_patterns_use_re2s_words(pattern, error):
    if error is None:
        compiled, _ = re2_compat.compile_re2(pattern.encode())
        assert [bool(compiled.fullmatch(c)) for c in "a1x"] == [False, True, True]
        return
    with pytest.raises(re2_compat.Re2Error, match=f"^{re.escape(error)}$"):
        re2_compat.compile_re2(pattern.encode())


def test_kernel_error_names_the_pattern():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^Invalid pattern: \(\?=é\), error: invalid perl operator: "
                             r"\(\?=$"):
        create("StaticRegexFullMatch", [np.array([b"x"], dtype=object)], pattern="(?=é)")


# -- pool decisions ----------------------------------------------------------------------------

def _strings(n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    out[:] = [b"ab,c"] * n
    return out


@pytest.mark.parametrize("op, inputs, attrs", [
    ("StringJoin", lambda n: [_strings(n), np.array(b"x", dtype=object)], {}),
    ("StringLength", lambda n: [_strings(n)], {}),
    ("Substr", lambda n: [_strings(n), np.int32(0), np.int32(1)], {}),
    ("StaticRegexReplace", lambda n: [_strings(n)], {"pattern": "a", "rewrite": "b"}),
    ("RegexReplace", lambda n: [_strings(n), np.array(b"a", dtype=object),
                                np.array(b"b", dtype=object)], {}),
    ("RegexFullMatch", lambda n: [_strings(n), np.array(b"a", dtype=object)], {}),
    ("StringSplitV2", lambda n: [_strings(n), np.array(b",", dtype=object)], {}),
    ("StringToHashBucketFast", lambda n: [_strings(n)], {"num_buckets": 5}),
    ("EncodeBase64", lambda n: [_strings(n)], {}),
    ("StringUpper", lambda n: [_strings(n)], {}),
])
def test_large_string_tensors_go_to_the_pool(op, inputs, attrs):
    small, large = inputs(8), inputs(string_kernels.POOL_ABOVE + 1)
    kernel = create(op, small, **attrs)
    assert kernel.expensive is None
    assert not kernel.is_expensive(small)
    assert kernel.is_expensive(large)


def test_sharded_filename_is_inline():
    kernel = create("ShardedFilename", [np.array(b"a", dtype=object), np.int32(0),
                                        np.int32(1)])
    assert kernel.expensive is False


# -- builders and sessions ---------------------------------------------------------------------

async def test_builders_run_in_a_session(graph):
    x = af.placeholder(af.string, [None], name="x")
    static = af.strings.regex_replace(x, r"(\w+)@", r"<\1>@")
    dynamic = af.strings.regex_replace(x, af.constant("o"), "0")
    full = af.strings.regex_full_match(x, r"\w+@\w+")
    parts = af.strings.split(x, "@")
    words = af.strings.split(af.constant(" a  b "))
    joined = af.strings.reduce_join(af.constant([["a", "b"], ["c", "d"]]), separator=",")
    rows = af.strings.reduce_join(af.constant([["a", "b"], ["c", "d"]]), axis=1,
                                  keepdims=True)
    unknown_rank = af.placeholder(af.string, name="u")
    all_axes = af.strings.reduce_join(unknown_rank)
    upper = af.strings.upper(x, encoding="utf-8")
    length = af.strings.length(x, unit="UTF8_CHAR")
    number = af.strings.to_number(af.constant(["1.5", " 2"]), af.float64)
    text = af.strings.as_string(af.constant([3.14159]), precision=2, width=6)
    b64 = af.strings.decode_base64(af.strings.encode_base64(x, pad=True))
    bucket = af.strings.to_hash_bucket_fast(x, 1000)
    sub = af.strings.substr(x, 1, 2, unit="UTF8_CHAR")
    joined2 = af.strings.join([x, "!"], separator=" ")
    stripped = af.strings.strip(af.constant(["  é "]))
    assert [t.op.type for t in (static, dynamic, full)] == [
        "StaticRegexReplace", "RegexReplace", "StaticRegexFullMatch"]
    feed = {x: ["joe@home", "zoé@wörk"], unknown_rank: [["a", "b"], ["c", "d"]]}
    async with af.Session(graph=graph) as sess:
        out = await sess.run([static, dynamic, full, parts, words, joined, rows, all_axes,
                              upper, length, number, text, b64, bucket, sub, joined2,
                              stripped], feed)
    (static_v, dynamic_v, full_v, parts_v, words_v, joined_v, rows_v, all_v, upper_v,
     length_v, number_v, text_v, b64_v, bucket_v, sub_v, joined2_v, stripped_v) = out
    assert static_v.tolist() == [b"<joe>@home", "zoé@wörk".encode()]  # \w is ASCII
    assert dynamic_v.tolist() == [b"j0e@h0me", "z0é@wörk".encode()]
    assert full_v.tolist() == [True, False]        # \w is ASCII in RE2
    assert parts_v.values.tolist() == [b"joe", b"home", "zoé".encode(), "wörk".encode()]
    assert parts_v.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert parts_v.dense_shape.tolist() == [2, 2]
    assert words_v.values.tolist() == [b"a", b"b"] and words_v.dense_shape.tolist() == [1, 2]
    assert joined_v == b"a,b,c,d"
    assert rows_v.tolist() == [[b"ab"], [b"cd"]]
    assert all_v == b"abcd"
    assert upper_v.tolist() == [b"JOE@HOME", "ZOÉ@WÖRK".encode()]
    assert length_v.tolist() == [8, 8]
    assert number_v.tolist() == [1.5, 2.0] and number_v.dtype == np.float64
    assert text_v.tolist() == [b"  3.14"]
    assert b64_v.tolist() == [s.encode() for s in feed[x]]
    assert bucket_v.dtype == np.int64
    assert sub_v.tolist() == [b"oe", "oé".encode()]
    assert joined2_v.tolist() == [b"joe@home !", "zoé@wörk !".encode()]
    assert stripped_v.tolist() == ["é".encode()]


async def test_kernel_errors_name_the_node(graph):
    x = af.placeholder(af.string, [None], name="x")
    bad_substr = af.strings.substr(x, 4, 1, unit="UTF8_CHAR", name="bad_substr")
    bad_number = af.strings.to_number(x, name="bad_number")
    bad_b64 = af.strings.decode_base64(x, name="bad_b64")
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^pos 4 out of range for string at index 0\n.*"
                                 r"\{\{node bad_substr\}\}"):
            await sess.run(bad_substr, {x: ["日本語"]})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^StringToNumberOp could not correctly convert string: "
                                 r"日本\n.*\{\{node bad_number\}\}"):
            await sess.run(bad_number, {x: ["1", "日本"]})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^Invalid character found in base64\.\n.*"
                                 r"\{\{node bad_b64\}\}"):
            await sess.run(bad_b64, {x: ["5pel", "5p+l"]})


async def test_saver_graph_from_tensorflow_imports_and_runs(load_graph_def):
    """The checkpoint nodes TF's sharded Saver writes import (SaveV2, RestoreV2 and
    MergeV2Checkpoints have OpDefs) and the filename nodes compute TF's values."""
    expected = json.loads((DATA / "string_saver_graph.json").read_text())["fetches"]
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(load_graph_def("string_saver_graph"), name="")
    ops_ = {op.type for op in graph.get_operations()}
    assert {"SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename",
            "ShardedFilespec", "StringJoin"} <= ops_
    # The checkpoint ops have no kernel here (and a session places every node): run the
    # nodes the fetches need.
    graph_def = load_graph_def("string_saver_graph")
    nodes = {n.name: n for n in graph_def.node}
    needed, todo = set(), [name.split(":")[0] for name in expected]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(i.lstrip("^").split(":")[0] for i in nodes[name].input)
    del graph_def.node[:]
    graph_def.node.extend(n for n in nodes.values() if n.name in needed)
    sub = af.Graph()
    with sub.as_default():
        af.import_graph_def(graph_def, name="")
    async with af.Session(graph=sub) as sess:
        values = await sess.run(list(expected))
    assert [v.decode() for v in values] == list(expected.values())
