"""The server's Prometheus metrics (prometheus_client), exported at
/monitoring/prometheus/metrics: requests and their latency per model, version, signature
and API; batch sizes and queue depth; run errors by class; model versions' states.
Each server has its own CollectorRegistry, so several can share a process (tests).

With `aioflow serve --workers N` the workers' values live in prometheus_client's
multiprocess files (PROMETHEUS_MULTIPROC_DIR, set before the workers import the
library) and each worker's exposition sums all of them: counters and histograms over
the workers; in-flight requests and queue depth over the live ones; a version state is
1 when it is the state of that version in any live worker."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: Request latency buckets, seconds: 100 µs to 30 s.
LATENCY_BUCKETS = (1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25,
                   0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class ServingMetrics:
    """The metric families of one server."""

    def __init__(self, multiprocess_dir: str | None = None):
        self.multiprocess_dir = multiprocess_dir
        self.registry = r = CollectorRegistry()
        labels = ("model_name", "version", "signature_name", "api")
        self.requests = Counter(
            "aioflow_serving_requests", "Predict and metadata requests by outcome",
            (*labels, "status"), registry=r)
        self.latency = Histogram(
            "aioflow_serving_request_latency_seconds", "Request latency, end to end",
            labels, buckets=LATENCY_BUCKETS, registry=r)
        self.run_errors = Counter(
            "aioflow_serving_run_errors", "Failed requests by error class",
            ("model_name", "error_class"), registry=r)
        self.batch_size = Histogram(
            "aioflow_serving_batch_size", "Requests' rows merged into one batched run",
            ("model_name", "version", "signature_name"), buckets=BATCH_BUCKETS, registry=r)
        self.padded_batch_size = Histogram(
            "aioflow_serving_padded_batch_size", "Batch size after padding to an allowed size",
            ("model_name", "version", "signature_name"), buckets=BATCH_BUCKETS, registry=r)
        self.queue_depth = Gauge(
            "aioflow_serving_batch_queue_depth", "Requests waiting in a batching queue",
            ("model_name", "version", "signature_name"), registry=r,
            multiprocess_mode="livesum")
        self.in_flight = Gauge(
            "aioflow_serving_requests_in_flight", "Predict requests being served",
            ("model_name",), registry=r, multiprocess_mode="livesum")
        self.version_state = Gauge(
            "aioflow_serving_model_version_state",
            "1 for the state each model version is in (LOADING, AVAILABLE, UNLOADING, END)",
            ("model_name", "version", "state"), registry=r, multiprocess_mode="livemax")

    def expose(self) -> bytes:
        """The text exposition format (of all the workers, with --workers)."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)
        return generate_latest(registry)
