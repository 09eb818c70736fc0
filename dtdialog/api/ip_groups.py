"""Which clients count as one: an IPv4 address on its own, an IPv6 address by its network prefix.

One IPv6 customer usually holds a whole /64 and can pick a fresh address from it for every connection, so
counting IPv6 clients per address would give one host billions of identities.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

#: The IPv6 prefix length one customer is assumed to hold (a /64 is what a home or a server is usually given).
IPV6_PREFIX = 64


@lru_cache(maxsize=65_536)  # every request asks; parsing an address is the costly part
def ip_group(host: str, ipv6_prefix: int = IPV6_PREFIX) -> str:
    """Return the name ``host`` is counted under: an IPv4 address as is, an IPv6 address as its
    ``/ipv6_prefix`` network (an IPv4-mapped one as its IPv4 address), anything else (a Unix socket path,
    a name) unchanged."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, ipv6_prefix), strict=False))
    return str(address)
