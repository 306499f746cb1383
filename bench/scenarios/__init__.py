"""One module per scenario of bench/run.py; each adds its rows (and their baselines) to the
table. `raw` holds the baselines' SQL that several scenarios share."""
