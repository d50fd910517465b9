"""How durations, dollars and counts read."""

import math
import re

import pytest

from planner.views.format import fmt_count, fmt_seconds, fmt_sig, fmt_usd, md_escape, short_name, time_unit


@pytest.mark.parametrize("seconds, text", [(0.0042, "4.2 ms"), (42, "42 s"), (1100, "18.3 min"), (18720, "5.2 h"),
                                           (267840, "3.1 days"), (None, "-")])
def test_durations_read_in_a_human_unit(seconds, text):
    assert fmt_seconds(seconds) == text


def test_a_duration_changes_unit_at_two_of_the_smaller_ones():
    assert fmt_seconds(119) == "119 s" and fmt_seconds(120) == "2 min"
    assert fmt_seconds(7199) == "120 min" and fmt_seconds(7200) == "2 h"
    assert fmt_seconds(172800) == "2 days"


def test_time_unit_follows_the_median():
    assert time_unit([30, 40, 50]) == ("s", 1.0)
    assert time_unit([30, 4000, 5000]) == ("min", 60.0)
    assert time_unit([None, 9000, 90000]) == ("h", 3600.0)
    assert time_unit([3e5]) == ("days", 86400.0)
    assert math.isclose(time_unit([])[1], 1.0)


def test_dollars_keep_their_digits_below_a_dollar():
    assert fmt_usd(0.000123) == "$0.000123" and fmt_usd(12345.6) == "$12,345.60" and fmt_usd(None) == "-"


def test_counts_take_a_suffix():
    assert fmt_count(132_192_000) == "132M" and fmt_count(25.37) == "25.4" and fmt_count(6.7e9) == "6.7B"


@pytest.mark.parametrize("x, text", [(12345.6, "12,346"), (3120.0, "3,120"), (0.333, "0.333"), (1.5, "1.5"),
                                     (1.234e-5, "0.00001234"), (-0.25, "-0.25"), (102, "102"), (0, "0"), (None, "-"),
                                     (float("nan"), "-"), (2.5e-12, "2.5e-12")])
def test_table_figures_keep_four_digits_without_an_exponent(x, text):
    """A table cell wraps at an exponent's hyphen ('1.2e-' / '05'): plain decimals read whole."""
    assert fmt_sig(x) == text


def test_short_names_drop_the_vendor_words():
    assert short_name("NVIDIA GeForce RTX 4090 24GB") == "RTX 4090 24GB"


@pytest.mark.parametrize("text", ["![tracker](http://evil.example/pixel.png)", "[click](javascript:alert(1))",
                                  "**loud** _quiet_ `code` # heading", "<img src=x onerror=alert(1)>",
                                  "$x^2$ :red[alarm] :material/warning:", "| a | b |\n|---|---|", "- item\n1. item"])
def test_escaped_text_renders_as_the_text_itself_and_nothing_else(text):
    from markdown_it import MarkdownIt
    html = MarkdownIt("commonmark").enable("table").render(md_escape(text))
    for tag in ("<a", "<img", "<em", "<strong", "<code", "<h1", "<table", "<li", "<script"):
        assert tag not in html, html
    assert html.startswith("<p>") and html.count("<p>") == 1


def test_escaping_keeps_one_line_and_caps_the_length():
    out = md_escape("a\nb" + "c" * 1000, limit=50)
    assert "\n" not in out and out.endswith("…") and len(out.replace("\\", "")) <= 51


def test_very_long_jobs_read_in_years_with_separators():
    assert fmt_seconds(2.78e6 * 86400) == "7,611 years"  # 2.78e6 days / 365.25
    assert fmt_seconds(730 * 86400) == "730 days" and fmt_seconds(731 * 86400) == "2 years"


# GitHub-flavoured Markdown's autolink literals, as Streamlit's renderer (remark-gfm: mdast-util-gfm-autolink-literal)
# finds them in text after backslash escapes are resolved; Python's \w is wider than JavaScript's, so these find more
GFM_URL = re.compile(r"(?i)(https?://|www(?=\.))[-.\w]+")
GFM_EMAIL = re.compile(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+")


@pytest.mark.parametrize("text", ["sign in at https://evil.example/login", "go to WWW.evil.example now",
                                  "http://x.y", "mail evil@evil.example today", "mailto:evil@evil.example",
                                  "xmpp:evil@evil.example/x", "see <https://evil.example>"])
def test_escaped_text_autolinks_nothing_and_reads_the_same(text):
    from html import unescape

    from markdown_it import MarkdownIt
    html = MarkdownIt("commonmark").render(md_escape(text))
    assert "<a" not in html
    seen = unescape(re.sub(r"<[^>]+>", "", html)).strip()  # what the renderer hands on as text
    assert not GFM_URL.search(seen) and not GFM_EMAIL.search(seen), seen
    assert seen.replace("\u2060", "") == text  # it reads as typed: the breaks are invisible


def test_text_no_page_can_send_is_replaced_not_sent():
    out = md_escape("a\ud800b\x1bc\x00d")
    out.encode("utf-8")
    assert "\x1b" not in out and "\x00" not in out
