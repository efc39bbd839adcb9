"""Schemathesis against the service's own OpenAPI schema: a real `neardup serve` on a real Redis.

Every operation the schema names gets the coverage phase's boundary cases and
up to MAX_EXAMPLES generated ones (valid and invalid), within a time budget.
No answer may be a 5xx, and every answer must be declared in the schema: its
status code, its content type, its body and its headers.

Not checked: schemathesis's positive_data_acceptance, which expects a 2xx for
every body the schema allows. The service refuses some schema-valid input on
purpose, with a declared 422 (a text with no words, a threshold below the
collection's, a text over NEARDUP_MAX_TEXT_BYTES, an id over 512 bytes of UTF-8
that the schema can only bound in characters).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from support.procs import Server

MAX_EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "30"))
BUDGET_S = 45.0  # for all operations together; later ones get fewer examples past it
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
    unsupported_method,  # a 405 and its Allow, for the methods an operation lacks
]
MIN_CASES = 3  # of its own method, per operation: fewer and the fuzzer did not reach it
RAN: dict[str, int] = {}
STARTED: list[float] = []


@pytest.fixture(scope="module")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(
        tmp_path_factory.mktemp("fuzz"),
        NEARDUP_REDIS_URL=redis_url,
        NEARDUP_COLLECTION=f"fuzz{os.getpid()}",
        NEARDUP_LOG_LEVEL="warning",
        NEARDUP_MAX_TEXT_BYTES="65536",
    )
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _schema() -> dict:
    """The schema the service serves, built by the same app factory."""
    from app.api.app import create_app
    from app.core.settings import load_settings

    # Keys from the environment would add security to the schema; the fuzzed server has none.
    settings = load_settings(redis_url="unix:///nonexistent", api_keys=None, api_keys_file=None)
    return create_app(settings).openapi()


# from_dict, not pytest.from_fixture: the lazy loader does not work with pytest 9.
schema = schemathesis.openapi.from_dict(_schema())


@pytest.fixture
def reached(service: Server) -> Iterator[list[int]]:
    """One operation's test: the cases of its own method it ran, at least MIN_CASES when it
    ends, and no traceback in the server's log by then. Checked per test, not by a test run
    after them all, which pytest-xdist may run in a process that ran none of them."""
    count = [0]
    yield count
    assert count[0] >= MIN_CASES, f"the fuzzer ran {count[0]} cases of this operation"
    assert "Traceback" not in service.output()


def test_served_schema_is_the_fuzzed_one(service: Server) -> None:
    """What the running service serves is what the fuzzer generates from."""
    assert httpx.get(service.url + "/openapi.json").json() == _schema()


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_api_conforms_to_its_schema(case, service: Server, reached: list[int]) -> None:  # type: ignore[no-untyped-def]
    """No 5xx, and every status, content type, body and header is the schema's; each
    operation reached (MIN_CASES cases) with no traceback in the log."""
    if not STARTED:
        STARTED.append(time.monotonic())
    # Cases with a method the operation does not have (405s) count apart.
    op = case.operation
    key = (
        f"{op.method.upper()} {op.path}"
        if case.method.upper() == op.method.upper()
        else "other methods"
    )
    if time.monotonic() - STARTED[0] > BUDGET_S and RAN.get(key, 0) >= 5:
        return  # over the budget: a few cases per operation are still run
    RAN[key] = RAN.get(key, 0) + 1
    if key != "other methods":
        reached[0] += 1
    case.call_and_validate(base_url=service.url, checks=CHECKS, timeout=10)
