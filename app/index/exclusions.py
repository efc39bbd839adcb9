"""What a containment query may set aside: quotations (app.index.quotations) and a
bibliography (app.index.bibliography), as code-point spans of the query's text.

A reviewer does not count a passage the writer quoted, nor a shared reference list,
nor a phrase of a few words everyone writes. `detect` gives the spans a query's options
ask for; app.index.trimming applies them, and the least length that counts (short
matches), to aligned passages.
"""

from __future__ import annotations

import bisect

from app.index.bibliography import bibliography_spans
from app.index.passages import merge
from app.index.quotations import html_quote_spans, quote_spans
from app.index.spans import Span


def detect(
    text: str, quotes: bool, bibliography: bool, quoted_html: list[str] | None = None
) -> list[Span]:
    """The spans of text to set aside for these options: quotations (and the page's
    <blockquote>/<q> texts, for a page), and the trailing bibliography."""
    spans: list[Span] = []
    if quotes:
        spans.extend(quote_spans(text))
        if quoted_html:
            spans.extend(html_quote_spans(quoted_html, text))
    bib = bibliography_spans(text) if bibliography else []
    if bib:
        # Quotations inside the bibliography are part of it (titles are often quoted).
        starts = [b.start for b in bib]

        def inside(s: Span) -> bool:
            at = bisect.bisect_left(starts, s.end) - 1  # the last list span starting before
            return at >= 0 and bib[at].end > s.start

        spans = [s for s in spans if not inside(s)]
        spans.extend(bib)
    if quotes:
        quoted = merge([(s.start, s.end) for s in spans if s.reason == "quote"])
        spans = [Span(a, b, "quote") for a, b in quoted] + [s for s in spans if s.reason != "quote"]
    return sorted(spans, key=lambda s: (s.start, s.end))
