"""Cron expressions: a strict parser and the next fire time in a time zone.

Five fields — minute, hour, day-of-month, month, day-of-week — each ``*``, a
number, a range ``a-b``, a step ``*/n`` or ``a-b/n``, or a comma list of these.
Months and weekdays also take names (``JAN``-``DEC``, ``SUN``-``SAT``); weekday
``7`` is Sunday like ``0``. The ``@hourly``, ``@daily``/``@midnight``,
``@weekly``, ``@monthly`` and ``@yearly``/``@annually`` shorthands are read too.

Day-of-month and day-of-week follow Vixie cron: when both are restricted a day
matches if *either* does; a field that starts with ``*`` (``*`` or ``*/n``)
counts as unrestricted for that rule, exactly as in Vixie cron.

Times are wall-clock times in the schedule's zone, and each matching wall time
fires once:

- in the hour repeated when clocks go back, a matching time fires at its first
  occurrence only (never twice);
- a matching time skipped when clocks go forward fires at the first valid
  instant after it (the transition), once even if several times were skipped.

Everything here is pure: the clock is passed in as epoch seconds.
"""

from __future__ import annotations

import calendar
import functools
from bisect import bisect_left
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_NAMES: tuple[dict[str, int], ...] = (
    {},
    {},
    {},
    {name: i + 1 for i, name in enumerate(_MONTHS)},
    {name: i for i, name in enumerate(_DAYS)},
)
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Longest month per month number (February counted as 29: leap years exist).
_LONGEST = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
HORIZON_YEARS = 28
"""How far next_fire looks ahead. Parsing rejects expressions that never fire,
so the worst real case, 29 February only, is found within 8 years."""


class CronError(ValueError):
    """A cron expression or time zone that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class CronExpr:
    """A parsed cron expression. Sets hold the values each field allows."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday … 6 = Saturday (a 7 in the text is stored as 0)."""
    dom_star: bool
    dow_star: bool

    def day_matches(self, day: date) -> bool:
        """Whether ``day`` is a firing day (month checked by the caller)."""
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.dom_star or self.dow_star:
            # Vixie cron: with either field unrestricted, both must match
            # (the unrestricted one always does).
            return dom and dow
        return dom or dow

    def matches(self, wall: datetime) -> bool:
        """Whether the wall-clock time ``wall`` (minute precision) is a firing time."""
        return (
            wall.minute in self.minutes
            and wall.hour in self.hours
            and wall.month in self.months
            and self.day_matches(wall.date())
        )


def _number(token: str, index: int, where: str) -> int:
    """One field value: digits, or a month/weekday name where the field allows it."""
    names = _NAMES[index]
    upper = token.upper()
    if upper in names:
        return names[upper]
    if not token.isdigit() or not token.isascii():
        allowed = " or a name like " + next(iter(names)) if names else ""
        raise CronError(f"{where}: {token!r} is not a number{allowed}")
    low, high = _BOUNDS[index]
    value = int(token)
    if not low <= value <= high:
        raise CronError(f"{where}: {value} is out of range {low}-{high}")
    return value


def _field(text: str, index: int, expr: str) -> tuple[frozenset[int], bool]:
    """The values of one field and whether it starts with ``*`` (Vixie's 'star')."""
    where = f"cron {expr!r}: {FIELD_NAMES[index]} field"
    low, high = _BOUNDS[index]
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{where}: empty element in list {text!r}")
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or not step_text.isascii():
                raise CronError(f"{where}: step {step_text!r} is not a number")
            step = int(step_text)
            if step == 0:
                raise CronError(f"{where}: step must be at least 1, got 0")
        if base == "*":
            first, last = low, high
        elif "-" in base:
            start, _, end = base.partition("-")
            first, last = _number(start, index, where), _number(end, index, where)
            if first > last:
                raise CronError(f"{where}: range {base!r} is reversed (write low-high)")
        else:
            if slash:
                # Vixie cron rejects '5/15'; others read it differently. Be explicit.
                raise CronError(f"{where}: a step needs '*' or a range, e.g. {base}-{high}/{step}")
            first = last = _number(base, index, where)
        values.update(range(first, last + 1, step))
    if index == 4 and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values), text.startswith("*")


@functools.lru_cache(maxsize=1024)
def parse_cron(text: str) -> CronExpr:
    """Parse a five-field cron expression (or an ``@daily``-style shorthand).

    Raises :class:`CronError` naming the field and the problem.
    """
    if not isinstance(text, str):
        raise CronError(f"cron expression must be text, got {type(text).__name__}")
    source = text.strip()
    if source.startswith("@"):
        if source.lower() not in _MACROS:
            raise CronError(f"cron {text!r}: unknown shorthand (one of {', '.join(_MACROS)})")
        source = _MACROS[source.lower()]
    parts = source.split()
    if len(parts) != 5:
        raise CronError(
            f"cron {text!r}: expected 5 fields (minute hour day-of-month month "
            f"day-of-week), got {len(parts)}"
        )
    fields = [_field(part, i, text) for i, part in enumerate(parts)]
    (minutes, _), (hours, _), (days, dom_star), (months, _), (weekdays, dow_star) = fields
    expr = CronExpr(
        text=" ".join(parts),
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        days=days,
        months=months,
        weekdays=weekdays,
        dom_star=dom_star,
        dow_star=dow_star,
    )
    if dow_star and not any(d <= _LONGEST[m - 1] for m in months for d in days):
        # Day-of-week cannot rescue it (AND rule): e.g. '0 0 30 2 *' never fires.
        raise CronError(f"cron {text!r}: never fires (no such day in the months given)")
    return expr


def resolve_zone(name: str | tzinfo | None) -> tzinfo:
    """A time zone from its IANA name (``Europe/Paris``); ``None`` or ``UTC`` is UTC."""
    if isinstance(name, tzinfo):
        return name
    if name is None or name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(
            f"unknown time zone {name!r} (use an IANA name like Europe/Paris or UTC)"
        ) from None


def next_fire(expr: CronExpr | str, after: float, tz: str | tzinfo | None = None) -> float:
    """The first firing instant strictly after ``after`` (epoch seconds), in zone ``tz``.

    Pure: the same inputs always give the same instant. Raises :class:`CronError`
    for a bad expression or zone, or when nothing fires within the horizon.
    """
    cron = parse_cron(expr) if isinstance(expr, str) else expr
    zone = resolve_zone(tz)
    wall = datetime.fromtimestamp(after, zone).replace(tzinfo=None)
    # Wall times at or before wall(after) resolve to instants <= after (resolution
    # is monotone), so the search starts at the next whole minute.
    start = wall.replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.date()
    first_day = True
    last_year = min(start.year + HORIZON_YEARS, 9998)
    while day.year <= last_year:
        if day.month not in cron.months:
            day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
            first_day = False
            continue
        if cron.day_matches(day):
            found = _first_on_day(cron, day, start if first_day else None, zone, after)
            if found is not None:
                return found
        day += timedelta(days=1)
        first_day = False
    raise CronError(f"cron {cron.text!r}: does not fire within {HORIZON_YEARS} years")


def _first_on_day(
    cron: CronExpr, day: date, start: datetime | None, zone: tzinfo, after: float
) -> float | None:
    """The first matching instant on ``day`` after ``after`` (from wall time ``start``)."""
    hours = cron.hours
    for hour in hours[bisect_left(hours, start.hour) if start else 0 :]:
        minutes = cron.minutes
        first = bisect_left(minutes, start.minute) if start and hour == start.hour else 0
        for minute in minutes[first:]:
            instant = wall_instant(datetime(day.year, day.month, day.day, hour, minute), zone)
            # A wall time in the repeated hour, seen again after its first
            # occurrence fired, resolves before ``after``: it is not fired twice.
            if instant > after:
                return instant
    return None


def wall_instant(wall: datetime, zone: tzinfo) -> float:
    """Epoch seconds at which naive wall time ``wall`` first happens in ``zone``.

    Ambiguous (clocks went back): the first occurrence. Nonexistent (clocks went
    forward): the transition, the first valid instant after it.
    """
    if zone is UTC:
        return float(calendar.timegm(wall.timetuple()))
    instant = wall.replace(tzinfo=zone, fold=0).timestamp()
    if datetime.fromtimestamp(instant, zone).replace(tzinfo=None) == wall:
        return instant
    return _gap_end(wall, zone)


def _gap_end(wall: datetime, zone: tzinfo) -> float:
    """The transition instant of the gap holding the nonexistent wall time ``wall``."""
    # Read with the offset after the change, ``wall`` maps before the transition;
    # with the offset before it, after. The transition lies between: bisect on
    # whole seconds (tz database transitions are whole seconds).
    low = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    high = int(wall.replace(tzinfo=zone, fold=0).timestamp()) + 1
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).replace(tzinfo=None) > wall:
            high = middle
        else:
            low = middle
    return float(high)
