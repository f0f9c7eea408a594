"""AMQP topic matching for event routing keys (``*`` one word, ``#`` any number)."""

from __future__ import annotations


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
