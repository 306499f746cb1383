"""Memory quality in production: the weekly sample reviewers mark."""

from memoryadmin.conf.env import env

# How many learned facts (extraction or save_memory, last 7 days) the weekly draw takes,
# stratified by category and language, at most one per traveller.
QUALITY_SAMPLE_SIZE = env.int("QUALITY_SAMPLE_SIZE", default=50)
# How often beat draws a new sample (seconds): weekly.
QUALITY_DRAW_INTERVAL_SECONDS = env.float("QUALITY_DRAW_INTERVAL_SECONDS", default=7 * 86400.0)
