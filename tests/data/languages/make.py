"""Rebuild the language pages from the Debian Reference's plain-text books (provenance).

Run once by hand, never by the tests or the benchmarks:

    apt-get download debian-reference-en debian-reference-ja debian-reference-zh-cn
    for f in debian-reference-*.deb; do dpkg-deb -x "$f" pkgs; done
    python3 tests/data/languages/make.py pkgs/usr/share/debian-reference

A page is one section of the book, or a few consecutive ones of one chapter, of a few hundred
words; 50 pages per language, spread over the whole book. Only prose paragraphs are kept: in
the Chinese and Japanese books, paragraphs mostly of Han or kana (many paragraphs there are
left in English); in the English one, paragraphs that read as sentences. Hard line wraps are
undone (no space between two CJK characters, one space elsewhere). Out: ``{en,ja,zh}.txt.gz``,
pages separated by a form feed line, each page's first line its section number.
"""

from __future__ import annotations

import gzip
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
BOOKS = {"en": "en", "ja": "ja", "zh": "zh-cn"}
PAGES = 50
HEADING = re.compile(r"^(\d+(?:\.\d+)+)\. \S")
# characters per page: a page of a few hundred words in each language
BOUNDS = {"en": (1500, 4000), "ja": (600, 1500), "zh": (500, 1300)}


def cjk(ch: str) -> bool:
    name = unicodedata.name(ch, "")
    return name.startswith(("CJK UNIFIED", "HIRAGANA", "KATAKANA"))


def paragraphs(block: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    cur: list[str] = []
    for line in block:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def unwrap(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        sep = "" if text and cjk(text[-1]) and cjk(line[0]) else " "
        text += sep + line
    return text


def prose(lang: str, para: str) -> bool:
    letters = [c for c in para if c.isalpha()]
    if len(letters) < 20 or any(c in para for c in "─│┌└$#|") or "--" in para:
        return False
    if lang == "en":
        ascii_share = sum(c.isascii() for c in letters) / len(letters)
        return ascii_share > 0.99 and para.count(" ") > 8 and para.rstrip().endswith((".", ":"))
    return sum(cjk(c) for c in letters) / len(letters) > 0.6


def sections(lang: str, root: Path) -> dict[str, str]:
    path = root / f"debian-reference.{BOOKS[lang]}.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8") as raw:
        lines = raw.read().replace("\xa0", " ").splitlines()
    # the body starts at the first unindented "1.1." (the table of contents is indented)
    start = min(i for i, line in enumerate(lines) if line.startswith("1.1. "))
    found = ((i, HEADING.match(lines[i])) for i in range(start, len(lines)))
    heads = [(i, m.group(1)) for i, m in found if m]
    out = {}
    for (i, num), (j, _) in zip(heads, [*heads[1:], (len(lines), "")], strict=True):
        paras = [unwrap(p) for p in paragraphs(lines[i + 1 : j])]
        out[num] = "\n\n".join(p for p in paras if prose(lang, p))
    return out


def pages(book: dict[str, str], lo: int, hi: int) -> list[tuple[str, str]]:
    """Consecutive sections of one chapter joined until a page holds lo characters; a page
    is cut at its last paragraph that ends within hi."""
    out = []
    num, paras = "", []
    for sec, text in book.items():
        if paras and sec.split(".")[0] != num.split(".")[0]:
            num, paras = "", []  # a page stays within its chapter
        if not paras:
            num = sec
        paras += [p for p in text.split("\n\n") if p]
        if sum(map(len, paras)) >= lo:
            kept: list[str] = []
            for p in paras:
                if kept and sum(map(len, kept)) + len(p) > hi:
                    break
                kept.append(p)
            if lo <= sum(map(len, kept)) <= hi:
                out.append((num, "\n\n".join(kept)))
            num, paras = "", []
    return out


def main(root: Path) -> None:
    for lang, (lo, hi) in BOUNDS.items():
        found = pages(sections(lang, root), lo, hi)
        step = len(found) / PAGES  # spread over the whole book
        chosen = [found[int(i * step)] for i in range(PAGES)]
        text = "\n\f\n".join(f"{num}\n{body}" for num, body in chosen)
        out = HERE / f"{lang}.txt.gz"
        with gzip.open(out, "wt", encoding="utf-8", compresslevel=9, newline="\n") as f:
            f.write(text + "\n")
        print(lang, len(found), "pages found,", len(chosen), "kept,", len(text), "chars")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
