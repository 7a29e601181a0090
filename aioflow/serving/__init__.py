"""aioflow serve: a model server speaking TensorFlow Serving's REST and gRPC APIs, with
model versions, dynamic batching and Prometheus metrics (see docs/serving.md). The parts:
loader (model formats behind one interface), model_registry (versions, polling, swaps),
batching, predict (the request path both APIs share), status (errors as HTTP and gRPC
statuses), rest_codec and rest_app (REST), http_server (the lean HTTP/1.1 server of the
REST API), grpc_service (gRPC), metrics, server (both on one loop), flags and main (the
`aioflow serve` command), workers (--workers: processes sharing the ports). Importing
this package imports none of them: the serving dependencies are an extra."""
