"""app.index.formats.rtf: the text an RTF document shows, against what a reader sees in
LibreOffice's RTF of the essay fixture and in hand-written documents of Word's kind."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support import oracle

from app.index.errors import FileError
from app.index.formats import rtf
from app.index.formats.rtf import rtf_text

DATA = Path(__file__).parent / "data" / "formats"

# Word's way of writing a document: the header's tables, then the body.
WORDISH = (
    rb"{\rtf1\adeflang1025\ansi\ansicpg1252\uc1\adeff0\deff0"
    rb"{\fonttbl{\f0\froman\fcharset0\fprq2{\*\panose 02020603050405020304}Times New Roman;}"
    rb"{\f1\fswiss\fcharset204\fprq2 Arial Cyr;}{\f2\fnil\fcharset128 MS Mincho;}}"
    rb"{\colortbl;\red0\green0\blue0;\red255\green255\blue255;}"
    rb"{\stylesheet{\ql \li0\ri0 \fs24 Normal;}{\*\cs10 \additive Default Paragraph Font;}}"
    rb"{\*\rsidtbl \rsid1573123}{\*\generator Microsoft Word 16.0;}"
    rb"{\info{\title Secret title words}{\author Someone}}"
    rb"{\header \pard\plain Running header words\par}"
    rb"{\footer \pard\plain Page {\field{\*\fldinst PAGE}{\fldrslt 1}}\par}"
    rb"\pard\plain \f0\fs24 The caf\'e9 served na\u239\'efve "
    rb"{\f1 \'cf\'f0\'e8\'e2\'e5\'f2} and {\f2 \'93\'fa\'96\'7b} guests.\par "
    rb"Shown {\v hidden junk words }words, a {\field{\*\fldinst HYPERLINK \"http://x\"}"
    rb"{\fldrslt linked phrase}} here{\footnote \pard\plain A note of its own.}.\par"
    rb"{\pict\pngblip\picw10\pich10 89504e470d0a1a0a}{\*\bkmkstart b1}"
    rb"{\shp{\*\shpinst{\sp{\sn fillColor}{\sv 16777215}}{\shptxt \pard Boxed words\par}}"
    rb"{\shprslt{\pard Boxed words\par}}}"
    rb"An emoji \u-10179?\u-8704? and \ldblquote quotes\rdblquote  \endash  dashes\~too.\par"
    rb"{\*\themedata 504b0304}{\object{\*\objdata \bin4 {{{{}}"
    rb"Cells\cell one\cell\row Last line\line broken\tab tabbed\par}"
)


def test_a_word_document_reads_as_a_reader_sees_it() -> None:
    """Body text in order with its characters decoded by each font's charset; the header's
    tables, page headers and footers, hidden text, field codes, pictures and binary data
    left out; a field's result read, a text box once after its paragraph, the footnote
    after the body."""
    lines = [" ".join(line.split()) for line in rtf_text(WORDISH).split("\n")]
    assert [line for line in lines if line] == [
        "The café served naïve Привет and 日本 guests.",
        "Shown words, a linked phrase here.",
        "An emoji \U0001f600 and \u201cquotes\u201d \u2013 dashes too.",
        "Boxed words",  # after the paragraph it is anchored in, as in a DOCX
        "Cells",
        "one",
        "Last line",
        "broken tabbed",
        "Notes",
        "A note of its own.",
    ]


def test_libreoffices_rtf_of_the_essay_reads_as_its_source_text() -> None:
    """LibreOffice's RTF of the essay fixture (make.py) has the source's paragraphs as
    lines, word for word, and no running header or page number."""
    source = (DATA / "essay.txt").read_text(encoding="utf-8")
    text = rtf_text((DATA / "essay.rtf").read_bytes())
    assert "Journal of Reproducible" not in text and "Page 1" not in text
    assert [oracle.normalized(p) for p in text.split("\n") if p.strip()] == [
        oracle.normalized(p) for p in source.split("\n\n")
    ]


def test_fallbacks_and_code_pages_follow_the_group_they_are_set_in() -> None:
    """\\ucN sets how many characters follow a \\uN for readers without Unicode, for its
    group only; \\ansicpg names the document's code page, a font's \\fcharset its own."""
    assert rtf_text(rb"{\rtf1 {\uc2\u26085\'93\'fa}\u26412? end}") == "日本 end"
    assert rtf_text(rb"{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8}") == "При"
    assert rtf_text(rb"{\rtf1\ansi\ansicpg932 \'93\'fa\'96\'7b}") == "日本"
    assert rtf_text(rb"{\rtf1\ansi \'e9\u8364?\'e9}") == "é€é"  # 1252 by default
    assert rtf_text(rb"{\rtf1 \\ \{ \} a\-b c\_d}") == "\\ { } ab c-d"


def test_letters_drawn_not_to_be_seen_read_as_the_docx_reader_reads_them() -> None:
    """A white letter in place of each space reads as a space, junk words a half point
    high inside a word as nothing, as DOCX runs do (formats/blanking.py); white letters
    on a highlight, and a line that is all white, are read."""
    head = rb"{\rtf1\ansi{\colortbl;;\red0\green0\blue0;\red255\green255\blue255;}"
    white = rb"When\cf3 x\cf0 we\cf3 x\cf0 speak of{\cf3 junk}ideas\par "
    tiny = rb"co{\fs1 junk words}py and {\fs1\expndtw60 spaced}apart\par "
    shown = rb"{\highlight7\cf3 on yellow} words\par {\cf3 all white line}\par}"
    lines = rtf_text(head + white + tiny + shown).split("\n")
    assert [" ".join(line.split()) for line in lines] == [
        "When we speak of ideas", "copy and apart", "on yellow words", "all white line"
    ]  # fmt: skip


def test_what_word_and_libreoffice_write_around_the_text_reads_as_they_show_it() -> None:
    """Found by an outside audit: a starred footnote (LibreOffice's) is read after the
    body; tracked deletions, unstarred destinations no reader shows and \\upr's ANSI
    copy are not; a line end after "{" or \\* still names the destination; a hidden
    paragraph end still ends the line."""
    assert rtf_text(rb"{\rtf1\ansi Body{\*\footnote\pard Note words.} more\par}") == (
        "Body more\nNotes\nNote words."
    )
    assert rtf_text(rb"{\rtf1\ansi Kept {\deleted\revauthdel1 gone words }text.\par}") == (
        "Kept text."
    )
    junk = rb"{\rtf1\ansi copied{\pntxtb junk} words{\title junk} here{\nonesttables junk}.}"
    assert rtf_text(junk) == "copied words here."
    upr = rb"{\rtf1 {\upr{A\'3f}{\*\ud{A\u1046?}}} end}"
    assert rtf_text(upr) == "A\u0416 end"
    assert (
        rtf_text(b"{\\rtf1\\ansi{\r\n\\fonttbl{\\f0 Times;}}{\\*\r\n\\bkmkstart bm}Body}") == "Body"
    )
    assert rtf_text(rb"{\rtf1 one{\v \par}two}") == "one\ntwo"


def test_a_text_box_is_read_after_the_paragraph_it_is_anchored_in() -> None:
    """A box drawn mid-sentence does not cut the sentence: its text follows the
    paragraph on lines of its own, as the DOCX reader reads one (an outside audit)."""
    box = rb"{\rtf1\ansi First half {\shp{\*\shpinst{\shptxt Box\par}}}second half.\par Next.}"
    assert rtf_text(box).split("\n") == ["First half second half.", "Box", "Next."]
    noted = rb"{\rtf1 A {\shp{\*\shpinst{\shptxt Box\par}}}b{\footnote\pard N.}c.\par}"
    assert rtf_text(noted).split("\n") == ["A bc.", "Box", "Notes", "N."]


def test_code_pages_follow_the_font_and_the_old_switches() -> None:
    """A font of charset 0 is Windows-1252 whatever the document's code page (WordPad
    writes them so in other locales); \\mac, \\pc and \\ansicpg10000 name theirs."""
    mixed = rb"{\rtf1\ansi\ansicpg1251{\fonttbl{\f0\fcharset0 Calibri;}{\f1\fcharset204 C;}}"
    assert (
        rtf_text(mixed + rb"\f0 caf\'e9 {\f1 \'cf\'f0\'e8}\par}") == "caf\u00e9 \u041f\u0440\u0438"
    )
    assert rtf_text(rb"{\rtf1\mac caf\'8e}") == "caf\u00e9"
    assert rtf_text(rb"{\rtf1\pc caf\'82}") == "caf\u00e9"
    assert rtf_text(rb"{\rtf1\ansi\ansicpg10000 caf\'8e}") == "caf\u00e9"


def test_shading_ends_where_its_paragraph_or_formatting_does() -> None:
    """White letters in a shaded table cell are read; a paragraph's shading ends at
    \\pard and a highlight at \\plain, so white letters after them read as spaces."""
    colours = rb"{\colortbl;\red0\green0\blue0;\red255\green255\blue255;\red0\green0\blue128;}"
    cell = rb"\trowd\clcbpat3\cellx1000\cellx2000\pard\intbl{\cf2 Header}\cell Value\cell\row"
    assert rtf_text(rb"{\rtf1\ansi" + colours + cell + b"}").split() == ["Header", "Value"]
    para = rb"\pard\cbpat3 Shaded.\par\pard\plain When{\cf2 x}we{\cf2 x}speak\par"
    assert rtf_text(rb"{\rtf1\ansi" + colours + para + b"}") == "Shaded.\nWhen we speak"
    mark = rb"\highlight3 Marked \plain When\cf2 x\cf0 we\par"
    assert rtf_text(rb"{\rtf1\ansi" + colours + mark + b"}") == "Marked When we"


def test_anything_that_is_not_rtf_or_is_broken_reads_without_error() -> None:
    """Not RTF reads as nothing; an unterminated document reads what it shows; groups past
    MAX_GROUPS are read in the state of the last one kept; what follows the document's
    closing brace is not read; random bytes and RTF-like noise never raise."""
    assert rtf_text(b"plain words") == ""
    assert rtf_text(rb"{\rtf1 unended {\b bold") == "unended bold"
    assert rtf_text(rb"{\rtf1\ansi body\par} trailing words") == "body"
    odd = rb"{\rtf1 a\fs123456789012345 b\u128512?c\averyveryverylongcontrolwordgoingon d}"
    assert rtf_text(odd) == "abcd"  # numbers clamped, a code point past 16 bits dropped
    past = rtf.MAX_GROUPS + 5
    deep = b"{\\rtf1 before " + b"{" * past + b"deep" + b"}" * past + b" after}"
    assert rtf_text(deep) == "before deep after"
    pieces = [b"{", b"}", b"\\", b"\\'", b"\\u", b"\\uc", b"\\bin", b"\\*", b"\\v", b"\\f",
              b"\\fonttbl", b"\\fcharset128", b"\\ansicpg", b"9", b"-", b"x", b" ", b"\xff",
              b"\n", b"\\par", b"\\footnote", b"\\shptxt", b"0", b"e9", b"\\plain"]  # fmt: skip
    rng = random.Random(7)
    for _ in range(3000):
        noise = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 120)))
        assert isinstance(rtf_text(b"{\\rtf1" + noise), str)
        assert isinstance(rtf_text(bytes(rng.getrandbits(8) for _ in range(40))), str)


def test_an_rtf_file_cut_short_is_refused_as_truncated() -> None:
    """An RTF file whose document group never closes (the essay fixture cut anywhere after
    its start, as an interrupted upload leaves it) is a FileError saying it is truncated,
    where it read as the text before the cut; the whole file, and one with trailing bytes
    after its closing brace, read as before."""
    whole = (DATA / "essay.rtf").read_bytes()
    assert rtf.file_text(whole) == rtf_text(whole) != ""
    assert rtf.file_text(whole + b"\r\n\x00") == rtf_text(whole)
    for share in (0.2, 0.6, 0.95):
        cut = whole[: int(len(whole) * share)]
        assert share < 0.5 or rtf_text(cut) != ""  # read before the cut, as a chunk still is
        with pytest.raises(FileError, match="truncated"):
            rtf.file_text(cut)
    with pytest.raises(FileError, match="truncated"):
        rtf.file_text(whole.rstrip()[:-1])  # only the last brace missing
