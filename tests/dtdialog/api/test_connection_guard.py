"""The parts of the slow-connection guard that need no server: client groups, the per-client and total caps,
the descriptor budget and the settings' one-line errors (``tests/reliability/test_slowloris.py`` runs a server)."""

from __future__ import annotations

import pytest

from dtdialog.api.connection_guard import ConnectionGuard, ConnectionLimits
from dtdialog.api.ip_groups import ip_group
from dtdialog.api.open_files import ENGINE_FILES, MAX_BACKLOG, connection_budget
from dtdialog.api.settings import ApiSettings
from parsers.errors import ConfigError


@pytest.mark.parametrize(("host", "group"), [
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("[2001:db8:1:3::1]", "2001:db8:1:3::/64"),
    ("::ffff:192.0.2.1", "192.0.2.1"),
    ("fe80::1%eth0", "fe80::/64"),
    ("/run/dtdialog.sock", "/run/dtdialog.sock"),
])
def test_ip_group_counts_an_ipv6_client_by_its_64(host, group):
    assert ip_group(host) == group


def test_ip_group_prefix_is_configurable():
    assert ip_group("2001:db8:1:2::1", ipv6_prefix=48) == "2001:db8:1::/48"


def test_the_guard_refuses_past_each_cap_and_counts_nothing_for_a_refusal():
    guard = ConnectionGuard(ConnectionLimits(max_connections_per_client=2, max_connections=3))
    assert guard.admit("a") is None and guard.admit("a") is None
    assert guard.admit("a")[:2] == (429, "too_many_connections")
    assert guard.admit(None) is None  # a trusted proxy: only the total counts
    assert guard.admit("b")[:2] == (503, "server_busy")
    guard.release("a")
    assert guard.admit("b") is None
    assert (guard.open, dict(guard.per_client)) == (3, {"a": 1, "b": 1})


def test_the_budget_keeps_descriptors_for_the_engine_and_the_accept_batches():
    assert connection_budget(2048, limit=1_048_576).backlog == MAX_BACKLOG
    small = connection_budget(2048, limit=512)
    assert small.max_connections + 4 * small.backlog + ENGINE_FILES <= 512
    assert connection_budget(50, limit=512).max_connections == 50


@pytest.mark.parametrize(("field", "value", "message"), [
    ("header_timeout", 0, "header_timeout must be a number of seconds of at least 0.001, got 0"),
    ("body_timeout", float("inf"), "body_timeout must be a number of seconds"),
    ("max_connections_per_client", 0, "max_connections_per_client must be a positive integer, got 0"),
    ("max_connections", True, "max_connections must be a positive integer, got True"),
])
def test_bad_connection_settings_are_one_line_errors(tmp_path, field, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as caught:
        ApiSettings(sessions_path=tmp_path / "s.sqlite", **{field: value})
    assert "\n" not in str(caught.value)
