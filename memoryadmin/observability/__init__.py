"""What operators see: Prometheus metrics (`metrics.py`, `/metrics` in `views.py`, the worker's
own port in `worker.py`), request ids (`requestid.py`) and the logging setup (`logs.py`).

It sits just above the agent client: every app may count things here, and it imports none of
them. The apps register the gauges only they can read (`gauges.register_gauge_source`) from
their `AppConfig.ready()`."""
