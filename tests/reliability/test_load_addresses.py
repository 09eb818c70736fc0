"""Probe finding 4 (quotas), seen from the load test: with the default per-address quotas, honest simulated customers
that all come from 127.0.0.1 are cut off (they are one client to the server), while the same customers each from
their own loopback address (``eval.load_test --distinct-addresses``) are all served."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

import pytest
from limits import parse

from dtdialog.api.settings import ApiSettings
from eval.load_test import load_test, local_server, loopback_address


def test_every_simulated_customer_has_its_own_loopback_address():
    addresses = [loopback_address(i) for i in range(500)]  # the load test's --sessions bound
    assert len(set(addresses)) == len(addresses)
    assert all(ipaddress.ip_address(a).is_loopback and a != "127.0.0.1" for a in addresses)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_default_quotas_serve_customers_from_distinct_addresses_and_cut_one_address_off(small_index: Path,
                                                                                       tmp_path: Path):
    per_address = parse(ApiSettings().session_rate or "").amount  # new sessions one address may open per window
    customers = per_address + 2

    def run(url: str, distinct: bool) -> dict:
        return asyncio.run(load_test(url, sessions=customers, turns=1, timeout=120, request_timeout=60,
                                     distinct_addresses=distinct))

    with local_server(index=small_index, startup_timeout=120, workdir=tmp_path, default_quotas=True) as url:
        distinct = run(url, True)
        shared = run(url, False)
    assert distinct["errors"] == 0 and distinct["turns_ok"] == customers, distinct
    assert distinct["leaked_tokens"] == 0 and distinct["lost_turns"] == 0
    assert len(distinct["session_mean_turn_ms"]) == customers  # what each customer met
    assert distinct["connections_per_process"] == [customers]  # one server process held every customer's connection
    # from one address at most ``per_address`` sessions open (their turns may also meet the pending-calls cap)
    assert shared["turns_ok"] <= per_address and shared["errors"] >= customers - per_address, shared
    assert all("HTTP 429" in e for e in shared["error_samples"]), shared["error_samples"]
