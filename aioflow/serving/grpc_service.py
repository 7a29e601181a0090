"""TF Serving's gRPC API on grpc's asyncio server: PredictionService.Predict, Classify,
Regress and GetModelMetadata, ModelService.GetModelStatus, registered under TF Serving's service
names (tensorflow.serving.PredictionService, tensorflow.serving.ModelService) with
aioflow's wire-compatible messages, so TF Serving's stubs call them unchanged.

A call's deadline becomes the run's RunOptions.timeout_in_ms; a cancelled call (the
client went away, or its deadline passed) cancels its run.
"""

from __future__ import annotations

import asyncio
import time

import grpc
from google.protobuf.message import DecodeError

from aioflow.framework import errors, tensor_util
from aioflow.proto.serving import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    predict_pb2,
    regression_pb2,
)
from aioflow.serving import classify
from aioflow.serving.predict import PredictService
from aioflow.serving.rest_app import SIGNATURE_DEF_MAP_URL, signature_def_map, status_response
from aioflow.serving.status import as_op_error, without_paths
from aioflow.serving.tensor_decode import decode_inputs

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
MODEL_SERVICE = "tensorflow.serving.ModelService"


def _spec_args(spec):
    """(name, version or None, label or None) of a ModelSpec."""
    choice = spec.WhichOneof("version_choice")
    version = spec.version.value if choice == "version" else None
    label = spec.version_label if choice == "version_label" else None
    return spec.name, version, label


def _timeout_ms(context) -> int:
    remaining = context.time_remaining()
    if remaining is None:
        return 0
    return max(1, int(remaining * 1000))


class GrpcApi:
    """The gRPC handlers over a PredictService."""

    def __init__(self, service: PredictService):
        self.service = service
        self.calls_started = 0  # (ModelServer.stop waits until no new call starts)

    def handlers(self) -> list:
        def method(handler, request_cls, response_cls):
            return grpc.unary_unary_rpc_method_handler(
                _refusing_unparsable(handler), request_deserializer=_parser(request_cls),
                response_serializer=response_cls.SerializeToString)

        predict = method(self.predict, predict_pb2.PredictRequest, predict_pb2.PredictResponse)
        metadata = method(self.get_model_metadata, get_model_metadata_pb2.GetModelMetadataRequest,
                          get_model_metadata_pb2.GetModelMetadataResponse)
        status = method(self.get_model_status, get_model_status_pb2.GetModelStatusRequest,
                        get_model_status_pb2.GetModelStatusResponse)
        classify_ = method(self.classify, classification_pb2.ClassificationRequest,
                           classification_pb2.ClassificationResponse)
        regress = method(self.regress, regression_pb2.RegressionRequest,
                         regression_pb2.RegressionResponse)
        return [grpc.method_handlers_generic_handler(
                    PREDICTION_SERVICE, {"Predict": predict, "GetModelMetadata": metadata,
                                         "Classify": classify_, "Regress": regress}),
                grpc.method_handlers_generic_handler(
                    MODEL_SERVICE, {"GetModelStatus": status})]

    @staticmethod
    async def _abort(context, err: errors.OpError):
        await context.abort(_grpc_code(err.error_code), without_paths(err.message))

    async def predict(self, request, context):
        call = _Call(self, context, request.model_spec)
        async with call:
            with self.service.version(call.name, call.version, call.label) as mv:
                call.mv_version = mv.version  # (recorded even if the signature is wrong)
                sig = call.use(self.service.signature(mv, call.signature_name))
                inputs = await decode_inputs(sig, request.inputs, self.service.check_keys)
                sig.check_shapes(inputs)
                self.service.check_dtypes(sig, inputs)
                keys = self.service.output_keys(sig, list(request.output_filter))
                outputs = await self.service.run(mv, sig, inputs, keys, _timeout_ms(context))
        response = predict_pb2.PredictResponse()
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(tensor_util.make_tensor_proto(value))
        return call.answer(response)

    async def classify(self, request, context):
        """PredictionService.Classify: tf.Examples through a classification signature."""
        response = classification_pb2.ClassificationResponse()
        for row in await self._examples_call("classify", request, context, response):
            item = response.result.classifications.add()
            for label, score in row:
                item.classes.add(label=label, score=score)
        return response

    async def regress(self, request, context):
        """PredictionService.Regress: tf.Examples through a regression signature."""
        response = regression_pb2.RegressionResponse()
        for value in await self._examples_call("regress", request, context, response):
            response.result.regressions.add(value=value)
        return response

    async def _examples_call(self, api: str, request, context, response) -> list:
        """Run a Classify or Regress request: its rows of results (`response` gets the
        model spec)."""
        call = _Call(self, context, request.model_spec)
        async with call:
            serialized = classify.examples_from_input(request.input)
            with self.service.version(call.name, call.version, call.label) as mv:
                call.mv_version = mv.version  # (recorded even if the signature is wrong)
                sig = call.use(self.service.signature(mv, call.signature_name))
                results = await classify.run_examples(self.service, mv, sig, api, serialized,
                                                      _timeout_ms(context))
        call.answer(response)
        return results

    async def get_model_metadata(self, request, context):
        self.calls_started += 1
        name, version, label = _spec_args(request.model_spec)
        try:
            if not request.metadata_field:
                raise errors.InvalidArgumentError(
                    None, None, "GetModelMetadataRequest must specify at least one "
                                "metadata_field")
            for field in request.metadata_field:
                if field != "signature_def":
                    raise errors.InvalidArgumentError(
                        None, None, f"Metadata field {field} is not supported")
            with self.service.version(name, version, label) as mv:
                response = get_model_metadata_pb2.GetModelMetadataResponse()
                response.model_spec.name = name
                response.model_spec.version.value = mv.version
                any_value = response.metadata["signature_def"]
                any_value.type_url = SIGNATURE_DEF_MAP_URL
                any_value.value = signature_def_map(mv).SerializeToString()
                return response
        except Exception as e:
            await self._abort(context, as_op_error(e))

    async def get_model_status(self, request, context):
        self.calls_started += 1
        name, version, label = _spec_args(request.model_spec)
        try:
            if label is not None:
                config = self.service.registry.configs.get(name)
                version = config.labels.get(label) if config else None
                if version is None:
                    raise errors.InvalidArgumentError(
                        None, None, f"Unrecognized servable version label: {label}")
            return status_response(self.service.registry, name, version)
        except Exception as e:
            await self._abort(context, as_op_error(e))


class _Unparsable:
    """A request whose bytes are not its message (grpc would answer UNKNOWN, naming
    protobuf's exception)."""

    def __init__(self, name: str):
        self.name = name


def _parser(request_cls):
    def parse(data: bytes):
        try:
            return request_cls.FromString(data)
        except DecodeError:
            return _Unparsable(request_cls.DESCRIPTOR.name)
    return parse


def _refusing_unparsable(handler):
    """`handler`, an unparsable request answered INVALID_ARGUMENT."""
    async def handle(request, context):
        if isinstance(request, _Unparsable):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"The request is not a valid {request.name} message")
        return await handler(request, context)
    return handle


class _Call:
    """A Predict, Classify or Regress call's bookkeeping: what it serves, and one metrics
    record of its outcome. An error leaving the `async with` aborts the call with TF
    Serving's status for its class; a cancellation is recorded and goes on."""

    def __init__(self, api: GrpcApi, context, spec):
        self.api, self.context = api, context
        api.calls_started += 1
        self.name, self.version, self.label = _spec_args(spec)
        self.mv_version, self.signature_name = None, spec.signature_name
        self.started = time.perf_counter()

    def use(self, sig):
        """The signature the call runs (for its record and answer)."""
        self.signature_name = sig.name
        return sig

    async def __aenter__(self) -> _Call:
        return self

    async def __aexit__(self, kind, exc, tb) -> bool:
        if isinstance(exc, asyncio.CancelledError):
            self._record(errors.CancelledError(None, None, "call cancelled"))
        elif isinstance(exc, Exception):
            err = as_op_error(exc)
            self._record(err)
            await self.api._abort(self.context, err)
        return False

    def answer(self, response):
        """`response` with the model spec filled in, the success recorded."""
        response.model_spec.name = self.name
        response.model_spec.version.value = self.mv_version
        response.model_spec.signature_name = self.signature_name
        self._record()
        return response

    def _record(self, err: errors.OpError | None = None) -> None:
        self.api.service.record("grpc", self.name, self.mv_version, self.signature_name,
                                self.started, err)


def _grpc_code(code: int) -> grpc.StatusCode:
    """The grpc.StatusCode of a canonical error code (the same numbers)."""
    for status in grpc.StatusCode:
        if status.value[0] == code:
            return status
    return grpc.StatusCode.UNKNOWN
