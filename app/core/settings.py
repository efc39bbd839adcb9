"""Service settings, read from NEARDUP_* environment variables."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.core import keys
from app.core.names import COLLECTION_PATTERN, COLLECTION_RULE, valid_collection
from app.core.redis_url import check_redis_url, parse_cluster_url, server_of, shown
from app.core.shingles import canonical_shingle, parse_shingle

__all__ = [
    "COLLECTION_PATTERN",
    "COLLECTION_RULE",
    "Settings",
    "SettingsError",
    "load_settings",
    "replica_url_list",
    "unknown_variables",
    "valid_collection",
]


# What NEARDUP_FINGERPRINT_BITS (and a collection's fingerprint_bits) may be.
FINGERPRINT_BITS = (24, 32)
# The most worker processes `neardup serve` starts (NEARDUP_WORKERS and --workers).
MAX_WORKERS = 1024
# Validation context of a collection's parameters checked against the settings
# (app.service.collections): the service's own keys are not theirs to check again.
PARAMETERS_ONLY = "parameters only"


class Settings(BaseSettings):
    """Everything the service can be configured with; docs/configuration.md lists them."""

    model_config = SettingsConfigDict(env_prefix="NEARDUP_", extra="ignore", frozen=True)

    redis_url: str | None = None
    data_dir: Path = Path("./data")
    collection: str = "default"
    shingle: str = "word:3"
    num_perm: int = Field(128, ge=16, le=1024)
    fingerprint_size: int = Field(256, ge=16, le=4096)
    # Bits of each shingle hash a new collection's fingerprint keeps (fixed with the
    # collection): 24 stores a fingerprint in ~576 bytes instead of ~800 (app.index.params).
    # (An int checked by _valid_fingerprint_bits, not Literal[24, 32]: a literal of ints
    # refuses the string an environment variable or a CLI flag gives.)
    fingerprint_bits: int = 24
    seed: int = Field(1, ge=0, lt=2**63)
    threshold: float = Field(0.5, ge=0.05, le=1.0)
    # Documents a new collection's band buckets are sized for (app.store): past it,
    # Redis memory per document slowly grows; an existing collection keeps its own.
    capacity: int = Field(100_000, ge=1000, le=10_000_000_000)
    # Every shared run of this many words is found by containment queries (fixed with
    # the collection); 0 keeps no passage index.
    passage_words: int = Field(30, ge=0, le=1000)
    # Keep each document's text (compressed, fixed with the collection) so the report
    # page can show a source beside its passages and GET /documents/{id} returns it.
    keep_text: bool = False
    # Seconds a document lives when its ingest names no ttl or expires_at (fixed with the
    # collection); 0 keeps documents until they are deleted.
    default_ttl: int = Field(0, ge=0, le=100 * 365 * 24 * 3600)
    # Seconds a stored check (POST /checks) is kept when it names no ttl of its own.
    check_ttl: int = Field(30 * 24 * 3600, ge=1, le=100 * 365 * 24 * 3600)
    # Pages of a site (text/html with a site) its template is learned from before it is
    # fixed (fixed with the collection, docs/templates.md); 0: no site templates.
    template_pages: int = Field(20, ge=0, le=1000)
    # Seconds between ticks of the expiry sweeper, and documents it removes per tick.
    expiry_interval: float = Field(1.0, gt=0, le=3600)
    expiry_batch: int = Field(100, ge=1, le=100_000)
    # Bounds the work of a query on a hot (boilerplate) band; measured in bench/service.py.
    candidate_cap: int = Field(200, ge=10, le=100_000)
    max_body_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    # Files in (PDF, DOCX, ODT): worker processes that read them at once, and the seconds
    # one file may take before its worker is killed and the request gets a 422.
    extract_workers: int = Field(2, ge=1, le=64)
    extract_timeout: float = Field(20.0, gt=0, le=3600)
    max_text_bytes: int = Field(8 * 1024 * 1024, ge=16)
    durability: Literal["everysec", "always"] = "everysec"
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # FastAPI's own OpenTelemetry spans, metrics and logs, through the process's global
    # providers; off, it costs nothing per request (app.api.app.telemetry).
    opentelemetry: bool = False
    # Short enough that a stopped Redis is a 503 well within 1 s (see Store.connect).
    redis_timeout: float = Field(0.5, gt=0, le=60)
    request_timeout: float = Field(30.0, gt=0, le=3600)
    # Replicas that must have a write before it is acknowledged (Redis WAIT), and how
    # long a write waits for them before it is answered 503; 0 does not wait.
    min_replicas: int = Field(0, ge=0, le=64)
    replica_timeout: float = Field(1.0, gt=0, le=60)
    # Queries read from replicas (a cluster's, or the single server's replicas named in
    # replica_urls, comma-separated), unless a request asks consistency=strong.
    read_from_replicas: bool = False
    replica_urls: str = ""
    # Seconds between background consistency checks that repair what they find
    # (app.index.check); 0 leaves it to `neardup check`.
    check_interval: float = Field(0.0, ge=0, le=7 * 24 * 3600)
    # Requests per second per API key (per client address without one), and how many
    # may come at once; 0 is no limit (app.api.ratelimit). Per worker process.
    rate_limit: float = Field(0.0, ge=0, le=1_000_000)
    rate_burst: int = Field(0, ge=0, le=10_000_000)
    # One check-and-repair pass at start-up, before /readyz answers 200 (app.service.sweeper).
    startup_check: bool = True
    # "key:scope,key:scope" and/or a file of "key scope" lines; see app.core.keys.
    api_keys: SecretStr | None = None
    api_keys_file: Path | None = None
    # Slow clients (app.service.server): seconds a client may take to send its request
    # headers, and its body; open connections per worker process beyond which a new
    # one is answered 503 at once.
    header_timeout: float = Field(10.0, gt=0, le=3600)
    body_timeout: float = Field(60.0, gt=0, le=24 * 3600)
    max_connections: int = Field(1000, ge=1, le=1_000_000)
    # Worker processes of `neardup serve` (its --workers wins); None: one per CPU the
    # process may use, capped (app.service.workers).
    workers: int | None = Field(None, ge=1, le=MAX_WORKERS)

    @field_validator("redis_url")
    @classmethod
    def _valid_redis_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        check_redis_url(value)  # raises ValueError with the reason
        return value

    @field_validator("replica_urls")
    @classmethod
    def _valid_replica_urls(cls, value: str) -> str:
        for url in replica_url_list(value):
            check_redis_url(url)  # raises ValueError with the reason
            if url.startswith("redis+cluster"):
                raise ValueError("name a single server's replicas; a cluster's are found by itself")
        return value

    @field_validator("api_keys")
    @classmethod
    def _valid_keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        keys.parse_keys(value.get_secret_value())  # raises ValueError, never naming a key
        return value

    @field_validator("api_keys_file")
    @classmethod
    def _valid_key_file(cls, value: Path | None) -> Path | None:
        if value is not None:
            keys.read_key_file(value)
        return value

    @field_validator("shingle")
    @classmethod
    def _valid_shingle(cls, value: str) -> str:
        return canonical_shingle(value)  # raises ValueError with the reason

    @field_validator("fingerprint_bits")
    @classmethod
    def _valid_fingerprint_bits(cls, value: int) -> int:
        if value not in FINGERPRINT_BITS:
            raise ValueError(f"fingerprint bits are 24 or 32, got {value}")
        return value

    @model_validator(mode="after")
    def _keys_agree(self, info: ValidationInfo) -> Settings:
        """A key in both NEARDUP_API_KEYS and the key file has one grant (never named);
        not asked again when a collection's parameters are checked (PARAMETERS_ONLY)."""
        if info.context == PARAMETERS_ONLY:
            return self
        if self.api_keys is not None and self.api_keys_file is not None:
            keys.KeyRing.load(self.api_keys.get_secret_value(), self.api_keys_file)
        return self

    @model_validator(mode="after")
    def _replicas_of_the_master(self) -> Settings:
        """NEARDUP_REPLICA_URLS names replicas of NEARDUP_REDIS_URL's single server, in
        its database: anything else would answer queries from another store."""
        named = replica_url_list(self.replica_urls)
        if not named:
            return self
        if self.redis_url is None:
            raise ValueError(
                "NEARDUP_REPLICA_URLS names replicas of NEARDUP_REDIS_URL's server; without "
                "NEARDUP_REDIS_URL the service runs a Redis of its own, which has none: set "
                "NEARDUP_REDIS_URL to their master, or unset NEARDUP_REPLICA_URLS"
            )
        if parse_cluster_url(self.redis_url) is not None:
            raise ValueError(
                "NEARDUP_REPLICA_URLS is for a single server: a cluster's replicas are found "
                "from its slot map; unset NEARDUP_REPLICA_URLS"
            )
        master = server_of(self.redis_url)
        for url in named:
            replica = server_of(url)
            if replica[:2] == master[:2]:
                raise ValueError(
                    f"NEARDUP_REPLICA_URLS names the master itself ({shown(url)}): "
                    "name its replicas"
                )
            if replica[2] != master[2]:
                raise ValueError(
                    f"NEARDUP_REPLICA_URLS: {shown(url)} reads database {replica[2]}, "
                    f"NEARDUP_REDIS_URL database {master[2]}: a replica holds the master's "
                    "databases under the same numbers, so name the same one"
                )
        return self

    @model_validator(mode="after")
    def _passages_hold_a_shingle(self) -> Settings:
        kind, k = parse_shingle(self.shingle)
        words = k if kind == "word" else 3  # char collections winnow word:3 passages
        if 0 < self.passage_words < words:
            raise ValueError(
                f"passage_words (NEARDUP_PASSAGE_WORDS) must be 0 (no passage index) or at "
                f"least {words}, "
                f"the words of one shingle"
            )
        return self

    @field_validator("collection")
    @classmethod
    def _valid_collection(cls, value: str) -> str:
        if not valid_collection(value):
            raise ValueError(f"use {COLLECTION_RULE}")
        return value


class SettingsError(Exception):
    """Settings that cannot start the service; the message names each variable."""


# NEARDUP_* variables that are not settings of the service but are read elsewhere: the
# CLI's key, the kernel's SIMD switch, the kernel build's flags, and the tests' own (fuzz
# depth, whether the browser suite must run, where screenshots go). Add a new one here.
OTHER_VARIABLES = frozenset(
    {
        "NEARDUP_API_KEY",
        "NEARDUP_SIMD",
        "NEARDUP_CFLAGS",
        "NEARDUP_FUZZ_EXAMPLES",
        "NEARDUP_REQUIRE_BROWSER",
        "NEARDUP_SCREENSHOTS",
    }
)


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per NEARDUP_* variable that nothing reads, with the closest real name.

    A misspelt setting (NEARDUP_THRESHHOLD) would otherwise leave the default in force
    without a word.
    """
    known = {f"NEARDUP_{name.upper()}" for name in Settings.model_fields} | OTHER_VARIABLES
    lines = []
    for name in sorted(os.environ if environ is None else environ):
        upper = name.upper()
        if upper.startswith("NEARDUP_") and upper not in known:
            # Compared without the prefix, which every name shares.
            suffixes = sorted(k.removeprefix("NEARDUP_") for k in known)
            close = difflib.get_close_matches(upper[8:], suffixes, n=1, cutoff=0.7)
            hint = f"did you mean NEARDUP_{close[0]}?" if close else "no setting is named alike"
            lines.append(f"{name}: not a neardup setting ({hint}); unset it or fix its name")
    return lines


# What the kernel (native/cpu.c) takes in NEARDUP_SIMD to force its scalar paths; it
# reads the variable itself, so a value it does not know would silently leave SIMD on.
SIMD_OFF = ("off", "0", "scalar", "none")


def simd_variable(environ: Mapping[str, str] | None = None) -> list[str]:
    """A line saying what is wrong with NEARDUP_SIMD, if it is set to what the kernel
    does not take (empty: as if unset)."""
    value = (os.environ if environ is None else environ).get("NEARDUP_SIMD")
    if not value or value in SIMD_OFF:
        return []
    return [
        f"NEARDUP_SIMD: {value!r} is not a value it takes: set it to off (or 0, scalar, "
        "none) to force the kernel's scalar paths, or unset it to let the kernel choose"
    ]


def rule_said(err: ErrorDetails) -> str:
    """What a broken rule says, without pydantic's "Value error, " before a validator's
    own message."""
    return err["msg"].removeprefix("Value error, ")


def load_settings(**overrides: object) -> Settings:
    """Read the settings, turning validation errors and unknown NEARDUP_* variables
    into one readable message."""
    lines = unknown_variables() + simd_variable()
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        for err in exc.errors():
            if not err["loc"]:  # a rule across settings: its message names them; its
                # input is every setting, secrets included, so it is never printed
                lines.append(rule_said(err))
                continue
            name = "NEARDUP_" + "_".join(str(p) for p in err["loc"]).upper()
            # may hold a password
            secret = name in ("NEARDUP_API_KEYS", "NEARDUP_REDIS_URL", "NEARDUP_REPLICA_URLS")
            got = "hidden" if secret else repr(err.get("input"))
            lines.append(f"{name}: {rule_said(err)} (got {got})")
    if lines:
        raise SettingsError("invalid settings:\n  " + "\n  ".join(lines))
    return settings


def replica_url_list(value: str) -> list[str]:
    """The URLs of NEARDUP_REPLICA_URLS, in order."""
    return [u.strip() for u in value.split(",") if u.strip()]
