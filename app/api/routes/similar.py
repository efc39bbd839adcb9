"""GET /similar/{id} and POST /similar: verified near-duplicates."""

from __future__ import annotations

import re
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request, Response

from app.api import answers, replies, schemas
from app.api.answers import containment_answer, query_answer
from app.api.deps import deadline_of, get_index
from app.api.problems import problem
from app.api.routing import Route, with_fast_path
from app.api.text_query import answer_text, similar_answer
from app.index import Index, QueryResult
from app.index.filters import Filter
from app.store import reads

router = APIRouter(tags=["similar"], route_class=Route)
IndexDep = Annotated[Index, Depends(get_index)]
# numpy scalars, should a result ever carry one, are written as plain numbers.
_DUMPS_OPTIONS = orjson.OPT_SERIALIZE_NUMPY
DEFAULT_LIMIT = answers.DEFAULT_LIMIT


def similar_out(
    result: QueryResult, threshold: float, doc_id: str | None = None
) -> replies.SimilarOut:
    return replies.SimilarOut.model_validate(query_answer(result, threshold, doc_id))


def _answer(body: dict[str, Any]) -> Response:
    # The hot routes: the body is written by orjson straight from the index's answer,
    # not built as a pydantic model and validated again against response_model (which
    # stays, for the schema).
    return Response(orjson.dumps(body, option=_DUMPS_OPTIONS), media_type="application/json")


# Query values the fast path below takes as they are: plain decimals, and nothing that
# validation could read in more than one way. Anything else goes through FastAPI.
_THRESHOLD = re.compile(r"0\.[0-9]{1,17}|1(?:\.0{1,17})?")
_LIMIT = re.compile(r"[1-9][0-9]{0,3}")


def _stored_args(request: Request) -> tuple[str, float | None, int] | None:
    """GET /similar/{id}'s arguments when they are plainly valid, else None.

    FastAPI reads and validates path and query parameters through generic machinery
    that costs more than the rest of the request's HTTP handling together. A request
    whose id passes schemas.check_id and whose threshold and limit are absent or plain
    in-range decimals gets exactly the values validation would give it; every other
    request, including every invalid one, is left to FastAPI, so its answers (and
    422 details) are the same as they always were.
    """
    scope = request.scope
    doc_id = scope["path_params"]["doc_id"]
    try:
        schemas.check_id(doc_id)
    except ValueError:
        return None
    threshold: float | None = None
    limit = DEFAULT_LIMIT
    if scope["query_string"]:
        query = request.query_params  # the last value of a repeated name, as FastAPI's
        if not _SLOW_FIELDS.isdisjoint(query.keys()):  # measure, evidence, filter: FastAPI's
            return None
        given = query.get("threshold")
        if given is not None:
            if not _THRESHOLD.fullmatch(given):
                return None
            threshold = float(given)
            if not 0.0 < threshold <= 1.0:
                return None
        given = query.get("limit")
        if given is not None:
            if not _LIMIT.fullmatch(given):
                return None
            limit = int(given)
            if limit > schemas.MAX_LIMIT:
                return None
    return doc_id, threshold, limit


# The fast paths take unfiltered Jaccard queries only: the measure left at its default.
_SLOW_FIELDS = frozenset({"measure", "evidence", "filter", "consistency"})
_TEXT_FIELDS = frozenset({"text", "threshold", "limit"})


async def _text_args(request: Request) -> tuple[str, float | None, int] | None:
    """POST /similar's body fields when the body is plainly valid, else None.

    As _stored_args, for FastAPI's body handling: a body sent as application/json that
    orjson reads as an object with a string text, and threshold and limit absent, null
    or a float and an int in range, and nothing else, is what validation would accept as
    it is (the JSON that orjson reads, json.loads reads the same way). Every other body
    is left to FastAPI, which reads it again (Starlette keeps it) and answers as always.
    """
    if request.headers.get("content-type") != "application/json" or request.scope["query_string"]:
        return None
    try:
        body = orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        return None
    if type(body) is not dict or not body.keys() <= _TEXT_FIELDS:
        return None
    text = body.get("text")
    threshold = body.get("threshold")
    limit = body.get("limit", DEFAULT_LIMIT)
    if (
        type(text) is not str
        or (threshold is not None and (type(threshold) is not float or not 0 < threshold <= 1))
        or type(limit) is not int
        or not 1 <= limit <= schemas.MAX_LIMIT
    ):
        return None
    return text, threshold, limit


async def _stored_fast(request: Request) -> Response | None:
    args = _stored_args(request)
    return None if args is None else await similar_to_stored(args[0], request, args[1], args[2])


async def _text_fast(request: Request) -> Response | None:
    args = await _text_args(request)
    return None if args is None else _answer(await similar_answer(request, *args))


async def similar_to_stored(
    doc_id: schemas.PathId,
    request: Request,
    threshold: Annotated[schemas.QueryThreshold | None, Query()] = None,
    limit: Annotated[schemas.Limit | None, Query(description=schemas.LIMIT_DOC)] = None,
    measure: Annotated[schemas.Measure, Query(description=schemas.MEASURE_DOC)] = "jaccard",
    evidence: Annotated[bool, Query(description=schemas.EVIDENCE_DOC)] = False,
    filter: Annotated[
        str | None,
        Query(
            description=f"JSON: {schemas.FILTER_DOC}",
            examples=[orjson.dumps(schemas.FILTER_EXAMPLE).decode()],
        ),
    ] = None,
    consistency: Annotated[schemas.Consistency, Query(description=schemas.CONSISTENCY_DOC)] = (
        "eventual"
    ),
) -> Response:
    """Stored near-duplicates of a stored document, most similar first, itself excluded;
    with measure=containment, the stored documents that hold passages of it."""
    reads.strong(consistency == "strong")
    index = await get_index(request)  # not a dependency: those cost per request too
    where = None if filter is None else Filter.parse(filter)
    if measure == "containment" or evidence:
        try:
            schemas.check_measure(measure, evidence)
        except ValueError as exc:
            return problem(422, "Invalid request", f"evidence: {exc}", field="evidence")
        t = index.check_containment(threshold)
        found = await index.containment_of_id(doc_id, t, limit, where, deadline_of(request))
        if found is None:
            return _missing(doc_id)
        return _answer(containment_answer(found, t, evidence, doc_id))
    used = index.check_threshold(threshold)
    result = await index.similar_to_id(doc_id, used, limit or DEFAULT_LIMIT, where)
    if result is None:
        return _missing(doc_id)
    return _answer(query_answer(result, used, doc_id))


def _missing(doc_id: str) -> Response:
    # Built only when it is the answer: a problem response per query was a cost of every
    # GET, found or not.
    return problem(404, "Not found", f"no document with id {doc_id!r}")


async def similar_to_text(
    body: schemas.SimilarIn,
    request: Request,
    consistency: Annotated[schemas.Consistency, Query(description=schemas.CONSISTENCY_DOC)] = (
        "eventual"
    ),
) -> Response:
    """Stored near-duplicates of a text that is not stored; with measure=containment,
    the stored documents that hold passages of it."""
    return _answer(await answer_text(body, request, consistency))


router.add_api_route(
    "/similar/{doc_id:docid}",
    similar_to_stored,
    methods=["GET"],
    response_model=replies.SimilarOut | replies.ContainmentOut,
    responses={404: {"model": replies.Problem, "description": "unknown id"}},
    route_class_override=with_fast_path(_stored_fast),
)
router.add_api_route(
    "/similar",
    similar_to_text,
    methods=["POST"],
    response_model=replies.SimilarOut | replies.ContainmentOut,
    route_class_override=with_fast_path(_text_fast),
)
