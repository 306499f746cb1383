"""The whole database as `pg_dump` writes it: the proof that an erased value is gone from every
table (committed data only, so tests using it need django_db(transaction=True))."""

from __future__ import annotations

import os
import subprocess

from django.db import connection


def pg_dump_text() -> str:
    """`pg_dump --data-only` of the test database, as text."""
    params = connection.settings_dict
    env = {**os.environ}
    if params.get("PASSWORD"):
        env["PGPASSWORD"] = str(params["PASSWORD"])
    command = ["pg_dump", "--data-only", "--no-owner", "-d", params["NAME"]]
    if params.get("HOST"):
        command += ["-h", str(params["HOST"])]
    if params.get("PORT"):
        command += ["-p", str(params["PORT"])]
    if params.get("USER"):
        command += ["-U", str(params["USER"])]
    done = subprocess.run(command, capture_output=True, check=True, env=env, timeout=120)
    return done.stdout.decode("utf-8")
