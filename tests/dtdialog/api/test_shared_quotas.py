"""The quota state the workers of ``dtdialog serve --workers N`` share: rates counted in one SQLite file, a session
admitted under a lock they all take, and the settings handed to each worker as data."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from limits import parse_many

from dtdialog.api.errors import ApiError
from dtdialog.api.quotas import Quotas
from dtdialog.api.settings import ApiSettings, max_workers
from dtdialog.api.shared_quotas import SharedRates, admission_lock, longest_window
from dtdialog.dialogue.session import SessionRecord, new_session_id
from dtdialog.dialogue.session_store import SessionStore
from parsers.errors import ConfigError, StorageBusyError


def test_two_counters_over_one_file_admit_the_rate_once_not_once_each(tmp_path: Path) -> None:
    items = parse_many("3/minute")
    first, second = (SharedRates(tmp_path, longest_window=longest_window(iter(items))) for _ in range(2))
    answers = [(first if i % 2 else second).hit("turn", "addr:1", items) for i in range(5)]
    assert answers[:3] == [None, None, None]
    over, reset = answers[3]
    assert str(over) == str(items[0])
    assert time.time() < reset <= time.time() + 60  # when the oldest counted turn leaves the window
    assert first.hit("turn", "addr:2", items) is None  # another client has its own count
    assert first.hit("search", "addr:1", items) is None  # and so has another kind of request


def test_every_rate_of_a_list_is_checked(tmp_path: Path) -> None:
    items = parse_many("5/minute;2/second")
    rates = SharedRates(tmp_path, longest_window=longest_window(iter(items)))
    answers = [rates.hit("turn", "addr:1", items) for _ in range(3)]
    assert answers[:2] == [None, None]
    assert answers[2] is not None and answers[2][0].amount == 2


def test_worker_settings_round_trip_as_data(tmp_path: Path) -> None:
    settings = ApiSettings(workers=2, shared_dir=tmp_path / "shared", sessions_path=tmp_path / "s.sqlite",
                           rebuild_roots=(tmp_path,), api_key="a-key-of-length", allowed_hosts=("example.com",))
    assert ApiSettings.from_worker_data(settings.to_worker_data()) == settings


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "2"])
def test_bad_worker_counts_are_refused(value: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workers must be an integer from 1 to"):
        ApiSettings(workers=value, sessions_path=tmp_path / "s.sqlite")


def test_at_most_four_workers_per_core(tmp_path: Path) -> None:
    ApiSettings(workers=max_workers(), sessions_path=tmp_path / "s.sqlite")
    with pytest.raises(ConfigError):
        ApiSettings(workers=max_workers() + 1, sessions_path=tmp_path / "s.sqlite")


class _Manager:
    """What ``Quotas.start_session`` uses of a ``DialogueManager``: its store and a session creation."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def start_session(self, session_id: str | None = None) -> str:
        record = SessionRecord(id=session_id or new_session_id())
        self.store.save(record)
        return record.id


def test_a_session_is_admitted_under_the_lock_the_workers_share(tmp_path: Path) -> None:
    settings = ApiSettings(workers=2, shared_dir=tmp_path / "shared", sessions_path=tmp_path / "s.sqlite",
                           engine_wait=0.2, max_sessions=2)
    manager = _Manager(SessionStore(settings.sessions_path))
    quotas = Quotas(settings)
    with admission_lock(settings.shared_dir, timeout=1):  # another worker counting and creating right now
        with pytest.raises(StorageBusyError, match="session admission"):
            quotas.start_session(manager)
    assert manager.store.count() == 0
    quotas.start_session(manager)
    quotas.start_session(manager)
    with pytest.raises(ApiError, match="maximum of 2 live sessions"):
        quotas.start_session(manager)
