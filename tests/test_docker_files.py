"""The Docker files, checked without a Docker engine: they parse and agree with the repo."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

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
