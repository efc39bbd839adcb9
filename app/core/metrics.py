"""Prometheus metrics. Works per process, or across uvicorn workers when
PROMETHEUS_MULTIPROC_DIR is set (`neardup serve --workers N` sets it; the values are
then written to the shared files in the background: app.core.metric_values)."""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from app.core import metric_values

# Before any metric is made: its values are made from the class chosen here.
metric_values.install()

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

REQUESTS = Counter(
    "neardup_http_requests_total", "HTTP requests answered", ["method", "route", "status"]
)
LATENCY = Histogram(
    "neardup_http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["method", "route", "status"],
    buckets=_LATENCY_BUCKETS,
)
CANDIDATES = Histogram(
    "neardup_query_candidates",
    "LSH candidates verified per query",
    buckets=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000),
)
CANDIDATES_VERIFIED = Counter(
    "neardup_candidates_verified_total", "Candidates checked by fingerprint Jaccard"
)
CANDIDATES_KEPT = Counter(
    "neardup_candidates_kept_total",
    "Candidates at or above the threshold; kept/verified is the fraction verification kept",
)
CANDIDATES_CAPPED = Counter(
    "neardup_queries_capped_total", "Queries whose candidates were cut by the cap"
)
REDIS_SECONDS = Histogram(
    "neardup_redis_roundtrip_seconds",
    "Time of one Redis round trip (a command or a pipeline)",
    ["op"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1),
)
LOCKS_EXPIRED = Counter(
    "neardup_locks_expired_total",
    "Document write locks that expired before their writer finished (NEARDUP check cleans up)",
)
DUPLICATE_IDS_DROPPED = Counter(
    "neardup_duplicate_ids_dropped_total",
    "Answer entries dropped because an id was already in the answer (should stay 0)",
)
DOCUMENTS_EXPIRED = Counter(
    "neardup_documents_expired_total",
    "Expired documents removed by the sweeper (they stopped answering when they expired)",
)
ORPHANS_REPAIRED = Counter(
    "neardup_check_repaired_total",
    "Orphaned or dangling entries the consistency check removed, by kind",
    ["kind"],
)
CONNECTIONS_CLOSED = Counter(
    "neardup_connections_closed_total",
    "Connections closed or refused by the slow-client limits (NEARDUP_HEADER_TIMEOUT, "
    "NEARDUP_BODY_TIMEOUT, NEARDUP_MAX_CONNECTIONS), by reason",
    ["reason"],
)
REDIS_USED_MEMORY = Gauge(
    "neardup_redis_used_memory_bytes",
    "Redis used_memory (of the fullest master in a cluster)",
    multiprocess_mode="mostrecent",
)
REDIS_EVICTING = Gauge(
    "neardup_redis_evicting",
    "1 when a Redis master has a maxmemory and a maxmemory-policy other than noeviction: "
    "when full it deletes keys, and documents vanish without an error",
    multiprocess_mode="mostrecent",
)
REDIS_MAX_MEMORY = Gauge(
    "neardup_redis_maxmemory_bytes",
    "Redis maxmemory of the same master (0: no limit); at it, writes are answered 507",
    multiprocess_mode="mostrecent",
)
DOCUMENTS = Gauge(
    "neardup_documents", "Documents stored in the collection", multiprocess_mode="mostrecent"
)


_REQUEST_CHILDREN: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Count one answered request and its duration, by method, route template and status.

    The labelled children are looked up once per label set, not on every request.
    """
    key = (method, route, status)
    children = _REQUEST_CHILDREN.get(key)
    if children is None:
        labels = (method, route, str(status))
        children = _REQUEST_CHILDREN.setdefault(
            key, (REQUESTS.labels(*labels), LATENCY.labels(*labels))
        )
    children[0].inc()
    children[1].observe(seconds)


def render() -> tuple[bytes, str]:
    """The metrics page and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metric_values.flush()  # this process's latest, not its last flush's
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
