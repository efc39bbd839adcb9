"""Settings for tests that open the app or the index in their own process."""

from __future__ import annotations

from typing import Any

# The Redis timeout of services and apps that tests start: these tests prove answers,
# not timeouts, and a loaded CI machine must not turn a slow reply into a 503. A test of
# the quick 503 gives its own (the default's 0.5 s).
LOADED_REDIS_TIMEOUT = 5.0


def loaded_settings(**fields: Any) -> Any:
    """load_settings(**fields), with LOADED_REDIS_TIMEOUT unless fields name a timeout."""
    from app.core.settings import load_settings

    fields.setdefault("redis_timeout", LOADED_REDIS_TIMEOUT)
    return load_settings(**fields)
