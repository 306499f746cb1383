"""Test doubles of other parties' services (the Anthropic Messages API), used by the tests and
by bench/; never imported by the running app."""
