"""The Docker files, checked without a Docker engine: they parse and agree with the repo."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from support.corpus import neardup_cmd
from support.procs import Server, free_port

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_compose_names_service_redis_volume_and_healthchecks() -> None:
    """Compose parses; Redis has AOF, a named volume and a healthcheck; neardup waits for it."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    redis, app = services["redis"], services["neardup"]
    assert "--appendonly" in redis["command"] and "yes" in redis["command"]
    volume = redis["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]
    assert redis["healthcheck"]["test"] and app["healthcheck"]["test"]
    assert app["depends_on"]["redis"]["condition"] == "service_healthy"
    env = app["environment"]
    assert env["NEARDUP_REDIS_URL"].startswith("redis://redis:")
    assert "NEARDUP_API_KEYS" in env
    assert (ROOT / app["build"]["context"] / app["build"]["dockerfile"]) == DOCKERFILE


def test_dockerfile_copies_only_files_that_exist() -> None:
    """Every COPY source (outside the builder stage's output) is in the repository."""
    for word, rest in _instructions():
        if word != "COPY" or "--from=" in rest:
            continue
        sources = shlex.split(rest)[:-1]
        for src in sources:
            assert (ROOT / src).exists(), f"COPY {src} does not exist"


def test_dockerfile_is_multi_stage_non_root_with_healthcheck() -> None:
    """A builder stage, a runtime stage without a compiler, a USER and a HEALTHCHECK."""
    ins = _instructions()
    stages = [rest for word, rest in ins if word == "FROM"]
    assert len(stages) == 2
    runtime = ins[[i for i, (w, _) in enumerate(ins) if w == "FROM"][1] :]
    assert any(w == "USER" and r not in ("root", "0") for w, r in runtime)
    assert any(w == "HEALTHCHECK" for w, _ in runtime)
    assert not any(w == "RUN" and re.search(r"\bgcc\b", r) for w, r in runtime)


def test_dockerfile_runs_the_command_make_run_uses() -> None:
    """The image's CMD is `neardup serve`, the same command as the Makefile's run target."""
    (cmd,) = [rest for word, rest in _instructions() if word == "CMD"]
    argv = json.loads(cmd)
    makefile = (ROOT / "Makefile").read_text()
    run_recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "neardup serve" in run_recipe
    assert argv[:2] == ["neardup", "serve"]
    assert "--host" in argv and "--port" in argv


def test_base_images_are_pinned_by_digest() -> None:
    """Every image, built from or run, is named by tag and sha256 digest."""
    args = dict(
        rest.split("=", 1) for word, rest in _instructions() if word == "ARG" and "=" in rest
    )
    images = [
        args.get(r.split()[0].strip("${}"), r.split()[0]) for w, r in _instructions() if w == "FROM"
    ]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    images += [s["image"] for s in compose["services"].values() if "image" in s]
    assert images
    for image in images:
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image), image


def test_image_builds_with_the_constraints_and_checks_readiness() -> None:
    """The build resolves with constraints.txt, installs only the built wheels, and the
    HEALTHCHECK is `neardup ready` (run for real below)."""
    ins = _instructions()
    runs = " ".join(r for w, r in ins if w == "RUN")
    assert "--constraint constraints.txt" in runs and "--no-index" in runs
    (check,) = [r for w, r in ins if w == "HEALTHCHECK"]
    assert json.loads(check[check.index("CMD") + 3 :].strip())[:2] == ["neardup", "ready"]


def test_compose_redis_never_evicts_and_api_is_on_loopback() -> None:
    """Compose Redis has a maxmemory and `noeviction`; the API port is published on
    127.0.0.1 unless API_BIND says otherwise; the healthcheck is `neardup ready`."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    redis, app = compose["services"]["redis"], compose["services"]["neardup"]
    cmd = redis["command"]
    assert cmd[cmd.index("--maxmemory-policy") + 1] == "noeviction"
    assert cmd[cmd.index("--maxmemory") + 1]
    (port,) = app["ports"]
    bind, _, published = port.rpartition(":")
    host = re.fullmatch(r"\$\{API_BIND:-([^}]*)\}:(\d+)", bind)
    assert host and host.group(1) == "127.0.0.1" and published == "8000", port
    assert app["healthcheck"]["test"][1:3] == ["neardup", "ready"]


def _health_commands() -> dict[str, list[str]]:
    """The neardup container's health check, as the image and compose give it."""
    (check,) = [r for w, r in _instructions() if w == "HEALTHCHECK"]
    image = json.loads(check[check.index("CMD") + 3 :].strip())
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    test = compose["services"]["neardup"]["healthcheck"]["test"]
    assert test[0] == "CMD"
    return {"image": image, "compose": test[1:]}


def _run_check(argv: list[str], port: int, env: dict[str, str]) -> subprocess.CompletedProcess:
    assert argv[0] == "neardup"
    argv = [*neardup_cmd(), *(a.replace(":8000", f":{port}") for a in argv[1:])]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


KEY = "health-check-key-0123456789"


@pytest.mark.parametrize("where", ["image", "compose"])
def test_the_health_check_passes_on_a_ready_service_with_keys(tmp_path: Path, where: str) -> None:
    """The container's own check command, run with the container's settings (API keys
    set, as compose requires), exits 0 against a ready service and 1 against one whose
    Redis is away."""
    keys = {"NEARDUP_API_KEYS": f"{KEY}:write"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")} | keys
    argv = _health_commands()[where]
    server = Server(tmp_path / "up", **keys)
    try:
        server.wait_ready(authorization=f"Bearer {KEY}")
        done = _run_check(argv, server.port, env)
        assert done.returncode == 0, done.stderr
    finally:
        server.stop()
    away = Server(tmp_path / "away", NEARDUP_REDIS_URL=f"redis://127.0.0.1:{free_port()}", **keys)
    try:
        away.wait_up()
        done = _run_check(argv, away.port, env | {"NEARDUP_REDIS_URL": "redis://127.0.0.1:1"})
        assert done.returncode == 1 and "503" in done.stderr, (done.returncode, done.stderr)
    finally:
        away.stop()


def test_the_health_check_says_when_no_key_may_read_the_collection(tmp_path: Path) -> None:
    """With every configured key limited to other collections (and no NEARDUP_API_KEY), the
    check exits 1 saying so, not with the service's "401: send an API key"."""
    keys = {"NEARDUP_API_KEYS": f"{KEY}:write:mirrors,essays"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")} | keys
    done = _run_check(_health_commands()["image"], free_port(), env)
    assert done.returncode == 1, done.stderr
    assert "may read collection 'default'" in done.stderr and "401" not in done.stderr
