"""A text query's answer, as POST /similar gives it and a kept check stores it.

Both routes build it here, so a check is answered exactly as a query is and no route
module imports another.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request

from app.api import schemas
from app.api.answers import excluded_answer, query_answer, text_answer
from app.api.deps import deadline_of, get_index
from app.index.filters import Filter
from app.store import reads


async def answer_text(
    body: schemas.SimilarIn, request: Request, consistency: schemas.Consistency
) -> dict[str, Any]:
    """The answer to a text query: near-duplicates, or with measure=containment the
    stored documents holding passages of it; with return_text, the text as indexed."""
    reads.strong(consistency == "strong")
    where = None if body.filter is None else Filter.parse(body.filter.model_dump())
    # The text as indexed: with text/html the page's main text, with a file its text;
    # with a site, its own text (the site's template removed), which offsets refer to.
    text = await body.extracted()
    site = body.site if body.is_html else None  # a site's template is read from pages
    index = await get_index(request)
    if site is not None:
        # Its own text: the exclusions are found in the text the passages' offsets refer
        # to (found in the whole page, they lay a template line's length off). The index
        # is still told the site (a thin page says so); its own text is its own again.
        text = await index.sites.query_text(text, site)
    shown = {"text": text} if body.return_text else {}
    # Quotations and a reference list are found in Python, in time linear in the text but
    # not short for megabytes: on a worker thread, as alignment is, so the event loop
    # serves other requests meanwhile.
    excluding = body.measure == "containment" and body.exclude is not None
    if excluding:
        index.check_containment(body.threshold)  # a bad threshold refused before the work
    exclude = await asyncio.to_thread(body.exclusions, text) if excluding else None
    answer = await text_answer(
        index, text, body.measure, body.threshold, body.limit, where, body.evidence,
        exclude, deadline_of(request), site,
    )  # fmt: skip
    if exclude is not None and body.exclude is not None:
        answer["excluded"] = excluded_answer(exclude)
        answer["exclude"] = body.exclude.model_dump()
    return answer | shown


async def similar_answer(
    request: Request,
    text: str,
    threshold: float | None,
    limit: int,
    where: Filter | None = None,
    shown: dict[str, str] | None = None,
    site: str | None = None,
) -> dict[str, Any]:
    """The near-duplicates of text (Jaccard), with shown's fields added."""
    index = await get_index(request)
    used = index.check_threshold(threshold)
    result = await index.similar_to_text(text, used, limit, where, site)
    return query_answer(result, used) | (shown or {})
