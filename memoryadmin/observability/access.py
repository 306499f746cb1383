"""Who may read the metrics: an address in METRICS_ALLOWED_NETWORKS, or a request carrying
`Authorization: Bearer <METRICS_TOKEN>`. Both empty (the default): nobody. The same rule guards
the web's /metrics and the Celery worker's metrics port.

Only the connecting address counts (REMOTE_ADDR), never X-Forwarded-For, which anyone can
write: a scrape through the airline's proxy uses the token."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from functools import lru_cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def parse_networks(spec: tuple[str, ...]) -> tuple[Network, ...]:
    """`10.0.0.0/8`, `127.0.0.1` (one address), `::1`; a bad entry is a configuration error."""
    return tuple(ipaddress.ip_network(item, strict=False) for item in spec)


def metrics_allowed(
    *, remote_addr: str, authorization: str, networks: Iterable[str], token: str
) -> bool:
    if token:
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return True
    spec = tuple(networks)
    if not spec or not remote_addr:
        return False
    try:
        address = ipaddress.ip_address(remote_addr.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return any(address in network for network in parse_networks(spec))
