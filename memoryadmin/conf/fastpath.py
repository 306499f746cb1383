"""Fenced speed tricks: each shortcut on the agent's hot path can be turned off on its own
(FASTPATH_...=false) if it ever misbehaves, leaving the plain, slower path."""

from memoryadmin.conf.env import env

FASTPATH_DJANGO_CURSOR = env.bool("FASTPATH_DJANGO_CURSOR", default=True)
FASTPATH_PYDANTIC_MODELS = env.bool("FASTPATH_PYDANTIC_MODELS", default=True)
FASTPATH_REDIS_CLIENT = env.bool("FASTPATH_REDIS_CLIENT", default=True)
FASTPATH_CSP_HEADER = env.bool("FASTPATH_CSP_HEADER", default=True)
FASTPATH_API_LEAN_GET = env.bool("FASTPATH_API_LEAN_GET", default=True)
