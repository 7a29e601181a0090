"""aioflow serve: a model server speaking TensorFlow Serving's REST and gRPC APIs, with
model versions, dynamic batching and Prometheus metrics (see docs/serving.md). The parts:
loader (formats), model_registry (versions), batching, predict (the request path shared
by both APIs), rest_codec and rest_app, grpc_service, metrics, server, flags, main."""
