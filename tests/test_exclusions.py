"""app.index.exclusions: what a query's options set aside, quotations and the
bibliography together, against expectations written by hand."""

from __future__ import annotations

from app.index.exclusions import detect


def test_prose_among_or_after_the_references_is_not_set_aside() -> None:
    """A paragraph of prose after the reference entries or between two of them stays in
    (an outside audit: a 100-word copy put there was set aside with the list); the
    entries around it are still the bibliography, and so are a reference of twenty
    authors and a short line among them."""
    body = "Some words of the essay itself, long enough to be most of it. " * 8
    refs = [f"Author{i}, A. B. ({2000 + i}). Title of work {i}. Journal, {i}(2), 1-9."
            for i in range(4)]  # fmt: skip
    copy = (
        "When the water grows too warm the corals expel the algae that live in their "
        "tissues and give them their colour, and the reef turns white in a matter of weeks."
    )
    for text in (
        f"{body}\nReferences\n" + "\n".join(refs) + f"\n\n{copy}\n",
        f"{body}\nReferences\n" + "\n".join(refs[:2]) + f"\n{copy}\n" + "\n".join(refs[2:]),
    ):
        spans = detect(text, quotes=False, bibliography=True)
        set_aside = "".join(text[s.start : s.end] for s in spans)
        assert copy not in set_aside and all(r in set_aside for r in refs), spans
        assert all(s.reason == "bibliography" for s in spans)
    # A reference too long to read as one (APA lists twenty authors) is still one.
    names = "Adams Baker Clark Davis Evans Fisher Green Hall Irwin Jones King Lewis Moore Nash "
    authors = ", ".join(
        f"{n}, A. B." for n in (names + "Owen Price Quinn Reed Scott Young").split()
    )
    title = "A study of many hands at work in one place over a long time"
    long = f"{authors} (2021). {title}. Journal of Work, 3(4), 101-119. https://doi.org/10.1000/jw.2021.104"
    assert len(long) > 400
    text = f"{body}\nReferences\n{refs[0]}\n{long}\n{refs[1]}\n"
    (whole,) = detect(text, quotes=False, bibliography=True)
    assert text[whole.start : whole.end] == text[text.index("References") :].strip()
    short = f"{body}\nReferences\n{refs[0]}\nPersonal communication.\n{refs[1]}\n"
    (whole,) = detect(short, quotes=False, bibliography=True)
    assert short[whole.start : whole.end] == short[short.index("References") :].strip()


def test_detect_keeps_quotes_out_of_the_bibliography() -> None:
    """With both on, a title quoted in the reference list is part of the bibliography
    span, not a quotation of its own."""
    body = "An essay that says \u201cthis\u201d once. " * 4
    text = f'{body}\nReferences\nDoe, A. "A quoted title". 2020.'
    spans = detect(text, quotes=True, bibliography=True)
    assert [s.reason for s in spans] == ["quote"] * 4 + ["bibliography"]
    assert detect(text, quotes=False, bibliography=False) == []
