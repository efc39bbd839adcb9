"""/metrics counts what happened; every request gets one log line with its request id."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.both_stores

TEXT = "Wind farms off the northern coast produced record power during the winter storms"


def _samples(client: TestClient) -> dict[tuple[str, tuple], float]:
    resp = client.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_requests_candidates_and_documents(client: TestClient) -> None:
    """Requests by route and status, verified and kept candidates, and stored documents."""
    before = _samples(client)
    client.put("/documents/m1", json={"text": TEXT})
    client.put("/documents/m2", json={"text": TEXT + " again"})
    for _ in range(3):
        assert client.get("/similar/m1").status_code == 200
    client.get("/documents/nope")
    after = _samples(client)

    def delta(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    route = "/similar/{doc_id:docid}"
    assert delta("neardup_http_requests_total", method="GET", route=route, status="200") == 3
    assert (
        delta(
            "neardup_http_requests_total",
            method="GET",
            route="/documents/{doc_id:docid}",
            status="404",
        )
        == 1
    )
    assert delta("neardup_http_request_duration_seconds_count", method="GET", route=route,
                 status="200") == 3  # fmt: skip
    assert delta("neardup_query_candidates_count") == 3
    assert delta("neardup_candidates_verified_total") == 3  # m2, once per query
    assert delta("neardup_candidates_kept_total") == 3
    assert delta("neardup_redis_roundtrip_seconds_count", op="pipeline") > 0
    assert _value(after, "neardup_documents") == 2


def test_each_request_logs_one_json_line_with_its_id(
    settings, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """A request's X-Request-ID comes back in the response and in its JSON log line."""
    from app.api.app import create_app
    from app.service.logs import JsonFormatter

    with TestClient(create_app(settings.model_copy(update={"log_format": "json"}))) as c:
        logger = logging.getLogger("neardup.access")
        logger.addHandler(caplog.handler)
        try:
            resp = c.get("/healthz", headers={"x-request-id": "req-123"})
            generated = c.get("/documents/missing").headers["x-request-id"]
        finally:
            logger.removeHandler(caplog.handler)
    assert resp.headers["x-request-id"] == "req-123"
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert [(line["request_id"], line["status"]) for line in lines] == [
        ("req-123", 200),
        (generated, 404),
    ]
    assert all(line["duration_ms"] >= 0 and line["route"] for line in lines)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_access_line_written_directly_is_the_formatted_record(fmt: str) -> None:
    """The access line written straight to the handler (the usual case) is the line its
    formatter makes of the LogRecord that logging would carry (when a filter is set)."""
    import io
    import re

    from app.api import observe
    from app.service import logs

    logs.configure(fmt, "info")
    handler = logging.getLogger("neardup").handlers[0]
    assert logs.direct_handler(observe.log, logging.INFO) is handler
    out = io.StringIO()
    handler.setStream(out)  # type: ignore[attr-defined]

    class Route:
        path = "/similar/{doc_id:docid}"

    for client in (("127.0.0.1", 5555), None):
        scope = {"method": "GET", "path": "/similar/ü x", "route": Route(), "client": client}
        observe.record(scope, "req-1", 200, 0.0012345)
        observe.log.addFilter(lambda record: True)  # records now go through logging
        try:
            assert logs.direct_handler(observe.log, logging.INFO) is None
            observe.record(scope, "req-1", 200, 0.0012345)
        finally:
            observe.log.filters.clear()
    direct, logged, direct_none, logged_none = out.getvalue().splitlines()
    if fmt == "json":
        lines = [json.loads(line) for line in (direct, logged, direct_none, logged_none)]
        assert all(
            re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", x.pop("ts")) for x in lines
        )
        assert lines[0] == lines[1] and lines[2] == lines[3]
        assert lines[0]["msg"] == "GET /similar/ü x 200" and lines[0]["duration_ms"] == 1.234
        assert lines[2]["client"] is None
    else:
        stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "
        assert all(re.match(stamp, x) for x in (direct, logged, direct_none, logged_none))
        assert direct[24:] == logged[24:] and direct_none[24:] == logged_none[24:]
        assert direct[24:] == (
            "INFO neardup.access GET /similar/ü x 200 request_id=req-1 method=GET "
            'path="/similar/ü x" route=/similar/{doc_id:docid} status=200 duration_ms=1.234 '
            "client=127.0.0.1:5555"
        )
        assert direct_none.endswith("client=None")


def test_held_access_lines_are_written_in_order_and_soon() -> None:
    """Access lines are held for one write, yet reach the stream by themselves within a
    moment, and before any record logged after them (also through flush)."""
    import io
    import time

    from app.service import logs

    handler = logs.Handler(io.StringIO())
    handler.setFormatter(logs.TextFormatter())
    out = handler.stream
    handler.write_line(logging.INFO, "neardup.access", "first", {})
    handler.write_line(logging.INFO, "neardup.access", "second", {})
    for _ in range(100):  # polls for up to ~5 s; the writer thread writes every 50 ms
        if out.getvalue().count("\n") == 2:
            break
        time.sleep(0.05)
    assert [line.split()[-1] for line in out.getvalue().splitlines()] == ["first", "second"]
    handler.HOLD_SECONDS = 3600.0  # the next write_line's lines wait for the next record
    time.sleep(0.2)  # the writer is in its sleep of the new length
    handler.write_line(logging.INFO, "neardup.access", "third", {})
    handler.handle(logging.makeLogRecord({"name": "neardup", "msg": "fourth", "levelno": 30}))
    handler.write_line(logging.INFO, "neardup.access", "fifth", {})
    handler.flush()
    words = [line.split()[-1] for line in out.getvalue().splitlines()]
    assert words == ["first", "second", "third", "fourth", "fifth"]


def test_holding_an_access_line_never_waits_for_a_write_in_progress() -> None:
    """While the writer thread is in a slow write of held lines (a stream that takes 0.5 s),
    a request's access line is held at once: it takes only the held lines' own lock, not
    the one a write holds (waiting on it cost the paced GET ~0.8 ms of p99)."""
    import io
    import threading
    import time

    from app.service import logs

    writing = threading.Event()

    class Slow(io.StringIO):
        def write(self, text: str) -> int:
            writing.set()
            time.sleep(0.5)
            return super().write(text)

    handler = logs.Handler(Slow())
    handler.setFormatter(logs.TextFormatter())
    handler.write_line(logging.INFO, "neardup.access", "first", {})
    assert writing.wait(5), "the writer thread never wrote"
    started = time.perf_counter()
    handler.write_line(logging.INFO, "neardup.access", "second", {})
    waited = time.perf_counter() - started
    assert waited < 0.25, waited
    handler.flush()
    assert [line.split()[-1] for line in handler.stream.getvalue().splitlines()] == [
        "first",
        "second",
    ]


_SPANS_OF_ONE_REQUEST = """
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.api.app import create_app

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
assert TestClient(create_app()).get("/openapi.json").status_code == 200
print(len(exporter.get_finished_spans()))
"""


@pytest.mark.parametrize(("setting", "traced"), [(None, False), ("1", True)])
def test_fastapi_spans_reach_a_configured_provider_only_with_the_setting(
    tmp_path: Path, setting: str | None, traced: bool
) -> None:
    """NEARDUP_OPENTELEMETRY=1 hands requests to FastAPI's OpenTelemetry; unset, none."""
    env = {k: v for k, v in os.environ.items() if k != "NEARDUP_OPENTELEMETRY"}
    if setting is not None:
        env["NEARDUP_OPENTELEMETRY"] = setting
    env["NEARDUP_DATA_DIR"] = str(tmp_path / "data")
    # A process of its own: a global tracer provider cannot be unset once set.
    done = subprocess.run(
        [sys.executable, "-c", _SPANS_OF_ONE_REQUEST],
        cwd=tmp_path,  # not the source tree, whose app/ has no compiled kernel
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (int(done.stdout.split()[-1]) > 0) is traced


def test_every_metric_family_is_documented() -> None:
    """Each metric app.core.metrics defines has a row in docs/api.md's metrics table."""
    from prometheus_client.metrics import MetricWrapperBase

    from app.core import metrics

    guide = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    documented = set(re.findall(r"^\| `(neardup_\w+)` \|", guide, re.M))
    defined = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            (family,) = value.describe()
            defined.add(family.name + ("_total" if family.type == "counter" else ""))
    assert defined and defined == documented, (defined - documented, documented - defined)
