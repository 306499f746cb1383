"""memoryadmin: the system of record for what the airline's agent remembers about travellers.

Deliberately empty: `memoryadmin.client` must import without Django or Celery. The Celery app
is loaded when Django starts (facts.apps) and found by `celery -A memoryadmin`.
"""
