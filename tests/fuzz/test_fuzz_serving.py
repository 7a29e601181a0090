"""The serving fuzz targets' short profile (fuzz_serving.py): HTTP request bytes against
both REST front ends and PredictRequests with mutated TensorProtos against gRPC, on a
real server over real sockets; deterministic (derandomized), bounded."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("grpc")
pytest.importorskip("httptools")

from conftest import check_outcome, short_profile  # noqa: E402
from fuzz_serving import ServingRunner, grpc_cases, http_cases  # noqa: E402
from hypothesis import given  # noqa: E402


@pytest.fixture(scope="module")
def serving_runner():
    runner = ServingRunner()
    yield runner
    runner.close()


@short_profile(150)
@given(case=http_cases())
def test_http_request_bytes(serving_runner, case):
    check_outcome(serving_runner.run(case), case)


@short_profile(150)
@given(case=grpc_cases())
def test_grpc_predict_requests(serving_runner, case):
    check_outcome(serving_runner.run(case), case)
