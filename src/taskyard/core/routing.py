"""Event routing keys (TaskCluster's layout) and AMQP topic matching (``*`` one word,
``#`` any number)."""

from __future__ import annotations

SCHEDULER_ID = "taskyard"
"""First word of every event routing key (TaskCluster's schedulerId)."""


def job_key(graph_id: int | None, routing: str) -> str:
    """A job event's routing key; ``routing`` is the job's stored ``graph.job`` routing."""
    return f"{SCHEDULER_ID}.{graph_id or '_'}.{routing or '_._'}"


def routing_key(graph_id: int | None, graph_routing: str, job_routing: str) -> str:
    """``<scheduler-id>.<graph-id>.<graph routing>.<job routing>``; empty parts are ``_``."""
    return ".".join(
        (SCHEDULER_ID, str(graph_id) if graph_id else "_", graph_routing or "_", job_routing or "_")
    )


def topic_matches(pattern: str, key: str) -> bool:
    """True when the dot-separated ``key`` matches ``pattern`` under AMQP topic rules."""
    words, parts = key.split("."), pattern.split(".")
    # reachable[i]: the first i pattern parts can match the words consumed so far.
    reachable = [True] + [False] * len(parts)
    for i, part in enumerate(parts):
        if part == "#":
            reachable[i + 1] = reachable[i + 1] or reachable[i]
    for word in words:
        nxt = [False] * (len(parts) + 1)
        for i, part in enumerate(parts):
            if part == "#":
                # '#' may absorb this word (stay) whether entered before or now.
                if reachable[i] or reachable[i + 1]:
                    nxt[i + 1] = True
            elif reachable[i] and part in ("*", word):
                nxt[i + 1] = True
        for i, part in enumerate(parts):
            if part == "#":
                nxt[i + 1] = nxt[i + 1] or nxt[i]
        reachable = nxt
    return reachable[len(parts)]
