"""Cron: the strict parser, Vixie day rules, and next fire times across DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.cron import (
    CronError,
    CronExpr,
    next_fire,
    parse_cron,
    resolve_zone,
    wall_instant,
)

NY, PARIS, LORD_HOWE = "America/New_York", "Europe/Paris", "Australia/Lord_Howe"
ZONES = ["UTC", NY, PARIS, LORD_HOWE]


def at(zone: str, *parts: int, fold: int = 0) -> float:
    """Epoch seconds of a wall time in ``zone``."""
    return datetime(*parts, tzinfo=ZoneInfo(zone), fold=fold).timestamp()  # type: ignore[misc]


def local(zone: str, instant: float) -> str:
    return datetime.fromtimestamp(instant, ZoneInfo(zone)).isoformat()


def fires(expr: str, after: float, zone: str, count: int) -> list[str]:
    out = []
    for _ in range(count):
        after = next_fire(expr, after, zone)
        out.append(local(zone, after))
    return out


# --- parsing -------------------------------------------------------------------------------


def test_fields_lists_ranges_steps_and_names():
    e = parse_cron("0,30 9-17/4 1-10/3 JAN-mar,dec MON-FRI")
    assert e.minutes == (0, 30)
    assert e.hours == (9, 13, 17)
    assert e.days == {1, 4, 7, 10}
    assert e.months == {1, 2, 3, 12}
    assert e.weekdays == {1, 2, 3, 4, 5}
    assert not e.dom_star and not e.dow_star
    assert e.text == "0,30 9-17/4 1-10/3 JAN-mar,dec MON-FRI"


def test_star_steps_and_sunday_as_seven():
    e = parse_cron("*/15 */6 * * 5-7")
    assert e.minutes == (0, 15, 30, 45)
    assert e.hours == (0, 6, 12, 18)
    assert e.weekdays == {0, 5, 6}
    assert e.dom_star and not e.dow_star
    assert parse_cron("0 0 * * 7").weekdays == {0}
    assert parse_cron("0 0 * * */2").weekdays == {0, 2, 4, 6}


@pytest.mark.parametrize(
    ("macro", "same_as"),
    [("@hourly", "0 * * * *"), ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"),
     ("@weekly", "0 0 * * 0"), ("@monthly", "0 0 1 * *"), ("@yearly", "0 0 1 1 *"),
     ("@ANNUALLY", "0 0 1 1 *")],
)
def test_shorthands(macro, same_as):
    assert parse_cron(macro) == parse_cron(same_as)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("60 * * * *", "minute field: 60 is out of range 0-59"),
        ("* 24 * * *", "hour field: 24 is out of range 0-23"),
        ("* * 0 * *", "day-of-month field: 0 is out of range 1-31"),
        ("* * 32 * *", "day-of-month field: 32 is out of range 1-31"),
        ("* * * 13 *", "month field: 13 is out of range 1-12"),
        ("* * * * 8", "day-of-week field: 8 is out of range 0-7"),
        ("*/0 * * * *", "minute field: step must be at least 1, got 0"),
        ("* 1-5/0 * * *", "hour field: step must be at least 1"),
        ("*/x * * * *", "minute field: step 'x' is not a number"),
        ("* * * *", "expected 5 fields"),
        ("* * * * * *", "got 6"),
        ("", "got 0"),
        ("5-1 * * * *", "minute field: range '5-1' is reversed"),
        ("* * * * FRI-MON", "day-of-week field: range 'FRI-MON' is reversed"),
        ("5/15 * * * *", "a step needs '*' or a range, e.g. 5-59/15"),
        ("1,,2 * * * *", "minute field: empty element"),
        ("* * * FOO *", "month field: 'FOO' is not a number or a name like JAN"),
        ("* * * * SUNDAY", "day-of-week field: 'SUNDAY' is not a number or a name like SUN"),
        ("x * * * *", "minute field: 'x' is not a number"),
        ("* JAN * * *", "hour field: 'JAN' is not a number"),
        ("-1 * * * *", "minute field: '' is not a number"),
        ("\u0661 * * * *", "is not a number"),  # a non-ASCII digit
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6,9,11 *", "never fires"),
        ("@reboot", "unknown shorthand"),
    ],
)
def test_errors_name_the_field_and_the_problem(expr, message):
    with pytest.raises(CronError, match="cron") as info:
        parse_cron(expr)
    assert message in str(info.value)


def test_non_text_is_refused():
    with pytest.raises(CronError, match="must be text"):
        parse_cron(5)  # type: ignore[arg-type]


def test_an_impossible_day_with_a_weekday_still_fires_on_the_weekday():
    # Both fields restricted: OR rule, so the weekday still fires.
    got = fires("0 0 30 2 MON", at("UTC", 2024, 1, 1), "UTC", 5)
    assert got == ["2024-02-05T00:00:00+00:00", "2024-02-12T00:00:00+00:00",
                   "2024-02-19T00:00:00+00:00", "2024-02-26T00:00:00+00:00",
                   "2025-02-03T00:00:00+00:00"]


# --- zones ---------------------------------------------------------------------------------


def test_resolve_zone():
    assert resolve_zone(None) is UTC
    assert resolve_zone("utc") is UTC
    assert resolve_zone("Z") is UTC
    paris = ZoneInfo(PARIS)
    assert resolve_zone(PARIS) == paris
    assert resolve_zone(paris) is paris


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "", "../etc/passwd", "/abs"])
def test_bad_zone_is_named(name):
    with pytest.raises(CronError, match="unknown time zone"):
        resolve_zone(name)
    with pytest.raises(CronError, match="unknown time zone"):
        next_fire("* * * * *", 0.0, name)


# --- next fire, UTC ------------------------------------------------------------------------


def test_next_fire_is_strictly_after():
    t0 = at("UTC", 2024, 5, 1, 3, 0)
    assert next_fire("0 3 * * *", t0 - 0.5) == t0
    assert next_fire("0 3 * * *", t0) == t0 + 86400
    assert next_fire("* * * * *", t0 + 1.5) == t0 + 60


def test_month_and_year_rollover():
    assert fires("0 0 1 JAN *", at("UTC", 2024, 2, 10), "UTC", 1) == ["2025-01-01T00:00:00+00:00"]
    assert fires("30 23 31 DEC *", at("UTC", 2024, 12, 31, 23, 30), "UTC", 1) == [
        "2025-12-31T23:30:00+00:00"
    ]
    assert fires("0 12 * 11 *", at("UTC", 2024, 12, 5), "UTC", 1) == [
        "2025-11-01T12:00:00+00:00"
    ]


def test_leap_day_only_fires_in_leap_years():
    assert fires("0 0 29 2 *", at("UTC", 2025, 3, 1), "UTC", 2) == [
        "2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"
    ]


def test_vixie_or_rule_when_both_day_fields_are_restricted():
    # The 13th of each month OR every Friday.
    got = fires("0 0 13 * FRI", at("UTC", 2024, 9, 1), "UTC", 4)
    assert got == ["2024-09-06T00:00:00+00:00", "2024-09-13T00:00:00+00:00",
                   "2024-09-20T00:00:00+00:00", "2024-09-27T00:00:00+00:00"]
    got = fires("0 0 13 * FRI", at("UTC", 2024, 10, 1), "UTC", 3)
    assert got == ["2024-10-04T00:00:00+00:00", "2024-10-11T00:00:00+00:00",
                   "2024-10-13T00:00:00+00:00"]


def test_vixie_star_step_counts_as_unrestricted_for_the_day_rule():
    # '*/2' starts with '*': AND rule, so only Mondays that fall on odd days.
    got = fires("0 0 */2 * MON", at("UTC", 2023, 12, 31), "UTC", 3)
    assert got == ["2024-01-01T00:00:00+00:00", "2024-01-15T00:00:00+00:00",
                   "2024-01-29T00:00:00+00:00"]


def test_late_in_the_day_moves_to_the_next_matching_day():
    assert fires("15 8 * * MON-FRI", at("UTC", 2024, 6, 7, 23, 59), "UTC", 2) == [
        "2024-06-10T08:15:00+00:00", "2024-06-11T08:15:00+00:00"
    ]


def test_matches_and_wall_instant():
    e = parse_cron("30 2 * * *")
    assert e.matches(datetime(2024, 1, 1, 2, 30))
    assert not e.matches(datetime(2024, 1, 1, 2, 31))
    assert wall_instant(datetime(2024, 1, 1), UTC) == at("UTC", 2024, 1, 1)


def test_horizon_guard_for_an_expression_that_never_fires():
    never = CronExpr("x", (0,), (0,), frozenset({31}), frozenset({2}), frozenset(range(7)),
                     dom_star=False, dow_star=True)
    with pytest.raises(CronError, match="does not fire within 28 years"):
        next_fire(never, 0.0)


# --- next fire across DST ------------------------------------------------------------------


def test_new_york_spring_forward_fires_once_at_the_first_valid_instant():
    # 2024-03-10: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist.
    start = at(NY, 2024, 3, 9, 12, 0)
    assert fires("30 2 * * *", start, NY, 3) == [
        "2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00", "2024-03-12T02:30:00-04:00"
    ]
    # Every skipped time collapses onto the transition, which fires once; 3:00 too.
    assert fires("*/20 2,3 * * *", at(NY, 2024, 3, 10, 1, 0), NY, 4) == [
        "2024-03-10T03:00:00-04:00", "2024-03-10T03:20:00-04:00",
        "2024-03-10T03:40:00-04:00", "2024-03-11T02:00:00-04:00",
    ]


def test_new_york_fall_back_fires_once_in_the_repeated_hour():
    # 2024-11-03: 02:00 EDT goes back to 01:00 EST; 01:30 happens twice.
    start = at(NY, 2024, 11, 2, 12, 0)
    assert fires("30 1 * * *", start, NY, 3) == [
        "2024-11-03T01:30:00-04:00",
        "2024-11-04T01:30:00-05:00", "2024-11-05T01:30:00-05:00",
    ]
    # Each wall time once: the second pass through 01:xx fires nothing.
    assert fires("*/30 * * * *", at(NY, 2024, 11, 3, 0, 0), NY, 5) == [
        "2024-11-03T00:30:00-04:00", "2024-11-03T01:00:00-04:00", "2024-11-03T01:30:00-04:00",
        "2024-11-03T02:00:00-05:00", "2024-11-03T02:30:00-05:00",
    ]
    # Asked from inside the second pass, it does not go back to fire 01:45 again.
    inside = at(NY, 2024, 11, 3, 1, 20, fold=1)
    assert local(NY, next_fire("45 1 * * *", inside, NY)) == "2024-11-04T01:45:00-05:00"


def test_paris_transitions():
    # 2024-03-31 02:00 CET → 03:00 CEST; 2024-10-27 03:00 CEST → 02:00 CET.
    assert fires("30 2 * * *", at(PARIS, 2024, 3, 30, 12), PARIS, 2) == [
        "2024-03-31T03:00:00+02:00", "2024-04-01T02:30:00+02:00"
    ]
    assert fires("30 2 * * *", at(PARIS, 2024, 10, 26, 12), PARIS, 2) == [
        "2024-10-27T02:30:00+02:00", "2024-10-28T02:30:00+01:00"
    ]
    # A daily 03:00 job on the spring-forward day still fires once, at 03:00 CEST.
    assert fires("0 3 * * *", at(PARIS, 2024, 3, 30, 12), PARIS, 2) == [
        "2024-03-31T03:00:00+02:00", "2024-04-01T03:00:00+02:00"
    ]


def test_lord_howe_half_hour_shift():
    # 2024-10-06 02:00 (+10:30) → 02:30 (+11): 02:15 does not exist.
    assert fires("15 2 * * *", at(LORD_HOWE, 2024, 10, 5, 12), LORD_HOWE, 2) == [
        "2024-10-06T02:30:00+11:00", "2024-10-07T02:15:00+11:00"
    ]


# --- properties ----------------------------------------------------------------------------


def _field(values: list[int]) -> str:
    return ",".join(str(v) for v in sorted(set(values)))


exprs = st.builds(
    lambda m, h, dom, mon, dow: f"{m} {h} {dom} {mon} {dow}",
    st.one_of(st.just("*"), st.lists(st.integers(0, 59), min_size=1, max_size=4).map(_field),
              st.integers(1, 30).map(lambda s: f"*/{s}")),
    st.one_of(st.just("*"), st.lists(st.integers(0, 23), min_size=1, max_size=3).map(_field),
              st.integers(1, 12).map(lambda a: f"{a}-23/2")),
    st.one_of(st.just("*"), st.lists(st.integers(1, 28), min_size=1, max_size=3).map(_field)),
    st.one_of(st.just("*"), st.lists(st.integers(1, 12), min_size=1, max_size=3).map(_field)),
    st.one_of(st.just("*"), st.lists(st.integers(0, 7), min_size=1, max_size=3).map(_field),
              st.just("MON-FRI")),
)
instants = st.floats(at("UTC", 2000, 1, 1), at("UTC", 2040, 1, 1), allow_nan=False)
zones = st.sampled_from(ZONES)


def _is_gap_end(instant: float, zone: str, expr: CronExpr) -> bool:
    """Whether ``instant`` is a spring-forward transition that swallowed a matching time."""
    z = ZoneInfo(zone)
    before = datetime.fromtimestamp(instant - 1, z).utcoffset()
    after = datetime.fromtimestamp(instant, z).utcoffset()
    if before is None or after is None or after <= before:
        return False
    wall = datetime.fromtimestamp(instant, z).replace(tzinfo=None)
    skipped = wall - (after - before)
    while skipped < wall:
        if expr.matches(skipped):
            return True
        skipped += timedelta(minutes=1)
    return False


@settings(max_examples=300, deadline=None)
@given(exprs, instants, zones)
def test_fire_is_after_and_matches_or_is_a_gap_end(text, after, zone):
    expr = parse_cron(text)
    fire = next_fire(expr, after, zone)
    assert fire > after
    moment = datetime.fromtimestamp(fire, ZoneInfo(zone))
    if expr.matches(moment.replace(tzinfo=None)):
        assert moment.fold == 0  # first occurrence only
    else:
        assert _is_gap_end(fire, zone, expr)


@settings(max_examples=200, deadline=None)
@given(exprs, instants, st.floats(0, 5e6), zones)
def test_next_fire_is_monotone(text, a, delta, zone):
    assert next_fire(text, a, zone) <= next_fire(text, a + delta, zone)


@settings(max_examples=150, deadline=None)
@given(exprs, instants, zones)
def test_iterating_never_repeats_a_fire(text, after, zone):
    first = next_fire(text, after, zone)
    assert next_fire(text, first, zone) > first
    # Nothing fires between `after` and the first fire.
    assert next_fire(text, first - 0.001, zone) == first


def _transitions(zone: str, year: int) -> list[float]:
    z = ZoneInfo(zone)
    found, t, end = [], at("UTC", year, 1, 1), at("UTC", year + 1, 1, 1)
    previous = datetime.fromtimestamp(t, z).utcoffset()
    while t < end:
        t += 1800
        offset = datetime.fromtimestamp(t, z).utcoffset()
        if offset != previous:
            low, high = t - 1800, t
            while high - low > 1:
                mid = (low + high) // 2
                if datetime.fromtimestamp(mid, z).utcoffset() == offset:
                    high = mid
                else:
                    low = mid
            found.append(float(high))
            previous = offset
    return found


TRANSITIONS = [(z, t) for z in (NY, PARIS, LORD_HOWE) for y in (2023, 2024, 2031)
               for t in _transitions(z, y)]

frequent = st.builds(
    lambda m, h: f"{m} {h} * * *",
    st.one_of(st.lists(st.integers(0, 59), min_size=1, max_size=4).map(_field),
              st.sampled_from(["*/5", "*/15", "*/30", "0", "30", "45"])),
    st.one_of(st.just("*"), st.lists(st.integers(0, 6), min_size=1, max_size=4).map(_field)),
)


@settings(max_examples=120, deadline=None)
@given(frequent, st.sampled_from(TRANSITIONS), st.integers(-6 * 3600, 6 * 3600))
def test_matches_a_brute_force_oracle_around_transitions(text, transition, shift):
    zone, instant = transition
    expr, z = parse_cron(text), ZoneInfo(zone)
    after = instant + shift + 0.5
    # Oracle: walk whole minutes of real time; a minute fires if it is the first
    # occurrence of a matching wall time, or a transition that swallowed one.
    t = (int(after) // 60 + 1) * 60
    for _ in range(3 * 24 * 60):
        moment = datetime.fromtimestamp(t, z)
        if (moment.fold == 0 and expr.matches(moment.replace(tzinfo=None))) or _is_gap_end(
            t, zone, expr
        ):
            break
        t += 60
    assert next_fire(expr, after, zone) == t
