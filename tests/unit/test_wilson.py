"""The Wilson score interval behind the quality page's precision: the published values, and the
properties a reader of the page relies on (inside 0..1, around the observed share, narrower
with more marks)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryadmin.quality.selectors import Precision, wilson_interval

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("successes", "trials", "lower", "upper"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
        # method 3 (score interval without continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        # The docstring's example: a reviewed sample of a good extractor.
        (8, 10, 0.4902, 0.9433),
    ],
)
def test_the_published_intervals(successes, trials, lower, upper):
    low, high = wilson_interval(successes, trials)
    assert low == pytest.approx(lower, abs=5e-5)
    assert high == pytest.approx(upper, abs=5e-5)


@pytest.mark.parametrize("trials", [0, -1])
def test_no_trials_is_the_whole_range(trials):
    assert wilson_interval(0, trials) == (0.0, 1.0)


counts = st.integers(min_value=1, max_value=100_000).flatmap(
    lambda trials: st.tuples(st.integers(min_value=0, max_value=trials), st.just(trials))
)


@given(counts)
def test_the_interval_lies_in_0_1_and_holds_the_observed_share(count):
    successes, trials = count
    low, high = wilson_interval(successes, trials)
    share = successes / trials
    # Within rounding: at 0 of n the bound is centre - half, which is 0 only up to 1e-16.
    assert 0.0 <= low <= share + 1e-12 and share - 1e-12 <= high <= 1.0
    assert low < high


@given(counts)
def test_successes_and_failures_mirror_each_other(count):
    successes, trials = count
    low, high = wilson_interval(successes, trials)
    mirrored_low, mirrored_high = wilson_interval(trials - successes, trials)
    assert low == pytest.approx(1 - mirrored_high, abs=1e-12)
    assert high == pytest.approx(1 - mirrored_low, abs=1e-12)


@given(counts)
def test_one_more_success_never_moves_the_interval_down(count):
    successes, trials = count
    if successes == trials:
        trials += 1
    low, high = wilson_interval(successes, trials)
    next_low, next_high = wilson_interval(successes + 1, trials)
    assert next_low >= low and next_high >= high


@given(
    st.integers(min_value=0, max_value=50).flatmap(
        lambda s: st.tuples(st.just(s), st.integers(min_value=max(s, 1), max_value=50))
    )
)
def test_four_times_the_marks_at_the_same_share_narrow_the_interval(count):
    successes, trials = count
    low, high = wilson_interval(successes, trials)
    more_low, more_high = wilson_interval(4 * successes, 4 * trials)
    assert more_high - more_low < high - low


def test_a_line_of_the_page_shows_its_share_and_interval():
    line = Precision("overall", correct=8, marked=10)
    assert (line.wrong, line.value, line.shown) == (2, 0.8, "80%")
    assert line.interval_shown == "49% to 94%"
    empty = Precision("week 49")
    assert (empty.value, empty.shown, empty.interval_shown) == (None, "—", "")
    assert (empty.lower, empty.upper) == (0.0, 1.0)
