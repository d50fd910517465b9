"""How old the prices in use are: ages, the stale threshold, the oldest and newest date, the cheapest pick's note."""

from datetime import date

from planner.inputs.catalog import STALE_AFTER_DAYS, Price
from planner.inputs.price_snapshot import price_dates, stale_note

TODAY = date(2026, 11, 22)
# 2025-06-21 -> 2026-06-21 is 365 days; to 2026-11-21 adds 30 + 31 + 31 + 30 + 31 = 153; one more to the 22nd: 519
OLD = Price(0.16, date(2025, 6, 21), "third-party dump")
NEW = Price(2.69, date(2026, 11, 9), "RunPod page")  # 13 days before TODAY
UNDATED = Price(1.0, None, "no date")
MINE = Price(0.5, date(2020, 1, 1), "entered by you", "custom")


def test_age_in_days_counted_by_hand():
    assert OLD.age_days(TODAY) == 519 and NEW.age_days(TODAY) == 13 and UNDATED.age_days(TODAY) is None


def test_the_threshold_is_strictly_older_than_and_a_setting():
    assert STALE_AFTER_DAYS == 90  # the default
    p = Price(1.0, date(2026, 8, 24), "x")  # 7 + 30 + 31 + 22 = 90 days before TODAY
    assert p.age_days(TODAY) == 90 and not p.is_stale(TODAY)
    assert Price(1.0, date(2026, 8, 23), "x").is_stale(TODAY)  # 91 days
    assert NEW.is_stale(TODAY, stale_after_days=10) and not OLD.is_stale(TODAY, stale_after_days=600)


def test_dates_in_use_skip_missing_and_own_prices_and_count_undated_as_stale():
    d = price_dates([OLD, None, NEW, UNDATED, MINE], TODAY)
    assert (d.oldest, d.newest, d.stale, d.priced) == (date(2025, 6, 21), date(2026, 11, 9), 2, 3)
    assert d.sentence() == ("3 prices dated 2025-06-21 to 2026-11-09; 2 of 3 are older than 90 days or undated")


def test_dates_sentence_for_one_date_none_stale_and_no_price():
    assert price_dates([NEW, NEW], TODAY).sentence() == "2 prices dated 2026-11-09; none older than 90 days"
    assert price_dates([None, MINE], TODAY).sentence() == "no price in use"
    assert price_dates([OLD], TODAY, 600).stale == 0


def test_the_cheapest_pick_says_when_it_rests_on_a_stale_price():
    assert stale_note(OLD, TODAY) == "rests on a price from 2025-06-21 (519 days old)"
    assert stale_note(UNDATED, TODAY) == "rests on an undated price"
    assert stale_note(NEW, TODAY) is None and stale_note(MINE, TODAY) is None and stale_note(None, TODAY) is None
    assert stale_note(OLD, TODAY, stale_after_days=519) is None  # exactly at the threshold is not stale
