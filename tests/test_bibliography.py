"""app.index.bibliography: a text's trailing reference list found as a span, against
expectations written by hand."""

from __future__ import annotations

from app.index.bibliography import REFERENCE_HEADINGS, bibliography_span


def test_bibliography_is_the_trailing_section() -> None:
    """The last heading line among the known names starts it and the text's end closes
    it, in several languages and numbered; a heading early in the text or inside a
    sentence is not one."""
    body = "Some words of the essay itself, long enough to be most of it. " * 5
    for heading in ("References", "BIBLIOGRAPHY", "Works Cited:", "3. Literaturverzeichnis",
                    "R\u00e9f\u00e9rences"):  # fmt: skip
        text = f"{body}\n{heading}\nSmith, J. 2020. A book.\n"
        span = bibliography_span(text)
        assert span is not None and text[span.start : span.end] == text[text.index(heading) :]
    assert bibliography_span(f"References\n{body}") is None
    assert bibliography_span(f"{body} the references we read were good.\nMore.") is None
    assert bibliography_span(f"{body}\nReferences\n") is None  # nothing under it


def test_a_short_essays_long_reference_list_is_its_bibliography() -> None:
    """A reference heading in the text's first third starts a bibliography only over a
    list that cites nearly throughout (a short essay with a long list), never over prose
    or with no text before it (a contents page)."""
    body = "A short essay of the writer's own, a few sentences on one matter. " * 3
    refs = "\n".join(f"Author{i}, A. ({1990 + i}). Title number {i}. Press." for i in range(40))
    text = f"{body}\nReferences\n{refs}\n"
    assert text.index("References") < len(text) / 3
    span = bibliography_span(text)
    assert span is not None and text[span.start : span.end] == text[text.index("References") :]
    prose = "\n".join(f"The essay goes on with its point number {i} in words." for i in range(40))
    assert bibliography_span(f"{body}\nReferences\n{prose}\n") is None
    assert bibliography_span(f"References\n{refs}\n") is None
    few = "\n".join(refs.split("\n")[:3])  # an early heading over three lines of a list
    assert bibliography_span(f"{body * 3}\nReferences\n{few}\n{prose}\n") is None


def test_a_reference_heading_needs_references_under_it() -> None:
    """Under "Sources" or "Literatur", which also title sections of prose, and under
    "References" too, the section is a bibliography only if it reads as references
    (short lines citing years, DOIs, URLs); prose under them is the essay's own, or a
    copy hidden there."""
    body = "Some words of the essay itself, long enough to be most of it. " * 5
    prose = (
        "Wind and sun are the cheapest sources of power in most countries today, and "
        "their share of new capacity grows each year as prices fall further.\n"
        "Storage is what is missing: batteries cover hours, not the weeks of a calm winter."
    )
    refs = "Smith, J. (2020). A book. Oxford.\nDoe, A. et al. 2019. doi:10.1/x\n"
    wrapped = (  # prose as a PDF's lines give it, years and all
        "Wind and sun are the cheapest sources of power, first built in 1990,\n"
        "and 2020 saw more of them than 2010 did in all of Europe and in\n"
        "the rest of the world, as the figures of the agency show us all.\n"
        "However, storage is what is missing: batteries cover hours, not weeks."
    )
    for heading in ("Sources", "3. Literatur", "QUELLEN"):
        assert bibliography_span(f"{body}\n{heading}\n{prose}\n") is None, heading
        assert bibliography_span(f"{body}\n{heading}\n{wrapped}\n") is None, heading
        text = f"{body}\n{heading}\n{refs}"
        span = bibliography_span(text)
        assert span is not None and text[span.start :].startswith(heading.strip()), heading
    # ... and so does "References": prose under it is a copy hidden there (an audit's).
    assert bibliography_span(f"{body}\nReferences\n{prose}\n") is None
    assert bibliography_span(f"{body}\nReferences\n{refs}") is not None
    # reference lists of other languages and styles, under such a heading
    for heading, entries in (
        ("Литература", ["Иванов И. И. История. — \u041c.: Наука, 2005. — 320 \u0441."] * 3),
        ("Źródła", ["Kowalski J., Historia Polski, Warszawa 2005.", "Łukasiewicz J., Szkice."]),
        ("Fuentes", ["García Márquez, Gabriel. Cien años de soledad. 1967."] * 2),
        ("Literatur", ["Müller, Hans: Geschichte der Stadt. Berlin 2010.", "H. Roth: Briefe."]),
        ("Literatuur", ["van der Berg, A. Een titel, 2010."] * 2),
        (
            "\u0627\u0644\u0645\u0635\u0627\u062f\u0631",
            [
                "\u0627\u0644\u062c\u0627\u062d\u0638\u060c \u0627\u0644\u0628\u064a\u0627\u0646"
                "\u060c 1998."
            ]
            * 2,
        ),
        ("Sources", ["- Smith, J. 2010. A book. London: Verso."] * 2),
    ):
        text = f"{body}\n\n{heading}\n" + "\n".join(entries) + "\n"
        assert bibliography_span(text) is not None, heading


def _assert_bibliography(text: str, heading: str) -> None:
    """That text's bibliography is found, starting at its heading."""
    span = bibliography_span(text)
    assert span is not None and text[span.start :].startswith(heading), text[-200:]


def test_references_wrapped_in_a_narrow_column_are_a_bibliography() -> None:
    """References as a two-column PDF gives them, each wrapped over three to five lines
    that cite nothing themselves, are a bibliography; one citation over a copied paragraph
    (one long line, or wrapped as a PDF gives it) is not, its prose weighing as long as it
    is."""
    body = "Some words of the essay itself, long enough to be most of it. " * 20
    refs = (
        "Smith, J., & Jones, K. (2019). A long title about\n"
        "the things we studied in detail over\n"
        "many years of careful field research\n"
        "in the northern rivers. Journal of\n"
        "Stuff, 12(3), 45-67.\n"
        "Brown, A. (2020). Another long title\n"
        "on the ecology of lowland river\n"
        "systems and their seasonal floods and\n"
        "droughts. Ecology Letters, 8, 1-9.\n"
        "Garcia, M., Lee, T., & Wong, P. (2018).\n"
        "Sediment transport in braided channels\n"
        "under changing climate regimes: a\n"
        "review. Water Resources Research,\n"
        "54(2), 100-130.\n"
    )
    _assert_bibliography(f"{body}\nReferences\n{refs}", "References")
    citation = "[1] Smith, J. (2019). Rivers. Nature, 12, 3-4."
    sentences = [
        f"Copied sentence {i} of another essay on the ecology of rivers." for i in range(40)
    ]
    one_line = " ".join(sentences)
    assert bibliography_span(f"{body}\nReferences\n{citation}\n{one_line}\n") is None
    wrapped = "\n".join(f"{a} {b}" for a, b in zip(sentences[::2], sentences[1::2], strict=True))
    assert bibliography_span(f"{body}\nReferences\n{citation}\n{wrapped}\n") is None


def test_mla_entries_wrapped_with_the_year_last_are_a_bibliography() -> None:
    """MLA's Works Cited wrapped as a PDF gives it, the year on an entry's last line, is a
    bibliography (an entry is its lines joined); a citation ending in a DOI over a copied
    paragraph wrapped mid-sentence is not: the DOI ends the entry, and the prose after it
    is no part of it (a reviewer found the first refused and the second set aside)."""
    body = "Some words of the essay itself, long enough to be most of it. " * 20
    works = (
        "Achebe, Chinua. Things Fall Apart: A Novel of Colonial Nigeria and the Igbo. Anchor\n"
        "Books, 1994.\n"
        'Baldwin, James. "Notes of a Native Son." Collected Essays, edited by Toni Morrison,\n'
        "Library of America, 1998, pp. 63-84.\n"
        "Morrison, Toni. Playing in the Dark: Whiteness and the Literary Imagination. Harvard\n"
        "University Press, 1992.\n"
        "Said, Edward. Culture and Imperialism. Knopf, 1993.\n"
        "Walker, Alice. In Search of Our Mothers' Gardens: Womanist Prose. Harcourt Brace\n"
        "Jovanovich, 1983.\n"
    )
    _assert_bibliography(f"{body}\nWorks Cited\n{works}", "Works Cited")
    citation = "Smith, J. (2020). Rivers in flood. Water, 3(2), 4-9. https://doi.org/10.1000/xyz"
    copied = (
        "The rivers of the northern plain rise each spring when the snow melts in the hills\n"
        "and carry the silt of a whole winter down to the sea where it settles in broad fans\n"
        "that the fishermen know by their colour and by the birds that feed over them in the\n"
        "mornings before the wind turns and the boats go out past the bar to the deep water\n"
        "where the currents of the two rivers meet and the catch is best in the late summer\n"
    )
    assert bibliography_span(f"{body}\nReferences\n{citation}\n{copied}") is None


def test_reference_headings_in_their_written_forms() -> None:
    """Every heading of the table, and headings with a trailing no-break space or period,
    numbered ("4.1", "7.", "##") or singular, in several languages, start the list."""
    body = "Some words of the essay itself, long enough to be most of it. " * 5
    table = [name.title() for names in REFERENCE_HEADINGS.values() for name in names]
    for heading in (*table, "References\u00a0", "References.", "Reference", "4.1 References",
                    "## References", "7. Bibliography", "Works Consulted", "Sources Cited",
                    "Literature Cited", "Список литературы", "Литература", "参考文献",
                    "المراجع", "المصادر", "Kaynakça", "Literatuur", "Bronnen", "Bibliografia",
                    "Referências bibliográficas", "Referencias bibliográficas",
                    # a reviewer's audit: common headings the table lacked
                    "Bibliografie", "Referenzen", "Liste des références",
                    "Literatur- und Quellenverzeichnis",
                    "Bibliography and further reading"):  # fmt: skip
        text = f"{body}\n{heading}\nSmith, J. 2020. A book.\n"
        span = bibliography_span(text)
        assert span is not None and text[span.start : span.end] == text[text.index(heading) :]


def test_reference_lists_one_after_another_are_one_span() -> None:
    """A References list followed by a Bibliography (or the reverse) is excluded whole, from
    the first heading (the last heading alone left the first list to count as copied); a
    reference heading over prose before them is not joined."""
    body = "Some words of the essay itself, long enough to be most of it. " * 5
    refs = "References\nSmith, J. (2020). A book.\nDoe, A. (2019). Another one.\n"
    more = "Bibliography\nBrown, K. (2018). A third book.\nGreen, L. 2017. Papers.\n"
    text = f"{body}\n{refs}{more}"
    span = bibliography_span(text)
    assert span is not None and text[span.start : span.end] == text[text.index("References") :]
    prose = "Sources\nThe sun and the wind are the sources we studied most.\n"
    text = f"{body}\n{prose}{more}"
    span = bibliography_span(text)
    assert span is not None and text[span.start : span.end] == text[text.index("Bibliography") :]


def test_bibliography_ends_at_the_next_section() -> None:
    """An appendix (named, numbered or a title on its own line) or a numbered division
    (Chapter 2: Practice, which an audit saw swallowed by the list) after the reference
    list ends it; a reference's wrapped line does not."""
    body = "Some words of the essay itself, long enough to be most of it. " * 5
    refs = "References\nSmith, J. (2020). A book.\nDoe, A. (2019). Another one.\n"
    for section in ("Appendix A", "APPENDIX B: Survey items", "Anhang", "Annexe 2",
                    "Apéndice", "5 Discussion", "A.1 Survey items", "## Data",
                    "Acknowledgements", "Chapter 2: Practice", "Part II \u2013 Methods",
                    "Kapitel 3", "CHAPTER 4"):  # fmt: skip
        text = f"{body}\n{refs}\n{section}\nCopied words follow here in the appendix.\n"
        span = bibliography_span(text)
        assert span is not None and text[span.start : span.end] == refs.strip(), section
    for tail in (
        "A book of\nThe Press, London.",
        "In Proceedings of the\n2019 Conference on Methods",
        "Handbook of methods,\nPart 2 of the series.",
    ):
        wrapped = f"{body}\nReferences\nSmith, J. (2020). {tail}\n"
        span = bibliography_span(wrapped)
        assert span is not None and span.end == len(wrapped), tail


def test_bulleted_prose_is_not_a_list_and_unpunctuated_references_are() -> None:
    """A bullet opens an item, not a reference: sentences of prose after bullets under
    References are counted. References that end without a period (Harvard's "(accessed
    ...)", a German list's publisher) are each an entry, not one long one that cites
    nothing. A line of one million-character word is read in linear time (a reviewer's
    56,000 characters of `http://` took 3 s)."""
    body = "Some words of the essay itself, long enough to be most of it. " * 20
    for bullet in ("- ", "\u2022 ", "* ", "\u2013 "):
        prose = "\n".join(
            f"{bullet}The river rose again in the spring of that year number {i} and flooded."
            for i in range(12)
        )
        assert bibliography_span(f"{body}\nReferences\n{prose}\n") is None, bullet
    harvard = "\n".join(
        f"Smith, John ({1990 + i}) Rivers of the north, volume {i}. Available at: "
        f"https://example.org/r{i} (accessed 5 May 2020)"
        for i in range(6)
    )
    german = "\n".join(
        f"M\u00fcller, Hans: Geschichte der Stadt Nummer {i}. Berlin {2000 + i}, Verlag Beispiel"
        for i in range(6)
    )
    for refs in (harvard, german):
        _assert_bibliography(f"{body}\nReferences\n{refs}\n", "References")
    long_word = "http://" * 150_000
    text = f"{body}\nReferences\nSmith, J. (2020). A book.\n{long_word}\nmore text here\n"
    assert bibliography_span(text) is None
