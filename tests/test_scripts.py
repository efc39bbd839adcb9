"""The store's Lua scripts take the constants they share with Python from one place
(app/store/layout.py, through the generated preamble), and the one-entry and
many-entry band scripts share one add and one remove body."""

from __future__ import annotations

import re
from importlib import resources

import redis

from app.store import scripts
from app.store.layout import BAND_KEY, HANDLE, SPILLED

LUA = {p.name: p.read_text() for p in resources.files(scripts).iterdir() if p.name.endswith(".lua")}


def test_no_script_types_a_shared_constant() -> None:
    """No .lua file spells the spill marker (in any escape), the handle space 2**32 or
    a handle's struct format: each comes from the preamble."""
    marker = re.compile(r"\\255|\\xff|\\377", re.IGNORECASE)
    for name, source in LUA.items():
        assert not marker.search(source), name
        assert "4294967296" not in source, name
    for name in ["band_ops.lua", "band_entries.lua", "rank.lua", "candidates.lua"]:
        assert "<I4" not in LUA[name], name


def test_the_preamble_gives_the_layout_constants(redis_url: str) -> None:
    """Run by Redis, the preamble's constants are layout.py's values: the marker's bytes,
    a handle packed as HANDLE packs it, the sizes of a handle and a band key, 2**32."""
    client = redis.Redis.from_url(redis_url)
    try:
        probe = b"return {SPILLED, struct.pack(HANDLE, 258), HANDLE_BYTES, BAND_KEY_BYTES, "
        got = client.eval(scripts.PREAMBLE + probe + b"tostring(HANDLES)}", 0)
    finally:
        client.close()
    assert got == [SPILLED, HANDLE.pack(258), HANDLE.size, BAND_KEY.size, str(2**32).encode()]
    assert SPILLED == b"\xff" * 4 and HANDLE.size == 4 and BAND_KEY.size == 8


def test_every_script_starts_with_the_preamble() -> None:
    """Every loaded script is the preamble, then its files; every .lua file that is not a
    half shared by others is loaded as a script of its name."""
    loaded = [v for v in vars(scripts).values() if isinstance(v, scripts.Script)]
    halves = {"band_ops.lua", "band_entries.lua", "rank.lua", "id_ops.lua", "lock_ops.lua"}
    assert sorted(s.name + ".lua" for s in loaded) == sorted(set(LUA) - halves)
    for script in loaded:
        assert script.source.startswith(scripts.PREAMBLE), script.name


def test_one_add_and_one_remove_body() -> None:
    """The one-entry and many-entry band scripts call band_ops.lua's bodies and touch
    Redis only through them; the bodies are defined once, in band_ops.lua."""
    for name in ["band_add.lua", "band_remove.lua", "band_add_many.lua", "band_remove_many.lua"]:
        assert "redis.call" not in LUA[name], name
        verb = "band_add(" if "add" in name else "band_remove("
        assert verb in LUA[name], name
    defined = [n for n, s in LUA.items() if "local function band_add(" in s]
    assert defined == ["band_ops.lua"]
    for script in [scripts.BAND_ADD, scripts.BAND_ADD_MANY]:
        assert script.source.count(b"local function band_add(") == 1
    for script in [scripts.BAND_REMOVE, scripts.BAND_REMOVE_MANY]:
        assert script.source.count(b"local function band_remove(") == 1
