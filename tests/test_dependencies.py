"""Dependencies: bounded in pyproject.toml, pinned in constraints.txt, and the redis-py
internals app/store/resp.py reads still where it reads them."""

from __future__ import annotations

import asyncio
import inspect
import tomllib
from pathlib import Path

import hiredis
import redis.asyncio
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from app.store import resp

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not a pin (name==version)"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    extras = [r for group in PROJECT["optional-dependencies"].values() for r in group]
    return [Requirement(r) for r in [*PROJECT["dependencies"], *extras]]


def test_every_dependency_has_an_upper_bound() -> None:
    """Each runtime and test dependency is bounded above (a new major is an upgrade)."""
    for req in _requirements():
        assert any(s.operator in ("<", "<=", "==", "~=") for s in req.specifier), (
            f"{req.name} has no upper bound"
        )


def test_redis_py_is_bounded_at_the_next_minor() -> None:
    """redis-py's private internals are used, so its bound is tighter than a major."""
    (req,) = [r for r in map(Requirement, PROJECT["dependencies"]) if r.name == "redis"]
    (upper,) = [Version(s.version) for s in req.specifier if s.operator == "<"]
    (lower,) = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert upper.major == lower.major and upper.minor <= lower.minor + 2, req


def test_constraints_pin_every_dependency_within_its_bounds() -> None:
    """constraints.txt pins each dependency at a version pyproject.toml allows."""
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in constraints.txt (run `make lock`)"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])


def test_installed_versions_are_the_pinned_ones() -> None:
    """The environment the tests run in is the one constraints.txt describes."""
    from importlib.metadata import version

    for name in ("redis", "hiredis", "fastapi", "pydantic", "numpy", "uvicorn"):
        assert Version(version(name)) == _pins()[canonicalize_name(name)], name


def test_redis_py_internals_that_resp_reads_are_there(redis_url: str) -> None:
    """The bulk reply path of resp.roundtrip and the pipe's are taken: redis-py's async
    connection still has a hiredis parser with _reader and read_from_socket, a StreamWriter
    as _writer, and NOT_ENOUGH_DATA.

    If this fails after a redis-py upgrade, app/store/resp.py needs a look before the
    bound in pyproject.toml moves: it would silently fall back to the slow path."""
    from redis._parsers import hiredis as redis_hiredis

    assert hasattr(redis_hiredis, "NOT_ENOUGH_DATA"), "redis._parsers.hiredis moved"
    assert resp._INCOMPLETE is redis_hiredis.NOT_ENOUGH_DATA

    async def probe() -> list[object]:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            conn = await client.connection_pool.get_connection()
            await conn.connect()
            parser = getattr(conn, "_parser", None)
            assert isinstance(getattr(parser, "_reader", None), hiredis.Reader), parser
            assert inspect.iscoroutinefunction(getattr(parser, "read_from_socket", None))
            # The pipe's path (app.store.pipe): a plain write on the connection's stream.
            assert isinstance(getattr(conn, "_writer", None), asyncio.StreamWriter), conn
            assert resp.bulk_readable(conn)
            payload = b"".join(conn.pack_command("PING") + conn.pack_command("ECHO", "x"))
            replies = await resp.roundtrip(conn, payload, 2)
            await client.connection_pool.release(conn)
            return replies
        finally:
            await client.aclose()

    replies = asyncio.run(probe())
    assert [bytes(r) if isinstance(r, bytes) else r for r in replies] in (
        [b"PONG", b"x"],
        [True, b"x"],
    ), replies


def test_make_install_uses_the_constraints() -> None:
    """`make install` (and so `make test` and CI) installs with constraints.txt."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\n$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "-c constraints.txt" in recipe and "constraints.txt" in makefile.split("SOURCES")[1]


def test_uvicorn_protocol_internals_are_where_the_server_extends_them() -> None:
    """app/service/server.py subclasses uvicorn's httptools protocol: the callbacks it
    overrides and the attributes it reads are still there, and uvicorn is bounded tight."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    for name in (
        "connection_made", "data_received", "connection_lost", "on_message_begin",
        "on_headers_complete", "handle_websocket_upgrade", "on_body", "on_message_complete",
    ):  # fmt: skip
        assert callable(getattr(HttpToolsProtocol, name, None)), name
    init = inspect.getsource(HttpToolsProtocol.__init__)
    for attribute in ("self.connections", "self.loop", "self.transport", "self.cycle"):
        assert attribute in init, attribute
    (req,) = [r for r in map(Requirement, PROJECT["dependencies"]) if r.name == "uvicorn"]
    (upper,) = [Version(s.version) for s in req.specifier if s.operator == "<"]
    (lower,) = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert upper.major == lower.major and upper.minor <= lower.minor + 2, req
