"""Which group of addresses a client's requests are counted against: IPv4 by address, IPv6 by network.

One IPv6 customer commonly holds a whole /64 and can send from any of its 2^64 addresses, so counting by address
would give them unlimited quotas; an IPv4-mapped IPv6 address is its IPv4 address.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache


@lru_cache(maxsize=65_536)
def client_group(host: str, ipv6_prefix: int = 64) -> str:
    """Return the address (IPv4) or the ``net/prefix`` (IPv6) that ``host`` is counted as; a host that is not an
    address (a test client's name) is itself."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, ipv6_prefix), strict=False))
    return str(address)
