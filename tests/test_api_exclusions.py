"""POST /similar with exclude: quoted copies, a copied bibliography and short copies are
set aside and listed, and an unquoted copy is still found."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.corpus import read_corpus

pytestmark = pytest.mark.both_stores


def _sources() -> dict[str, str]:
    """Four corpus articles' first 45 words, checked to share no 4 words in a row; the
    third written as a reference list (three entries of an author, a year and 15 of its
    words), the one the essay cites."""
    chosen: dict[str, str] = {}
    seen: set[tuple[str, ...]] = set()
    for doc_id, text in read_corpus()[200:]:
        words = text.split()[:45]
        runs = {tuple(oracle.words(" ".join(words))[i : i + 4]) for i in range(42)}
        if len(words) == 45 and not runs & seen:
            chosen[doc_id] = " ".join(words)
            seen |= runs
        if len(chosen) == 4:
            cited = list(chosen)[2]
            words = chosen[cited].split()
            chosen[cited] = "\n".join(
                f"{name}, {name[0]}. ({2000 + i}). {' '.join(words[15 * i : 15 * i + 15])}."
                for i, name in enumerate(("Abbott", "Barlow", "Chen"))
            )
            return chosen
    raise AssertionError("the corpus has four distinct articles")


OWN = (
    "This essay was written by its author in words of her own about matters of the day, "
    "and it goes on for a while so that the copied parts are only a share of it."
)


@pytest.fixture
def essay(client: TestClient) -> dict[str, str]:
    src = _sources()
    body = {"documents": [{"id": k, "text": v} for k, v in src.items()]}
    assert client.post("/documents/batch", json=body).status_code == 200
    plain, quoted, cited, short = src.values()
    short_copy = " ".join(short.split()[:12])
    text = (
        f"{OWN}\n\n{plain}\n\n{OWN} As the paper put it, \u201c{quoted}\u201d {OWN}\n\n"
        f"{OWN} Also {short_copy} said elsewhere. {OWN}\n\nReferences\n\n{cited}\n"
    )
    ids = dict(zip(("plain", "quoted", "cited", "short"), src, strict=True))
    return {"text": text, **ids}


def _ask(client: TestClient, text: str, **extra: object) -> dict:
    body = {"text": text, "measure": "containment", "evidence": True, "threshold": 0.01}
    r = client.post("/similar", json={**body, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def test_quoted_and_cited_copies_are_set_aside(client: TestClient, essay: dict[str, str]) -> None:
    """Without exclude every copy is found; with quotes, bibliography and min_words the
    quoted, cited and short copies are listed in excluded with their reasons and are no
    results, while the unquoted copy is found with the same passages and containment."""
    text = essay["text"]
    plain = _ask(client, text)
    ids = {r["id"] for r in plain["results"]}
    assert {essay["plain"], essay["quoted"], essay["cited"], essay["short"]} <= ids
    assert "excluded" not in plain
    got = _ask(client, text, exclude={"quotes": True, "bibliography": True, "min_words": 20})
    assert [r["id"] for r in got["results"]] == [essay["plain"]]
    before = next(r for r in plain["results"] if r["id"] == essay["plain"])
    assert got["results"][0] == before
    assert got["coverage"] < plain["coverage"]
    spans = {x["reason"]: text[x["query_start"] : x["query_end"]] for x in got["excluded"]}
    assert set(spans) == {"quote", "bibliography", "short"}
    assert spans["quote"].startswith("\u201c") and spans["quote"].endswith("\u201d")
    assert spans["bibliography"].startswith("References")
    src = _sources()
    assert oracle.words(spans["quote"]) == oracle.words(src[essay["quoted"]])
    assert oracle.words(spans["bibliography"]) == ["references", *oracle.words(src[essay["cited"]])]
    short_words = oracle.words(spans["short"])
    assert 8 <= len(short_words) < 20
    for x in got["excluded"]:  # no passage reaches into a set-aside span
        for r in got["results"]:
            for p in r["passages"]:
                assert p["query_end"] <= x["query_start"] or p["query_start"] >= x["query_end"]


def _sharing_pair() -> tuple[str, str, str, str]:
    """Two corpus articles (a, b): a's first 45 words hold a run of b's words too short
    to count at min_words 30 (12 to 25 words in a row); their ids and texts."""
    corpus = read_corpus()
    grams = {}
    for doc_id, text in corpus:
        w = oracle.words(text)
        grams[doc_id] = {tuple(w[i : i + 4]) for i in range(len(w) - 3)}
    for a_id, a_text in corpus:
        head = " ".join(a_text.split()[:45])
        w = oracle.words(head)
        for b_id, b_text in corpus:
            if b_id == a_id:
                continue
            shared = [tuple(w[i : i + 4]) in grams[b_id] for i in range(len(w) - 3)]
            runs = "".join("1" if x else "0" for x in shared).split("0")
            if 9 <= max(len(r) for r in runs) <= 22 and sum(shared) == max(map(len, runs)):
                return a_id, head, b_id, b_text
    raise AssertionError("the corpus has two articles sharing a sentence")


def test_a_short_match_inside_a_long_one_of_another_source_is_not_listed_short(
    client: TestClient,
) -> None:
    """A sentence that one source shares with the submission, inside a long passage of
    another source, counts with that passage: no span listed short overlaps a passage of a
    named source (the excluded spans count nowhere)."""
    a_id, head, b_id, b_text = _sharing_pair()
    corpus = dict(read_corpus())
    for doc_id, text in ((a_id, corpus[a_id]), (b_id, b_text)):
        assert client.put(f"/documents/{doc_id}", json={"text": text}).status_code in (200, 201)
    text = f"{OWN}\n\n{head}\n\n{OWN}"
    every = _ask(client, text, exclude={"min_words": 1})
    assert {a_id, b_id} <= {r["id"] for r in every["results"]}  # both match at all
    got = _ask(client, text, exclude={"min_words": 30})
    assert a_id in {r["id"] for r in got["results"]}
    for x in got.get("excluded", []):
        for r in got["results"]:
            for p in r["passages"]:
                assert p["query_end"] <= x["query_start"] or p["query_start"] >= x["query_end"], (
                    x,
                    r["id"],
                    p,
                )


def test_each_exclusion_alone(client: TestClient, essay: dict[str, str]) -> None:
    """quotes alone drops only the quoted copy; bibliography alone only the cited one."""
    text = essay["text"]
    ids = {r["id"] for r in _ask(client, text, exclude={"quotes": True})["results"]}
    assert essay["quoted"] not in ids and essay["cited"] in ids and essay["plain"] in ids
    ids = {r["id"] for r in _ask(client, text, exclude={"bibliography": True})["results"]}
    assert essay["cited"] not in ids and essay["quoted"] in ids


def test_the_answer_echoes_the_exclusions_applied(
    client: TestClient, essay: dict[str, str]
) -> None:
    """A containment answer with exclude names the exclusions it applied; one without has none."""
    asked = {"quotes": True, "bibliography": False, "min_words": 12}
    assert _ask(client, essay["text"], exclude=asked)["exclude"] == asked
    assert _ask(client, essay["text"], exclude={"quotes": True})["exclude"] == {
        "quotes": True,
        "bibliography": False,
        "min_words": 0,
    }
    assert "exclude" not in _ask(client, essay["text"])


def test_a_pages_blockquote_is_a_quotation(client: TestClient, essay: dict[str, str]) -> None:
    """With text/html, a copy inside <blockquote> is set aside as a quote."""
    src = _sources()
    page = (
        f"<html><body><article><h1>An essay</h1><p>{OWN}</p><p>{src[essay['plain']]}</p>"
        f"<blockquote><p>{src[essay['quoted']]}</p></blockquote><p>{OWN}</p>"
        "</article></body></html>"
    )
    got = _ask(client, page, content_type="text/html", exclude={"quotes": True})
    assert [r["id"] for r in got["results"]] == [essay["plain"]]
    assert [x["reason"] for x in got["excluded"]] == ["quote"]


@pytest.mark.parametrize(
    "exclude",
    [{"quotes": "yes"}, {"min_words": -1}, {"min_words": 2.5}, {"other": True}, [], "quotes"],
)
def test_malformed_exclude_is_422(client: TestClient, exclude: object) -> None:
    """A wrong type, a negative or fractional min_words, an unknown field or a non-object
    is a 422 naming exclude; so is exclude with the Jaccard measure."""
    r = client.post("/similar", json={"text": OWN, "measure": "containment", "exclude": exclude})
    assert r.status_code == 422 and "exclude" in r.text, r.text
    r = client.post("/similar", json={"text": OWN, "exclude": {"quotes": True}})
    assert r.status_code == 422 and "containment" in r.text


def test_quotation_marks_around_a_few_words_do_not_hide_the_copy(
    client: TestClient, essay: dict[str, str]
) -> None:
    """A verbatim copy with every ninth word put in quotation marks is still found with
    quotes excluded: its passages hold every copied word but the quoted ones."""
    words = _sources()[essay["plain"]].split()
    marked = " ".join(f"\u201c{w}\u201d" if i % 9 == 4 else w for i, w in enumerate(words))
    found = _ask(client, f"{OWN}\n\n{marked}\n\n{OWN}", exclude={"quotes": True})
    (hit,) = [r for r in found["results"] if r["id"] == essay["plain"]]
    text = f"{OWN}\n\n{marked}\n\n{OWN}"
    kept = [w for p in hit["passages"] for w in text[p["query_start"] : p["query_end"]].split()]
    unquoted = [w for i, w in enumerate(words) if i % 9 != 4]
    assert [w for w in kept if "\u201c" not in w] == unquoted


def _own_words_between(
    client: TestClient, source: str, text: str, copied: str
) -> tuple[list[str], list[str]]:
    """The query words and the source words of every passage of source in text, asked
    with quotes excluded."""
    found = _ask(client, text, exclude={"quotes": True})
    (hit,) = [r for r in found["results"] if r["id"] == source]
    query = [text[p["query_start"] : p["query_end"]] for p in hit["passages"]]
    stored = [copied[p["source_start"] : p["source_end"]] for p in hit["passages"]]
    return query, stored


@pytest.mark.parametrize(
    "between", ["And a second source said", "As the authors then put it,", "as {} {} put it,"]
)
def test_a_quotation_cut_from_a_copy_takes_no_own_words_with_it(
    client: TestClient, essay: dict[str, str], between: str
) -> None:
    """A copy followed by the writer's own words and a quotation of the same source (the
    whole copy again, or its next part): with quotes excluded the passage left ends at
    the copy's last word in both texts, not in the writer's words, its source side as
    long as the copy; also where the writer's words hold two of the quotation's words
    near the copy's diagonal (an audit's "in the words of the authors of the license")."""
    copied = _sources()[essay["plain"]]
    words = copied.split()
    between = between.format(*words[38:40])
    for first, quoted in ((words, words), (words[:30], words[30:])):
        copy = " ".join(first)
        text = f"{OWN}\n\n{copy} {between} \u201c{' '.join(quoted)}\u201d {OWN}"
        query, stored = _own_words_between(client, essay["plain"], text, copied)
        assert query == [copy], (between, query)
        assert stored == [copy], (between, stored)


def test_quotations_inside_a_reordered_copy_take_out_only_their_words(
    client: TestClient,
) -> None:
    """A copy of twelve 20-word sentences in another order, with two words quoted in two
    of them: with quotes excluded its passages still hold every copied word but about the
    quoted ones (a first version of the cut edges lost 42 of 240 words to edges moved
    past a sentence whose diagonal was not the passage's)."""
    words = " ".join(t for _, t in read_corpus()[700:702]).split()[:240]
    assert client.put("/documents/reordered-src", json={"text": " ".join(words)}).status_code == 201
    chunks = [words[i : i + 20] for i in range(0, 240, 20)]
    parts = [OWN.split()]
    for n, k in enumerate([0, 5, 2, 9, 1, 7, 3, 11, 6, 4, 10, 8]):
        chunk = list(chunks[k])
        if n in (3, 8):
            chunk[14], chunk[15] = "\u201c" + chunk[14], chunk[15] + "\u201d"
        parts.append(chunk)
    parts.append(OWN.split())
    text = " ".join(w for part in parts for w in part)
    found = _ask(client, text, exclude={"quotes": True})
    (hit,) = [r for r in found["results"] if r["id"] == "reordered-src"]
    kept = sum(len(text[p["query_start"] : p["query_end"]].split()) for p in hit["passages"])
    assert kept >= 240 - 4 - 2, kept  # the 4 quoted words, and a word at most by chance
