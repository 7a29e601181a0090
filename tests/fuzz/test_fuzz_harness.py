"""The fuzz harness itself: outcome classification, the per-case timeout and loop guard,
the address-space cap, reproducer files, and unmutated fixtures running clean."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from fuzz_runner import CaseRunner, FuzzCase, Limits, Outcome, address_space_limit, classify
from fuzz_strategies import FIXTURES, _fixture
from known_findings import FINDINGS, known

import aioflow as af
from aioflow.framework import dtypes, errors, tensor_util


def _raised(fn):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001
        return e
    raise AssertionError("did not raise")


def test_a_bad_graph_def_is_a_client_value_error_at_import():
    with af.Graph().as_default():
        exc = _raised(lambda: af.import_graph_def(b"\xff\xfe not a GraphDef"))
    outcome = classify(exc, "import")
    assert outcome.cls == "client:ValueError" and outcome.acceptable
    assert outcome.wrapped == ""  # protobuf's DecodeError is the expected cause


def test_a_deliberate_type_error_is_client_side_at_run_but_a_failure_at_import():
    """TF's import_graph_def raises only ValueError; its Session.run TypeError too."""
    exc = _raised(lambda: dtypes.as_dtype(99))
    assert classify(exc, "run").cls == "client:TypeError"
    assert classify(exc, "import").cls == "FAIL:TypeError"
    assert classify(exc, "import").where == "framework/dtypes.py:as_dtype"


def test_a_raw_exception_from_an_expression_is_a_failure():
    exc = _raised(lambda: tensor_util.make_ndarray(None))
    outcome = classify(exc, "import")
    assert outcome.cls == f"FAIL:{type(exc).__name__}" and not outcome.acceptable
    assert outcome.where.startswith("framework/tensor_util.py:")


def test_key_error_is_never_client_side():
    exc = _raised(lambda: af.Graph().get_tensor_by_name("nope:0"))
    assert not classify(exc, "run").acceptable or type(exc) is not KeyError


def test_op_errors_are_acceptable_unless_they_wrap_a_raw_cause():
    """A TF class standing for a raw exception is a failure (the input was not checked
    where TF checks it); a MemoryError behind ResourceExhaustedError is TF's OOM."""
    err = errors.InvalidArgumentError(None, None, "bad")
    assert classify(err, "run") == Outcome("OpError:InvalidArgumentError", "run", "bad")
    err.__cause__ = _raised(lambda: [][1])
    outcome = classify(err, "run")
    assert outcome.cls == "FAIL:wrapped-IndexError" and not outcome.acceptable
    assert outcome.wrapped == "IndexError" and outcome.where.endswith("<lambda>")
    oom = errors.ResourceExhaustedError(None, None, "OOM")
    oom.__cause__ = MemoryError()
    assert classify(oom, "run").acceptable and classify(oom, "run").wrapped == "MemoryError"


@pytest.fixture
def quick_runner():
    runner = CaseRunner(Limits(case_timeout_s=0.3, guard_s=0.7))
    yield runner
    runner.close()


def test_a_run_that_never_finishes_is_a_hang(quick_runner):
    outcome = quick_runner.run_coroutine(lambda progress: asyncio.sleep(30))
    assert outcome.cls == "FAIL:hang" and outcome.seconds < 2


def test_a_run_that_holds_the_loop_is_reported_and_the_next_case_gets_a_new_loop(quick_runner):
    async def blocking(progress):
        progress["stage"] = "run"
        time.sleep(4.0)

    outcome = quick_runner.run_coroutine(blocking)
    assert (outcome.cls, outcome.stage) == ("FAIL:loop-blocked", "run")
    assert "blocking" in outcome.tail and quick_runner.abandoned == 1

    async def fine(progress):
        return Outcome("ok", "run")

    assert quick_runner.run_coroutine(fine).cls == "ok"


def test_a_run_that_ignores_its_cancellation_is_reported(quick_runner):
    async def stubborn(progress):
        for _ in range(30):
            try:
                await asyncio.sleep(0.1)
            except asyncio.CancelledError:
                pass

    assert quick_runner.run_coroutine(stubborn).cls == "FAIL:hang-uncancellable"


def test_the_address_space_cap_turns_a_bomb_into_memory_error():
    with address_space_limit(256 << 20), pytest.raises(MemoryError):
        np.ones(1 << 30)
    np.ones(1 << 26)  # the previous limit is back


def test_a_case_round_trips_through_its_reproducer_files(tmp_path):
    case = FuzzCase("k", b"\x0a\x00", {"x:0": np.arange(3.0), "y:0": 2**70}, ["x:0"], ["t"],
                    "note", 2)
    loaded = FuzzCase.load(case.save(tmp_path / "c"))
    assert (loaded.kind, loaded.graph_def, loaded.fetches, loaded.targets, loaded.cpus) == \
        ("k", b"\x0a\x00", ["x:0"], ["t"], 2)
    np.testing.assert_array_equal(loaded.feeds["x:0"], np.arange(3.0))
    assert loaded.feeds["y:0"] == 2**70


@pytest.mark.parametrize("name", FIXTURES)
def test_unmutated_fixtures_run_clean(name, fuzz_runner):
    data, feeds, fetches, targets = _fixture(name)
    case = FuzzCase("fixture", data, dict(feeds), list(fetches), list(targets),
                    cpus=2 if name == "partition_two_cpus" else 1)
    outcome = fuzz_runner.run(case)
    assert outcome.cls == "ok", outcome.report()


def test_every_finding_has_a_unique_id_and_only_open_ones_are_tolerated():
    assert len({f.id for f in FINDINGS}) == len(FINDINGS)
    for finding in FINDINGS:
        fingerprint = finding.fingerprint.replace("*", "x")
        assert finding.matches(fingerprint)
        assert (known(fingerprint) is None) == finding.fixed
