"""memoryadmin: the system of record for what the airline's agent remembers about travellers.

Deliberately empty: importing the package loads neither Django nor Celery. The Celery app is
loaded when Django starts (facts.apps) and found by `celery -A memoryadmin`.
"""
