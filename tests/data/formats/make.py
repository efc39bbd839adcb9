"""Make the office and PDF fixtures of tests/test_formats.py from the corpus.

Run from the repository root with LibreOffice installed (Debian:
`apt-get install libreoffice-writer-nogui hyphen-en-us`):

    python tests/data/formats/make.py

Each document is written as a flat ODT (XML, by hand below) and LibreOffice
converts it: `soffice --headless --convert-to pdf|docx|odt`. The source texts
are written beside the files as *.txt (paragraphs separated by blank lines),
the independent expectation the extractor tests compare against.

- essay: 8 articles as paragraphs, with a running header and a page-number
  footer on every page, hyphenation on (words split at line ends), as PDF,
  DOCX, ODT and RTF;
- columns: 6 articles in a two-column section, with header and footer, as PDF;
- encrypted: one sentence as a PDF that opens only with the password "secret";
- arabic: a paragraph of Arabic with lam-alef ligatures (one glyph for two letters),
  as PDF.

Not made here: arabic_chromium.pdf is arabic_chromium.html printed by Chromium, whose
PDFs draw some Arabic words' letters left to right (`chromium --headless --no-sandbox
--no-pdf-header-footer --print-to-pdf=arabic_chromium.pdf arabic_chromium.html`).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "articles_1000.train"
HEADER = "Journal of Reproducible Tests, Volume 7"

STYLES = """
<office:font-face-decls>
  <style:font-face style:name="Liberation Serif" svg:font-family="'Liberation Serif'"/>
</office:font-face-decls>
<office:styles>
  <style:style style:name="Standard" style:family="paragraph">
    <style:paragraph-properties fo:margin-bottom="0.2cm" fo:text-align="justify"
      fo:hyphenation-ladder-count="no-limit"/>
    <style:text-properties style:font-name="Liberation Serif" fo:font-size="11pt"
      fo:language="en" fo:country="US" fo:hyphenate="true"
      fo:hyphenation-remain-char-count="2" fo:hyphenation-push-char-count="2"/>
  </style:style>
</office:styles>
<office:automatic-styles>
  <style:page-layout style:name="pm1">
    <style:page-layout-properties fo:page-width="21cm" fo:page-height="29.7cm"
      fo:margin-top="1.5cm" fo:margin-bottom="1.5cm" fo:margin-left="2.5cm"
      fo:margin-right="2.5cm"/>
    <style:header-style><style:header-footer-properties fo:min-height="0.8cm"
      fo:margin-bottom="0.4cm"/></style:header-style>
    <style:footer-style><style:header-footer-properties fo:min-height="0.8cm"
      fo:margin-top="0.4cm"/></style:footer-style>
  </style:page-layout>
  <style:style style:name="Sect2" style:family="section">
    <style:section-properties>
      <style:columns fo:column-count="2" fo:column-gap="0.8cm"/>
    </style:section-properties>
  </style:style>
</office:automatic-styles>
<office:master-styles>
  <style:master-page style:name="Standard" style:page-layout-name="pm1">
    <style:header><text:p text:style-name="Standard">{header}</text:p></style:header>
    <style:footer><text:p text:style-name="Standard">Page <text:page-number
      text:select-page="current"/></text:p></style:footer>
  </style:master-page>
</office:master-styles>
"""

DOC = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
 xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
{styles}
<office:body><office:text>
{body}
</office:text></office:body></office:document>
"""


def articles(first: int, count: int) -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[first : first + count]
    return [line.partition(" ")[2].strip() for line in lines]


def fodt(paragraphs: list[str], columns: bool) -> str:
    body = "\n".join(f'<text:p text:style-name="Standard">{escape(p)}</text:p>' for p in paragraphs)
    if columns:
        body = f'<text:section text:style-name="Sect2" text:name="Columns">{body}</text:section>'
    return DOC.format(styles=STYLES.format(header=HEADER), body=body)


# Written for the fixture: "The darkness covered the city when the children came back
# to their homes, and the families waited for them at the doors of the old houses."
ARABIC = (
    "كان الظلام يغطي المدينة حين عاد الأطفال إلى بيوتهم، "
    "وكانت العائلات تنتظرهم عند الأبواب في البيوت القديمة."
)

ENCRYPTED = (
    'pdf:writer_pdf_Export:{"EncryptFile":{"type":"boolean","value":"true"},'
    '"DocumentOpenPassword":{"type":"string","value":"secret"}}'
)


def convert(source: Path, kind: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                "soffice",
                f"-env:UserInstallation=file://{profile}",
                "--headless",
                "--convert-to",
                kind,
                "--outdir",
                str(out),
                str(source),
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )


def make(name: str, paragraphs: list[str], kinds: list[str], columns: bool, out: Path) -> None:
    (out / f"{name}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / f"{name}.fodt"
        source.write_text(fodt(paragraphs, columns), encoding="utf-8")
        for kind in kinds:
            convert(source, kind, out)


def main(out: Path = HERE, scale: int = 1) -> None:
    """The fixtures (scale 1), or a bench corpus scale times larger in out."""
    make("essay", articles(0, 8 * scale), ["pdf", "docx", "odt", "rtf"], False, out)
    make("columns", articles(100, 6 * scale), ["pdf"], True, out)
    if scale == 1:
        make(
            "encrypted",
            ["A short text that no one may read without its password."],
            [ENCRYPTED],
            False,
            out,
        )
        (out / "encrypted.txt").unlink()
        make("arabic", [ARABIC], ["pdf"], False, out)


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else HERE,
        int(sys.argv[2]) if len(sys.argv) > 2 else 1,
    )
