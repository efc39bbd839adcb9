"""Containment's flag (app.index.disguise): per passage, how many words of the query's span held
look-alike letters or invisible characters; none on a verbatim passage, none on tokenizer 1."""

from __future__ import annotations

import random
from dataclasses import asdict

import numpy as np
import orjson
from fastapi.testclient import TestClient
from support import oracle
from support.cluster import sync_client
from support.corpus import read_corpus
from support.disguise import disguise

from app.index.disguise import count_in
from app.store.layout import Layout

DISGUISED_BITS = oracle.FOLD_CONFUSABLE | oracle.FOLD_INVISIBLE


def _articles(n: int) -> list[str]:
    """n articles of the corpus sharing no word trigram (a copied passage has one source)."""
    kept: list[str] = []
    seen: set = set()
    for _, text in read_corpus():
        shingles = oracle.shingles(text)
        if len(text.split()) > 200 and not shingles & seen:
            kept.append(text)
            seen |= shingles
        if len(kept) == n:
            return kept
    raise AssertionError("the corpus has too few unrelated articles")


def _query() -> tuple[str, str, str]:
    """Two sources and a query holding a disguised passage of the first and a verbatim one of
    the second."""
    a, b = _articles(2)
    copied_a = " ".join(a.split()[10:90])
    copied_b = " ".join(b.split()[20:100])
    text = (
        "My own opening words about quiet gardens come first.\n\n"
        + disguise(copied_a, seed=3, rate=0.5)
        + "\n\nThen wholly original prose about weather and rivers.\n\n"
        + copied_b
    )
    return a, b, text


def _oracle_count(text: str, start: int, end: int, version: int = 3) -> int:
    """The words inside [start, end) whose folds were look-alikes (tokenizer 3: beside Latin
    letters) or invisibles, as the collection's tokenizer reads them (the service's: 3)."""
    return sum(
        1
        for letters, flags in oracle.word_letters2(text, version=version)
        if flags & DISGUISED_BITS and start <= letters[0][1] and letters[-1][1] < end
    )


def _contained(client: TestClient, prefix: str, text: str) -> list[dict]:
    resp = client.post(
        f"{prefix}/similar",
        json={"text": text, "measure": "containment", "evidence": True, "threshold": 0.05},
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["results"]


def test_count_in_matches_a_brute_force_count() -> None:
    """count_in counts the words overlapping each span, as a loop over every word does."""
    rng = random.Random(7)
    for _ in range(200):
        at, spans_of_words = 0, []
        for _ in range(rng.randrange(0, 30)):
            at += rng.randrange(1, 5)
            length = rng.randrange(1, 6)
            spans_of_words.append((at, at + length))
            at += length
        starts = np.array([s for s, _ in spans_of_words], np.int64)
        ends = np.array([e for _, e in spans_of_words], np.int64)
        spans = []
        for _ in range(rng.randrange(0, 6)):
            lo = rng.randrange(0, at + 3)
            spans.append((lo, lo + rng.randrange(0, 25)))
        expected = [sum(1 for s, e in spans_of_words if s < hi and e > lo) for lo, hi in spans]
        assert count_in(starts, ends, spans) == expected


def test_a_disguised_passage_is_flagged_and_a_verbatim_one_is_not(
    client: TestClient,
) -> None:
    """On tokenizer 3 the disguised passage's answer says how many of its words were
    disguised (the oracle's count of look-alike or invisible words in its span, more than
    zero), and the verbatim passage's answer has no "disguised" at all."""
    a, b, text = _query()
    for doc_id, body in (("a", a), ("b", b)):
        assert client.put(f"/documents/{doc_id}", json={"text": body}).status_code == 201
    found = {r["id"]: r["passages"] for r in _contained(client, "", text)}
    assert set(found) == {"a", "b"}
    assert sum(p.get("disguised", 0) for p in found["a"]) >= 5
    for p in found["a"]:
        expected = _oracle_count(text, p["query_start"], p["query_end"])
        assert p.get("disguised", 0) == expected
        assert p.get("disguised", 1) > 0  # absent or a positive count, never 0
    assert all("disguised" not in p for p in found["b"])
    # A stored document's query has no query text of its own to flag.
    stored = client.get("/similar/a?measure=containment&evidence=true&threshold=0.05").json()
    assert all("disguised" not in p for r in stored["results"] for p in r["passages"])


def test_a_stored_documents_kept_text_flags_as_its_text_does(client: TestClient) -> None:
    """In a collection that keeps texts, a stored document asked by id flags its disguised
    words per passage exactly as the same text sent does (an outside review: by id the
    answer had no flags although the text was at hand)."""
    a, b, text = _query()
    made = client.post("/collections", json={"name": "kept", "keep_text": True})
    assert made.status_code == 201, made.text
    for doc_id, body in (("a", a), ("b", b), ("q", text)):
        put = client.put(f"/collections/kept/documents/{doc_id}", json={"text": body})
        assert put.status_code == 201
    by_text = {r["id"]: r["passages"] for r in _contained(client, "/collections/kept", text)}
    by_id = client.get(
        "/collections/kept/similar/q?measure=containment&evidence=true&threshold=0.05"
    ).json()
    got = {r["id"]: r["passages"] for r in by_id["results"]}
    assert sum(p.get("disguised", 0) for p in got["a"]) >= 5
    assert got["a"] == by_text["a"] and got["b"] == by_text["b"]


def test_tokenizer_1_collections_are_never_flagged(
    settings, store_url: str, collection: str
) -> None:  # type: ignore[no-untyped-def]
    """A collection on tokenizer 1 (a config without the field, as written before tokenizer
    2) still finds the lightly disguised copy's plain stretches, and flags none of them."""
    from app.api.app import create_app
    from app.service.runtime import params_of

    old = asdict(params_of(settings))
    del old["tokenizer"]
    sync_client(store_url).set(
        Layout(collection).config, orjson.dumps(old, option=orjson.OPT_SORT_KEYS)
    )
    a, _ = _articles(1)[0], None
    copied = " ".join(a.split()[10:150])
    text = disguise(copied, seed=5, rate=0.08)
    with TestClient(create_app(settings)) as client:
        assert client.get(f"/collections/{collection}").json()["parameters"]["tokenizer"] == 1
        assert client.put("/documents/a", json={"text": a}).status_code == 201
        found = _contained(client, "", text)
        assert [r["id"] for r in found] == ["a"] and found[0]["passages"]
        spans = found[0]["passages"]
        # Disguised words lie inside the found passages' spans, yet none is flagged.
        assert any(_oracle_count(text, p["query_start"], p["query_end"]) for p in spans)
        assert all("disguised" not in p for p in spans)


def _russian(words: int, seed: int) -> str:
    """Russian-looking prose: words of the Russian alphabet, most letters with a Latin
    look-alike."""
    rng = random.Random(seed)
    letters = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
    return " ".join(
        "".join(rng.choice(letters) for _ in range(rng.randrange(2, 9))) for _ in range(words)
    )


def test_a_verbatim_russian_passage_is_not_flagged(client: TestClient) -> None:
    """A Russian passage copied as it is, found on tokenizer 3, has no "disguised": its words
    are written wholly in Cyrillic (tokenizer 2 flagged nearly all of them)."""
    source = _russian(400, seed=5)
    copied = " ".join(source.split()[50:150])
    text = "My own opening words about quiet gardens come first.\n\n" + copied
    assert _oracle_count(text, 0, len(text), version=2) > 50
    assert client.put("/documents/ru", json={"text": source}).status_code == 201
    found = {r["id"]: r["passages"] for r in _contained(client, "", text)}
    assert found.get("ru")
    assert all("disguised" not in p for p in found["ru"])
    # the same passage with one Latin letter slipped into a word is flagged, once
    words = copied.split()
    at = next(i for i, w in enumerate(words) if i > 40 and "\u043e" in w)  # inside the passage
    words[at] += "x"
    mixed = text.replace(copied, " ".join(words))
    assert _oracle_count(mixed, 0, len(mixed)) == 1
    passages = {r["id"]: r["passages"] for r in _contained(client, "", mixed)}["ru"]
    assert sum(p.get("disguised", 0) for p in passages) == 1


def test_an_invisible_character_between_words_flags_no_passage(client: TestClient) -> None:
    """A byte-order mark opening the text, or a zero-width space or direction mark after the
    sentence before a verbatim copy (a space between), disguises no word of it; the same
    character inside the copy's first word does."""
    (source,) = _articles(1)
    copied = " ".join(source.split()[10:90])
    assert client.put("/documents/src", json={"text": source}).status_code == 201
    for before in ("\ufeff", "My own words here.\u200b ", "My own words here.\u200e "):
        (found,) = _contained(client, "", before + copied)
        assert found["id"] == "src" and found["passages"]
        assert all("disguised" not in p for p in found["passages"]), repr(before)
    assert copied[:2].isalnum()  # the first word: the character goes inside it
    glued = "My own words here. " + copied[:1] + "\u200b" + copied[1:]
    (found,) = _contained(client, "", glued)
    assert sum(p.get("disguised", 0) for p in found["passages"]) == 1


def test_vowel_signs_are_not_taken_for_invisible_characters(  # type: ignore[no-untyped-def]
    settings,
) -> None:
    """A zero-width space standing alone between words flags no word in scripts whose words
    carry vowel signs (Devanagari, Thai), as in Latin; inside a word it does."""
    from app.index.disguise import disguised_spans
    from app.service.runtime import params_of

    params = params_of(settings)
    hindi = "\u0928\u092e\u0938\u094d\u0924\u0947 \u200b \u0926\u0941\u0928\u093f\u092f\u093e"
    thai = "Thai \u200b \u0e01\u0e34\u0e19\u0e02\u0e49\u0e32\u0e27"
    for text in (hindi, thai, "x \u200b word"):
        starts, _ = disguised_spans(params, text)
        assert len(starts) == 0, text
    starts, ends = disguised_spans(params, "plain wo\u200brd here")
    assert [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)] == [(6, 11)]


def test_an_invisible_character_beside_a_space_flags_no_word(settings) -> None:  # type: ignore[no-untyped-def]
    """A zero-width space right after a word or right before one, with a space on its other
    side, splits nothing and flags nothing (the kernel gives it to the word beside it); one
    between a word and punctuation, with no space, or inside a word, does."""
    from app.index.disguise import disguised_spans
    from app.service.runtime import params_of

    params = params_of(settings)
    for text in ("plain word\u200b word here", "Done. \u200bNext one", "Done.\u200b Next one"):
        starts, _ = disguised_spans(params, text)
        assert len(starts) == 0, repr(text)
    for text, word in (("plain wo\u200brd here", (6, 11)), ("one word\u200b, two", (4, 8))):
        starts, ends = disguised_spans(params, text)
        assert [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)] == [word], text


def test_a_line_end_hyphen_flags_no_word_and_a_soft_hyphen_within_a_line_does(
    client: TestClient,
) -> None:
    """A copy broken across lines by a hyphen (ASCII, U+2010, or a soft hyphen as PDF viewers
    copy it) is typesetting, not a disguise: no passage is flagged. A soft hyphen inside a word
    within a line hides the word from a reader's search: that word is flagged."""
    (source,) = _articles(1)
    words = source.split()[10:90]
    assert client.put("/documents/src", json={"text": source}).status_code == 201
    at = next(i for i, w in enumerate(words[20:], 20) if w.isalpha() and len(w) >= 6)
    for hyphen in ("-", "\u2010", "\u00ad"):
        broken = words[at][:3] + hyphen + "\n" + words[at][3:]
        copied = " ".join([*words[:at], broken, *words[at + 1 :]])
        assert _oracle_count(copied, 0, len(copied)) == 0, repr(hyphen)
        (found,) = _contained(client, "", "My own words here.\n" + copied)
        assert found["id"] == "src" and found["passages"]
        assert all("disguised" not in p for p in found["passages"]), repr(hyphen)
    soft = words[at][:3] + "\u00ad" + words[at][3:]
    copied = " ".join([*words[:at], soft, *words[at + 1 :]])
    assert _oracle_count(copied, 0, len(copied)) == 1
    (found,) = _contained(client, "", "My own words here.\n" + copied)
    assert sum(p.get("disguised", 0) for p in found["passages"]) == 1


def test_joiners_with_work_to_do_and_micro_units_flag_nothing(settings) -> None:  # type: ignore[no-untyped-def]
    """Text copied as it is flags no word where a joiner or variation selector has work to
    do (Persian ZWNJ, a Hindi conjunct's ZWJ, an emoji keycap) or a unit has the micro prefix
    (10 μM, 5 µm); the same joiner between two Latin letters, a zero-width space in Persian,
    and a Cyrillic look-alike in an English word still flag theirs."""
    from app.index.disguise import disguised_spans
    from app.service.runtime import params_of

    params = params_of(settings)
    persian = "\u0645\u06cc\u200c\u0634\u0648\u0645 \u06a9\u062a\u0627\u0628\u200c\u0647\u0627"
    hindi = "\u0915\u094d\u200d\u0937 \u0928\u0939\u0940\u0902"
    for text in (
        persian,
        hindi,
        "Step 1\ufe0f\u20e3 then",
        "add 10 \u03bcM and 5 \u00b5m of it",
        "TSH 2.5 \u03bcIU/mL, 5 \u03bcm\u00b2",
    ):
        starts, _ = disguised_spans(params, text)
        assert len(starts) == 0, repr(text)
    for text, word in (
        ("the pa\u200dypal site", (4, 11)),
        ("\u0645\u06cc\u200b\u0634\u0648\u0645 x", (0, 6)),
        ("the \u0440aypal site", (4, 10)),
        ("its \u03bcMicrosoft ad", (4, 14)),
        ("a \u03bcan here", (2, 5)),
        ("the\u3164quick fox", (0, 3)),
    ):
        starts, ends = disguised_spans(params, text)
        assert [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)] == [word], text


def test_mathematical_and_mixed_width_letters_flag_their_words(settings) -> None:  # type: ignore[no-untyped-def]
    """A word written in mathematical bold, italic or double-struck letters (the Letterlike
    ones among them), or mixing full-width and ASCII Latin letters, is flagged (tokenizers
    fold both to plain letters, so the copy is found); a formula's one-letter variables and
    two-letter products (mc², dx), a ligature and a word set wholly full-width are not."""
    from app.index.disguise import disguised_spans
    from app.service.runtime import params_of

    params = params_of(settings)
    bold = "".join(chr(0x1D41A + ord(c) - ord("a")) for c in "quick")
    italic = "".join(chr(0x1D44E + ord(c) - ord("a")) for c in "fox")
    m, c, d, x, a = (chr(0x1D44E + ord(ch) - ord("a")) for ch in "mcdxa")
    for text in (
        f"where {chr(0x1D465)} is {chr(0x1D466)} plus one",
        f"Einstein wrote E = {m}{c}\u00b2 in 1905",
        f"integrate f({x}) {d}{x} and {a}{x} + b",
        "f: \u211d\u207f \u2192 \u211d, E = \u210f\u03c9, the \u2113p norm, in \u2102\u207f",
        "the \ufb01rst file",
        "\uff37\uff49\uff44\uff45 words",
    ):
        starts, _ = disguised_spans(params, text)
        assert len(starts) == 0, repr(text)
    for text, word in (
        (f"the {bold} brown fox", (4, 9)),
        (f"a {italic} ran", (2, 5)),
        ("the \uff51uick fox", (4, 9)),
        (f"the q{bold[1:]} fox", (4, 9)),
        ("a \u210d\u212f\u2113\u2113\u2134 there", (2, 7)),
        (f"a \u210e{italic[1]}\u2113\u2113\u2134 there", (2, 7)),
    ):
        starts, ends = disguised_spans(params, text)
        assert [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)] == [word], text
