"""``/api/v1/graphs``: submit, list, show (with counts by state), edges, add tasks, cancel."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from taskyard.api.documents import check_duplicates, load_json_document
from taskyard.api.http.auth import READ, WRITE
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.errors import ApiError
from taskyard.api.http.jsonio import OFF_LOOP, answer
from taskyard.api.http.schemas import ID_MAX, EdgeListOut, GraphIn, GraphListOut, GraphOut
from taskyard.api.http.tracing import call_in, request_context
from taskyard.api.http.views import graph_json, graphs_json
from taskyard.api.yard import Yard
from taskyard.store.reads.job_pages import graph_edges

router = APIRouter(prefix="/api/v1/graphs", tags=["graphs"])
GraphId = Annotated[int, Path(ge=1, le=ID_MAX, description="Graph id.")]
WithJobs = Annotated[bool, Query(description="Include the jobs (false for large graphs: "
                                             "page them with GET /api/v1/jobs?graph_id=).")]
EDGES_MAX = 100_000


def _graph(yard: Yard, graph_id: int, jobs: bool, status: int = 200) -> Response:
    return answer(graph_json(yard, yard.store.graphs.get(graph_id, jobs=jobs)), status)


async def _document(request: Request) -> dict[str, Any]:
    """The body as a graph document. Parsed here, not by the framework: a label given
    twice must be refused (naming it), not silently merged as JSON parsers do; and a
    large one (a 100,000-task graph is ~10 MB) is parsed on a thread."""
    raw = await request.body()
    if len(raw) > OFF_LOOP:
        return await run_in_threadpool(_parse, raw)
    return _parse(raw)


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        doc = load_json_document(raw)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict):
        raise ApiError(400, "body.tasks: an object of label → task is required")
    check_duplicates(doc, "body")
    return doc


GRAPH_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": GraphIn.model_json_schema()}}}}


@router.post("", status_code=201, response_model=GraphOut, dependencies=[WRITE],
             responses=errors(413, 422), openapi_extra=GRAPH_BODY,
             summary="Submit a graph (atomic, validated)")
async def submit_graph(request: Request, yard: YardDep, jobs: WithJobs = True) -> Any:
    doc = await _document(request)
    graph_id = await run_in_threadpool(call_in, request_context(request), yard.submit_graph,
                                       doc)
    return await run_in_threadpool(_graph, yard, graph_id, jobs, 201)


@router.get("", response_model=GraphListOut, dependencies=[READ], responses=errors(),
            summary="Graphs, newest first")
def list_graphs(
    yard: YardDep,
    state: Annotated[Literal["running", "blocked", "finished", "canceled"] | None,
                     Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Any:
    found = yard.graphs(state=state, limit=limit)
    return answer({"items": graphs_json(yard, found)})


@router.get("/{graph_id}", response_model=GraphOut, dependencies=[READ],
            responses=errors(404), summary="A graph, its jobs and its counts by state")
def show_graph(graph_id: GraphId, yard: YardDep, jobs: WithJobs = True) -> Any:
    return _graph(yard, graph_id, jobs)


@router.get("/{graph_id}/edges", response_model=EdgeListOut, dependencies=[READ],
            responses=errors(404), summary="The graph's requires edges (for drawing)")
def list_edges(graph_id: GraphId, yard: YardDep,
               limit: Annotated[int, Query(ge=1, le=EDGES_MAX)] = 10_000) -> Any:
    yard.store.graphs.get(graph_id, jobs=False)  # 404 for a graph that does not exist
    edges = graph_edges(yard.store, graph_id, limit=limit + 1)
    return answer({"items": [{"job_id": a, "requires_id": b, "condition": c}
                             for a, b, c in edges[:limit]],
                   "truncated": len(edges) > limit})


@router.post("/{graph_id}/tasks", response_model=GraphOut, dependencies=[WRITE],
             responses=errors(404, 409, 413, 422), openapi_extra=GRAPH_BODY,
             summary="Add tasks to a graph")
async def add_tasks(graph_id: GraphId, request: Request, yard: YardDep,
                    jobs: WithJobs = True) -> Any:
    doc = await _document(request)
    await run_in_threadpool(call_in, request_context(request), yard.add_graph_tasks,
                            graph_id, doc)
    return await run_in_threadpool(_graph, yard, graph_id, jobs)


@router.post("/{graph_id}/cancel", response_model=GraphOut, dependencies=[WRITE],
             responses=errors(404, 409), summary="Cancel a graph")
def cancel_graph(graph_id: GraphId, yard: YardDep, jobs: WithJobs = True) -> Any:
    yard.cancel_graph(graph_id)
    return _graph(yard, graph_id, jobs)
