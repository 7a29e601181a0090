"""TF Serving's REST API: the handlers (RestApi.predict, .get, .metrics_text), served by
http_server.HttpServer (`aioflow serve`'s default) or as an aiohttp application (`app()`,
to mount in an app of your own):

    POST /v1/models/{name}[/versions/{v}|/labels/{l}]:predict
    GET  /v1/models/{name}[/versions/{v}|/labels/{l}]            (model_version_status)
    GET  /v1/models/{name}[/versions/{v}|/labels/{l}]/metadata   (signature defs)
    GET  /monitoring/prometheus/metrics

Errors are {"error": "..."} with TF Serving's HTTP status for the error's class. A
request's deadline is the `timeout_ms` query parameter, else the X-Request-Timeout-Ms
header (it becomes the run's RunOptions.timeout_in_ms), else the server's
--rest_api_timeout_in_ms (predict.DefaultDeadlines); 504 when it passes. A client that
disconnects cancels its request's run (the native server cancels the request's task;
aiohttp's runner is made with handler_cancellation=True).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from typing import NamedTuple
from urllib.parse import parse_qs

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from google.protobuf import json_format

from aioflow.framework import errors
from aioflow.proto.serving import get_model_metadata_pb2, get_model_status_pb2
from aioflow.serving import classify, json_worker, rest_codec
from aioflow.serving.loader import DEFAULT_SIGNATURE
from aioflow.serving.predict import PredictService
from aioflow.serving.status import as_op_error, http_status, without_paths

SIGNATURE_DEF_MAP_URL = "type.googleapis.com/tensorflow.serving.SignatureDefMap"
#: Bodies larger than this are parsed, and their values converted to arrays, in a worker
#: process (json_worker.py: the loop is not held, the server's memory does not grow),
#: one at a time.
PARSE_OFF_LOOP_BYTES = 1 << 20
#: Answers of more values than this are formatted in the worker process.
FORMAT_OFF_LOOP_ELEMENTS = 1 << 16

_MODEL_PATH = re.compile(
    r"^/v1/models/(?P<name>[^/:]+)"
    r"(?:/versions/(?P<version>[^/:]+)|/labels/(?P<label>[^/:]+))?"
    r"(?P<rest>/metadata|:predict|:classify|:regress)?$")


def access_line(remote, method: str, path_qs: str, status: int, nbytes: int,
                seconds: float) -> str:
    """One access log line, JSON: time, remote, method, path, status, bytes, ms."""
    return json.dumps({"ts": round(time.time(), 3), "remote": remote, "method": method,
                       "path": path_qs, "status": status, "bytes": nbytes,
                       "ms": round(seconds * 1e3, 3)})


class JsonAccessLogger(AbstractAccessLogger):
    """The aiohttp app's access log, one access_line per request."""

    def log(self, request, response, time_taken: float) -> None:
        self.logger.info(access_line(request.remote, request.method, request.path_qs,
                                     response.status, response.body_length, time_taken))


@web.middleware
async def _json_http_errors(request, handler):
    """aiohttp's own answers (no such path, method not allowed) as {"error": ...} too."""
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return web.Response(body=rest_codec.dumps({"error": e.reason}), status=e.status,
                            content_type="application/json", headers={
                                k: v for k, v in e.headers.items() if k == "Allow"})


JSON = b"application/json"


class RestRequest:
    """A request as the routes' handlers see it, from either HTTP server: `tail` is the
    path after the route's prefix; `headers.get` takes lower-case names; `body` is the
    body's bytes or a coroutine function reading them (raising TooLarge past the
    limit); `started` is time.perf_counter() when it arrived."""

    __slots__ = ("method", "path", "tail", "query", "headers", "body", "started")

    def __init__(self, method: str, path: str, tail: str, query: str, headers, body,
                 started: float):
        self.method, self.path, self.tail, self.query = method, path, tail, query
        self.headers, self.body, self.started = headers, body, started


class Route(NamedTuple):
    """One entry of the REST route table: `path` (with `prefix`, every path under it,
    its rest the request's `tail`) and, per method, the name of the RestApi handler
    answering it: handler(RestRequest) -> (status, body, content type), a coroutine
    function when the answer takes a while. A GET route answers HEAD too."""

    path: str
    prefix: bool
    methods: tuple[tuple[str, str], ...]


#: The REST API's routes, for both HTTP servers (http_server.HttpServer and `app()`): a
#: new endpoint is a handler on RestApi and a line here.
ROUTES = (
    Route("/v1/models/", True, (("POST", "post_model"), ("GET", "get_model"))),
    Route("/monitoring/prometheus/metrics", False, (("GET", "metrics"),)),
)


def allowed_methods(route: Route) -> str:
    """The route's Allow header value (GET brings HEAD)."""
    methods = {m for m, _ in route.methods}
    if "GET" in methods:
        methods.add("HEAD")
    return ",".join(sorted(methods))


def _query_value(query: str, key: str) -> str | None:
    if not query:
        return None
    return parse_qs(query).get(key, (None,))[0]


def _aiohttp_handler(handler, route: Route):
    """An aiohttp handler calling a route's handler."""
    is_async = inspect.iscoroutinefunction(handler)

    async def handle(request: web.Request) -> web.Response:
        async def read():
            try:
                return await request.read()
            except web.HTTPRequestEntityTooLarge as e:
                raise TooLarge(e.text or "Request Entity Too Large") from None

        call = RestRequest(request.method, request.path, request.match_info.get("tail", ""),
                           request.query_string, request.headers, read, time.perf_counter())
        status, body, content_type = (await handler(call)) if is_async else handler(call)
        return web.Response(body=body, status=status,
                            headers={"Content-Type": content_type.decode()})

    return handle


def _signature_name(doc: dict) -> str:
    """The request's "signature_name" ("" when absent), a string (TF Serving's message)."""
    name = doc.get("signature_name", "")
    if not isinstance(name, str):
        raise errors.InvalidArgumentError(
            None, None, f"JSON Value: {rest_codec._debug(name)} not formatted correctly. "
                        "'signature_name' key must be a string value.")
    return name


def _parse_request(body: bytes, mv, named: list):
    """A predict body -> (signature, inputs, "row" or "columnar"), the signature's name
    appended to `named`; the parsed JSON is dropped as soon as the arrays are made (on a
    worker thread for a large body)."""
    doc = rest_codec.loads(body)
    signature_name = (_signature_name(doc) if isinstance(doc, dict) else "") or \
        DEFAULT_SIGNATURE
    named.append(signature_name)
    sig = mv.servable.signatures.get(signature_name)
    if sig is None:
        raise errors.InvalidArgumentError(
            None, None, f'Serving signature name: "{signature_name}" not found in signature '
                        'def')
    inputs, fmt = rest_codec.parse_predict(doc, sig.inputs)
    return sig, inputs, fmt


def _model_spec_json(name: str, version: int, signature_name: str = "") -> dict:
    return {"name": name, "signature_name": signature_name, "version": str(version)}


class TooLarge(Exception):
    """A request body over the server's limit (answered 413)."""


class RestApi:
    """The REST handlers over a PredictService, independent of the HTTP server:
    `predict` and `get` take a request's parts and give (status, JSON body); `app()`
    wraps them as an aiohttp app (to embed), http_server.HttpServer serves them itself."""

    def __init__(self, service: PredictService, timeout_ms: int = 30000,
                 max_request_bytes: int = 64 << 20):
        self.service = service
        self.timeout_ms = timeout_ms
        self.max_request_bytes = max_request_bytes
        # Large bodies are parsed one at a time: a body's JSON values take tens of times
        # its bytes while they are turned into arrays, so that N at once would take N
        # times that (the loop serves small requests meanwhile).
        self._large_parses = asyncio.Semaphore(1)
        self._worker = json_worker.JsonWorker(max_request_bytes)

    def close(self) -> None:
        """Stop the worker process of large bodies (json_worker.py), if it was started."""
        self._worker.close()

    async def _parse_large(self, body: bytes, mv, named: list):
        """_parse_request in the worker process (json_worker.py), one at a time."""
        signatures = {name: {key: spec.dtype.as_datatype_enum
                             for key, spec in sig.inputs.items()}
                      for name, sig in mv.servable.signatures.items()}
        async with self._large_parses:
            try:
                _, name, inputs, fmt = await self._worker.call(
                    json_worker.parse, body, signatures, DEFAULT_SIGNATURE)
            except errors.OpError as e:
                named.append(getattr(e, "signature_name", ""))
                raise
        named.append(name)
        return mv.servable.signatures[name], inputs, fmt

    def app(self, middlewares=()) -> web.Application:
        """The routes of ROUTES as an aiohttp application (to mount in an app of your own;
        `aioflow serve --rest_api_server aiohttp` serves it), `middlewares` outermost."""
        app = web.Application(client_max_size=self.max_request_bytes,
                              middlewares=[*middlewares, _json_http_errors])
        for route in ROUTES:
            path = route.path + "{tail:.*}" if route.prefix else route.path
            for method, name in route.methods:
                handle = _aiohttp_handler(getattr(self, name), route)
                if method == "GET":
                    app.router.add_get(path, handle)  # (HEAD too)
                else:
                    app.router.add_route(method, path, handle)
        return app

    # -- the routes' handlers (ROUTES) ------------------------------------------------------
    async def post_model(self, request: RestRequest) -> tuple[int, bytes, bytes]:
        """POST /v1/models/...: predict, classify or regress."""
        timeout = _query_value(request.query, "timeout_ms") or \
            request.headers.get("x-request-timeout-ms")
        status, body = await self.predict(request.tail, request.path, request.body, timeout,
                                          request.started)
        return status, body, JSON

    def get_model(self, request: RestRequest) -> tuple[int, bytes, bytes]:
        """GET /v1/models/...: model status or metadata (answered at once)."""
        status, body = self.get(request.tail, request.path)
        return status, body, JSON

    async def metrics(self, request: RestRequest) -> tuple[int, bytes, bytes]:
        """GET /monitoring/prometheus/metrics, rendered on a worker thread (a page of
        many series takes milliseconds: not on the loop)."""
        if self.service.metrics is None:
            return 404, rest_codec.dumps({"error": "metrics are off"}), JSON
        status, body, content_type = await asyncio.to_thread(self.metrics_text)
        return status, body, content_type.encode()

    # -- the handlers proper ---------------------------------------------------------------
    @staticmethod
    def _route(tail: str, method: str, path: str):
        # from the route's tail, so the app works mounted under a prefix (add_subapp)
        m = _MODEL_PATH.match("/v1/models/" + tail)
        if m is None:
            raise errors.InvalidArgumentError(None, None, f"Malformed request: {method} {path}")
        version = m["version"]
        if version is not None:
            if not (version.isascii() and version.isdigit()):
                raise errors.InvalidArgumentError(
                    None, None, f"Failed to convert version: {version} to numeric.")
            version = int(version)
        return m["name"], version, m["label"], m["rest"]

    @staticmethod
    def _timeout_ms(text: str | None) -> int:
        """The request's own deadline (0: none given)."""
        if text is None:
            return 0
        try:
            value = int(text)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"timeout_ms must be an integer number of milliseconds, got "
                            f"{text!r}") from None
        if value <= 0:
            raise errors.InvalidArgumentError(None, None, f"timeout_ms must be > 0, got {value}")
        return value

    async def predict(self, tail: str, path: str, read, timeout: str | None,
                      started: float | None = None) -> tuple[int, bytes]:
        """POST /v1/models/{tail}: (status, JSON body). `read` is the body, or a function
        awaiting it (raising TooLarge when it is over the limit); `timeout` is the
        request's timeout_ms parameter or X-Request-Timeout-Ms header."""
        started = started or time.perf_counter()
        name, mv_version, signature_name = "", None, ""
        service = self.service
        try:
            name, version, label, rest = self._route(tail, "POST", path)
            if rest in (":classify", ":regress"):
                return await self.examples_api(rest[1:], name, version, label, read,
                                               timeout, started)
            if rest != ":predict":
                raise errors.InvalidArgumentError(None, None, f"Malformed request: POST {path}")
            timeout_ms = self._timeout_ms(timeout)
            body = read if isinstance(read, bytes) else await read()
            mv = service.acquire(name, version, label)
            try:
                mv_version = mv.version
                named: list[str] = []  # (the signature name, for the record of a failure)
                try:
                    if len(body) > PARSE_OFF_LOOP_BYTES:
                        sig, inputs, fmt = await self._parse_large(body, mv, named)
                    else:
                        sig, inputs, fmt = _parse_request(body, mv, named)
                finally:
                    signature_name = named[0] if named else ""
                service.check_inputs(sig, inputs)
                outputs = await service.run(mv, sig, inputs, tuple(sig.outputs), timeout_ms,
                                            self.timeout_ms)
                del inputs
                if sum(a.size for a in outputs.values()) > FORMAT_OFF_LOOP_ELEMENTS:
                    async with self._large_parses:
                        _, body = await self._worker.call(json_worker.format_answer, outputs,
                                                          fmt)
                else:
                    body = rest_codec.format_predict(outputs, fmt)
            finally:
                service.release(mv)
        except asyncio.CancelledError:
            service.record("rest", name, mv_version, signature_name, started,
                           errors.CancelledError(None, None, "client disconnected"))
            raise
        except Exception as e:
            return self._failure(e, name, mv_version, signature_name, started)
        service.record("rest", name, mv_version, signature_name, started)
        return 200, body

    def _failure(self, e: Exception, name: str, mv_version, signature_name: str,
                 started: float) -> tuple[int, bytes]:
        """The answer to a request that failed with `e`, recorded in the metrics: TF
        Serving's HTTP status for its error class (413 for a body over the limit)."""
        if isinstance(e, TooLarge):
            err, status = errors.InvalidArgumentError(None, None, str(e)), 413
        else:
            err = as_op_error(e)
            status = http_status(err)
        self.service.record("rest", name, mv_version, signature_name, started, err)
        return status, rest_codec.dumps({"error": without_paths(err.message)})

    async def examples_api(self, api: str, name: str, version, label, read,
                           timeout: str | None, started: float) -> tuple[int, bytes]:
        """POST ...:classify / :regress: JSON tf.Examples through a classification or
        regression signature, {"results": ...} as TF Serving answers."""
        service = self.service
        mv_version, signature_name = None, ""
        try:
            timeout_ms = self._timeout_ms(timeout)
            body = read if isinstance(read, bytes) else await read()
            doc = (await asyncio.to_thread(rest_codec.loads, body)
                   if len(body) > PARSE_OFF_LOOP_BYTES else rest_codec.loads(body))
            if not isinstance(doc, dict):
                raise errors.InvalidArgumentError(None, None, "Request body must be a JSON "
                                                              "object")
            signature_name = _signature_name(doc) or DEFAULT_SIGNATURE
            serialized = (await asyncio.to_thread(classify.examples_from_json, doc)
                          if len(body) > PARSE_OFF_LOOP_BYTES
                          else classify.examples_from_json(doc))
            with service.version(name, version, label) as mv:
                mv_version = mv.version
                sig = service.signature(mv, signature_name)
                results = await classify.run_examples(service, mv, sig, api, serialized,
                                                      timeout_ms, self.timeout_ms)
            if api == "classify":  # (label, score) pairs as JSON lists
                results = [[list(pair) for pair in row] for row in results]
        except asyncio.CancelledError:
            service.record("rest", name, mv_version, signature_name, started,
                           errors.CancelledError(None, None, "client disconnected"))
            raise
        except Exception as e:
            return self._failure(e, name, mv_version, signature_name, started)
        service.record("rest", name, mv_version, signature_name, started)
        return 200, rest_codec.dumps({"results": results})

    def get(self, tail: str, path: str) -> tuple[int, bytes]:
        """GET /v1/models/{tail}: model status or metadata, (status, JSON body)."""
        try:
            name, version, label, rest = self._route(tail, "GET", path)
            if rest == "/metadata":
                return 200, rest_codec.dumps(self.metadata(name, version, label))
            if rest is not None:
                raise errors.InvalidArgumentError(None, None, f"Malformed request: GET {path}")
            if label is not None:
                version = self.service.registry.configs[name].labels.get(label) \
                    if name in self.service.registry.configs else None
                if version is None:
                    raise errors.InvalidArgumentError(
                        None, None, f"Unrecognized servable version label: {label}")
            return 200, rest_codec.dumps(status_json(self.service.registry, name, version))
        except Exception as e:
            err = as_op_error(e)
            return http_status(err), rest_codec.dumps({"error": without_paths(err.message)})

    def metadata(self, name: str, version, label) -> dict:
        with self.service.version(name, version, label) as mv:
            sigmap = signature_def_map(mv)
            return {"model_spec": _model_spec_json(name, mv.version),
                    "metadata": {"signature_def": {
                        "@type": SIGNATURE_DEF_MAP_URL,
                        **json_format.MessageToDict(
                            sigmap, preserving_proto_field_name=True,
                            always_print_fields_with_no_presence=True)}}}

    def metrics_text(self) -> tuple[int, bytes, str]:
        """GET /monitoring/prometheus/metrics: (status, body, content type)."""
        metrics = self.service.metrics
        if metrics is None:
            return 404, rest_codec.dumps({"error": "metrics are off"}), "application/json"
        from aioflow.serving.metrics import CONTENT_TYPE

        return 200, metrics.expose(), CONTENT_TYPE


def signature_def_map(mv) -> get_model_metadata_pb2.SignatureDefMap:
    sigmap = get_model_metadata_pb2.SignatureDefMap()
    for key, sig in mv.servable.signatures.items():
        sigmap.signature_def[key].CopyFrom(sig.to_signature_def())
    return sigmap


def status_response(registry, name: str, version) -> get_model_status_pb2.GetModelStatusResponse:
    """GetModelStatusResponse of a model (one version when `version` is given)."""
    response = get_model_status_pb2.GetModelStatusResponse()
    for mv in registry.status(name, version):
        status = response.model_version_status.add(version=mv.version, state=mv.state)
        status.status.SetInParent()  # TF Serving writes {"error_code": "OK", ...} too
        if mv.error is not None:
            status.status.error_code = mv.error.error_code
            status.status.error_message = without_paths(mv.error.message)
    return response


def status_json(registry, name: str, version) -> dict:
    return json_format.MessageToDict(status_response(registry, name, version),
                                     preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)
