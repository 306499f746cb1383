"""English dates as GOV.UK writes them ("5 December 2026"), not Django's American "Dec. 5,
2026"; times on the 24-hour clock airlines use ("5 December 2026 at 14:30")."""

DATE_FORMAT = "j F Y"
DATETIME_FORMAT = r"j F Y \a\t H:i"
MONTH_DAY_FORMAT = "j F"
YEAR_MONTH_FORMAT = "F Y"
