"""app.index.quotations: a text's quotations by their marks, and a page's <blockquote> and
<q> texts placed in its extracted text, against expectations written by hand."""

from __future__ import annotations

from app.index.quotations import html_quote_spans, quote_spans


def _quoted(text: str) -> list[str]:
    return [text[s.start : s.end] for s in quote_spans(text)]


def test_quotation_marks_of_many_languages() -> None:
    """Curly, low-high, guillemets both ways, single guillemets, ``...'' pairs and
    Japanese corner brackets (one nested in the other) are quotations, marks included."""
    text = (
        "a \u201cfirst one\u201d b \u201edeutsch zitiert\u201c "
        "c \u00abfran\u00e7ais cit\u00e9\u00bb "
        "d \u00bbandersrum\u00ab e \u2039einfach\u203a f ``news style,'' g "
        "\u5f7c\u306f\u300c\u6771\u4eac\u300e\u5e02\u300f\u3078\u300d\u3068\u8a00\u3063\u305f\u3002"
    )
    assert _quoted(text) == [
        "\u201cfirst one\u201d",
        "\u201edeutsch zitiert\u201c",
        "\u00abfran\u00e7ais cit\u00e9\u00bb",
        "\u00bbandersrum\u00ab",
        "\u2039einfach\u203a",
        "``news style,''",
        "\u300c\u6771\u4eac\u300e\u5e02\u300f\u3078\u300d",
    ]


def test_german_single_low_high_quotes() -> None:
    """German, Czech, Polish and Dutch single low-high quotes are a quotation, an
    apostrophe inside one (geht\u2019s) does not close it."""
    text = "Er nannte es \u201aeinen Versuch, der geht\u2019s nicht anders\u2018 und ging."
    assert _quoted(text) == ["\u201aeinen Versuch, der geht\u2019s nicht anders\u2018"]
    # Polish and Dutch close it with U+2019: the nearest one no letter follows, not a
    # later U+2018 (which took the text between with it).
    polish = (
        "Powiedzia\u0142: \u201aid\u0119 do domu\u2019 i poszed\u0142. "
        "Potem \u2018hello\u2019 znowu."
    )
    assert _quoted(polish)[0] == "\u201aid\u0119 do domu\u2019"


def test_straight_and_single_quotes_only_where_clearly_quotations() -> None:
    """Straight double quotes pair within a paragraph; single ones only as an opener after
    a space and a closer before one, so apostrophes (it's, the students' union) are not
    quotations."""
    text = (
        "He said \"the plan is set\" and it's done; the students' union and the "
        "teachers' room agreed, calling it 'a real step' \u2018and \u2019twas\u2019 so."
        '\n\nA "mark left open\n\nin another paragraph" is no quotation.'
    )
    assert _quoted(text) == [
        '"the plan is set"',
        "'a real step'",
        "\u2018and \u2019twas\u2019",
    ]


def test_an_opener_left_open_does_not_take_the_paragraphs_after_it() -> None:
    """A curly quote or guillemet left unclosed is no quotation past its paragraph (it took
    the copied paragraphs after it, up to the next closer); a quotation that goes on over
    paragraphs, each opening with the mark again as typesetting does, is one span."""
    left_open = (
        "He called it \u201cthe best.\n\nCopied paragraph one goes here.\n\n"
        "Copied paragraph two.\n\nLater a \u201csmall\u201d word."
    )
    assert _quoted(left_open) == ["\u201csmall\u201d"]
    guillemet = "Il a dit \u00able mieux.\n\nCopie.\n\nEncore\u00bb deux."
    assert _quoted(guillemet) == []
    going_on = "She wrote: \u201cThe first part of it.\n\n\u201cThe second part, ended.\u201d Then."
    assert _quoted(going_on) == [
        "\u201cThe first part of it.\n\n\u201cThe second part, ended.\u201d"
    ]


def test_a_quotation_inside_another_is_one_span() -> None:
    """Nested and touching quotations merge into one span."""
    text = "x \u201cshe said \u2018no way\u2019 twice\u201d y"
    assert _quoted(text) == ["\u201cshe said \u2018no way\u2019 twice\u201d"]


def test_a_quotation_nested_in_marks_of_its_own_kind_ends_at_the_outer_closer() -> None:
    """A curly quotation holding another in the same marks, and guillemets in guillemets,
    end at the closer that balances the opener, not at the inner one; a mark left open
    within its paragraph takes nothing, and the quotation after it pairs (it took the copy
    between them)."""
    text = (
        "As Smith writes, \u201ca branch is a \u201cmovable pointer\u201d to a commit\u201d"
        " (2020). "
        "\u00abil dit \u00aboui\u00bb deux fois\u00bb fin. \u201copen \u201cthen closed\u201d tail"
    )
    assert _quoted(text) == [
        "\u201ca branch is a \u201cmovable pointer\u201d to a commit\u201d",
        "\u00abil dit \u00aboui\u00bb deux fois\u00bb",
        "\u201cthen closed\u201d",
    ]
    stray = (
        "My notes on \u201clicensing. " + "copied words " * 35
        + "As my teacher said, \u201calways cite your sources\u201d and I agree."
    )  # fmt: skip
    assert _quoted(stray) == ["\u201calways cite your sources\u201d"]
    # An opener in a later paragraph proves nothing: a quotation of two paragraphs whose
    # second holds one of its own is still set aside from its first.
    going_on = (
        "The report: \u201cThe river has risen every spring for a decade.\n\n\u201cThe "
        "council must act, as the mayor said \u201cbefore the flood\u201d or lose the "
        "streets.\u201d That was all."
    )
    (span,) = quote_spans(going_on)
    assert going_on[span.start :].startswith("\u201cThe river")


def test_a_single_quote_closing_after_a_hyphen_pairs_with_its_opener() -> None:
    """'posix-' is a quotation of its own, so the later 'abc' is another, and the words
    between them are no quotation; an opener followed by another before any closer was an
    apostrophe ('tis), and the later one pairs."""
    text = "Styles take 'posix-' first. Copied words stay outside. The value 'abc' is set."
    assert _quoted(text) == ["'posix-'", "'abc'"]
    assert _quoted("'Tis the season, and he said 'hello there' to me.") == ["'hello there'"]


def test_hostile_runs_of_marks_are_read_in_linear_time() -> None:
    """A text of nothing but openers, of nested openers never balanced, or of straight or
    single openers with a closer every few thousand characters, is read without a scan per
    mark (a million marks, or 400,000: a quadratic reading takes minutes), each giving the
    expected spans."""
    assert quote_spans("\u201c" * 1_000_000) == []
    # Openers with no word within MAX_QUOTE are passed over as a run, not one by one; those
    # within reach of the words are left open (another comes before the closer).
    text = "\u201c" * 10_000 + " He said \u201chello world\u201d today"
    (only,) = quote_spans(text)
    assert text[only.start : only.end] == "\u201chello world\u201d"
    assert len(quote_spans("\u201ca \u201cb\u201d " * 100_000)) == 100_000
    # Straight and single marks: many openers before each closer, a closer every ~4,000.
    for opener, closer in ((" 'a", "a' "), (' "a', 'a" '), (" \u2018a", "a\u2019 ")):
        text = (opener * 1300 + closer) * 300
        assert len(quote_spans(text)) == 300


def test_html_quotes_are_found_in_the_extracted_text() -> None:
    """The text of a <blockquote> is found in the extracted text whatever the spacing
    between its words became."""
    text = "Intro line.\nA long block\nof quoted text\nafter it."
    spans = html_quote_spans(["A long block of quoted\ntext"], text)
    assert [text[s.start : s.end] for s in spans] == ["A long block\nof quoted text"]


def test_each_html_quotation_is_found_once_in_page_order() -> None:
    """A page's quotations are found in its text in page order, each at a place of its
    own: two quotations of the same words are two spans, the second after the first; and
    thousands are all found (a search of the whole text per quotation took 22 s for
    16,000)."""
    text = "Then: to be, or not. Later: to  be or\nnot! End."
    spans = html_quote_spans(["to be or not", "to be or not"], text)
    assert [text[s.start : s.end] for s in spans] == ["to be, or not", "to  be or\nnot"]
    assert spans[0].end < spans[1].start
    many = " ".join(f"intro {i} quoted words number {i} outro" for i in range(4000))
    found = html_quote_spans([f"quoted words number {i}" for i in range(4000)], many)
    assert [many[s.start : s.end] for s in found] == [
        f"quoted words number {i}" for i in range(4000)
    ]


def test_a_text_without_blank_lines_has_a_paragraph_a_line() -> None:
    """In a text whose paragraphs are single lines (a DOCX or ODT as extracted), an opener
    left open takes nothing past its line; a quotation continued with the mark (indented or
    not) on the next lines is one span."""
    long = " and the sentence goes on for a while, as a paragraph does" * 3
    left_open = (
        f"He called it \u201cthe best{long}.\nCopied paragraph one goes here{long}.\n"
        f"Copied paragraph two{long}.\nLater a \u201csmall\u201d word{long}."
    )
    assert _quoted(left_open) == ["\u201csmall\u201d"]
    going_on = f"She wrote: \u201cThe first part{long}.\n   \u201cThe second, ended.\u201d{long}"
    assert _quoted(going_on) == [going_on[11 : going_on.index("\u201d") + 1]]
    straight = f'A "mark left open{long}\nin another paragraph{long}" is no quotation.'
    assert _quoted(straight) == []
    # hard-wrapped lines are no paragraphs: a quotation wraps across them
    wrapped = "He said \u201cthe plan\nis set\u201d and left."
    assert _quoted(wrapped) == ["\u201cthe plan\nis set\u201d"]


def test_a_quotation_cut_by_a_page_break_in_mid_sentence_is_one_span() -> None:
    """A quotation that a PDF's page break cuts in mid-sentence (the pages' blank line
    between "Passwort zu" and "wechseln") is one span, as in the DOCX of the same text; an
    opener left unclosed at a paragraph's full stop still takes nothing after it."""
    pdf = (
        "Die Anleitung sagt dazu\n\u201eman muss das Passwort zu\n\n"
        "wechseln, bevor man sich anmeldet\u201c und mehr.\n\nEin neuer Absatz."
    )
    assert _quoted(pdf) == [
        "\u201eman muss das Passwort zu\n\nwechseln, bevor man sich anmeldet\u201c"
    ]
    comma = "He wrote \u201cfirst, then,\n\nsecond and last\u201d here."
    assert _quoted(comma) == ["\u201cfirst, then,\n\nsecond and last\u201d"]
    left_open = "He called it \u201cthe best.\n\nCopied paragraph one.\n\nLater\u201d words."
    assert _quoted(left_open) == []
    # left open in a line without a stop (a title): the next full stop still ends it
    titled = "A \u201cnew title\n\nCopied paragraph one.\n\nLater\u201d words."
    assert _quoted(titled) == []
    # one page break only: a quotation over two is an opener left open
    two = "He wrote \u201cfirst part\n\nsecond part\n\nthird part\u201d here."
    assert _quoted(two) == []
    # a DOCX's lines are paragraphs: a heading left open takes nothing after it
    docx = "\n".join(
        [
            "1. What \u201cclimate change means",
            "Copied paragraph one is long enough to be a paragraph of its own here.",
            "Copied paragraph two quotes a \u201clate\u201d word among its own words.",
            "Copied paragraph three ends the essay with a sentence of its own.",
        ]
    )
    assert _quoted(docx) == ["\u201clate\u201d"]


def test_a_quotation_cut_by_a_page_break_after_a_sentence_closes_on_the_next_page() -> None:
    """A quotation a PDF's page break cuts after a full stop is one span when its closer
    comes on the next page with no opener of its kind before it there; an opener left
    open still takes nothing when the next page's closer has an opener of its own."""
    cut = (
        "The report of the agency says that\n\u201cthe river rose early in the\n"
        "morning of June 13.\n\nThe mill was closed for a week\u201d\nand the town waited "
        "for news\nof the harvest in the valley"
    )
    assert _quoted(cut) == [
        "\u201cthe river rose early in the\nmorning of June 13.\n\n"
        "The mill was closed for a week\u201d"
    ]
    reopened = cut.replace("The mill was", "The \u201cmill\u201d was").replace("week\u201d", "week")
    assert _quoted(reopened) == ["\u201cmill\u201d"]


def test_a_docx_with_a_blank_line_or_short_paragraphs_keeps_its_lines_as_paragraphs() -> None:
    """A text whose lines end sentences is one paragraph a line even with a blank line in it
    (an empty DOCX paragraph) or short paragraphs (dialogue): an unclosed quote stays in its
    line; hard-wrapped lines are no paragraphs."""
    lines = [
        "Annual Report",
        "",
        "He called it \u201cthe best.",
        "They left early.",
        "Copied paragraph two is here.",
        "Later a \u201csmall\u201d word.",
    ]
    assert _quoted("\n".join(lines)) == ["\u201csmall\u201d"]


def test_marks_that_open_and_close_alike_are_quotations() -> None:
    """Swedish and Finnish ”…”, full-width U+FF02 and Hebrew gershayim ״…״ are quotations
    (an audit saw all three counted); a gershayim inside a word (an acronym) and an
    English closing mark are not openers."""
    text = (
        "Han sa ”det här är citerat” och gick. "
        "\uff02\u5168\u89d2\u306e\u5f15\u7528\uff02 "
        "\u05d4\u05d5\u05d0 \u05d0\u05de\u05e8 "
        "\u05f4\u05e9\u05dc\u05d5\u05dd \u05dc\u05db\u05dd\u05f4 "
        "\u05e6\u05d4\u05f4\u05dc and \u201cEnglish words\u201d here."
    )
    assert _quoted(text) == [
        "”det här är citerat”",
        "\uff02\u5168\u89d2\u306e\u5f15\u7528\uff02",
        "\u05f4\u05e9\u05dc\u05d5\u05dd \u05dc\u05db\u05dd\u05f4",
        "\u201cEnglish words\u201d",
    ]
