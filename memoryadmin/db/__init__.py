"""The database layer: everything about *where* and *how* a statement runs, none of *what* it
means. Read replicas and read-your-writes (`routing`: the decision; `replicas`, `async_reads`:
its drivers; `positions`: the write positions in Redis), monthly partitions (`partitions`), the
hot path's cursor and pipelines (`cursors`), the one Redis client module (`redis`, with the
positions' watch in `redis_watch`) and the fenced speed tricks (`fastpaths`). It imports no app
of ours: the domain (`facts` and the apps above it) sits on it. See docs/ARCHITECTURE.md, "Layers".
"""
