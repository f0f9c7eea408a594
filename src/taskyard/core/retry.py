"""Retry decisions: whether a failed attempt runs again, and after how long."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``retries`` extra attempts (N+1 in all), ``delay * backoff**(n-1)``, capped."""

    retries: int = 0
    delay: float = 0.0
    backoff: float = 1.0
    max_delay: float = 3600.0


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Run again after ``delay`` seconds, or give up (``retry`` is False)."""

    retry: bool
    delay: float = 0.0


def decide_retry(policy: RetryPolicy, failures: int, jitter: float) -> RetryDecision:
    """Decide after the job's handler failed for the ``failures``-th time (1-based,
    this failure included). Attempts that lost their worker are not failures of the
    handler: they have a budget of their own and do not count here.

    ``jitter`` is a number in [0, 1) supplied by the caller (random in the
    daemons, fixed in tests). It only ever shortens a delay, and never below half.
    """
    if failures > policy.retries:
        return RetryDecision(retry=False)
    try:
        grown = policy.delay * (policy.backoff ** max(failures - 1, 0))
    except OverflowError:  # backoff ** n past any float (a float power raises): the cap
        grown = policy.max_delay if policy.delay > 0 else 0.0
    base = min(grown, policy.max_delay)
    jitter = min(max(jitter, 0.0), 1.0)
    return RetryDecision(retry=True, delay=base * (1.0 - 0.5 * jitter))
