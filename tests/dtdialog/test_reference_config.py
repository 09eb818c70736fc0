"""docs/reference-config.md lists every ``EngineSpec`` field and every option of each ``EngineConfig`` group, with
its default: a field added, renamed or re-defaulted in the code fails here until the page says so."""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from dtdialog.setup.assembly import EngineSpec
from dtdialog.setup.engine_config import GROUPS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference-config.md"
ROW = re.compile(r"^\| `(\w+)` \| (.+?) \| .+\|$", re.M)


def sections(text: str) -> dict[str, str]:
    """Return each heading's name in backticks (``## `EngineSpec` ``, ``### `clarify` ``) -> the text under it."""
    parts = re.split(r"^#{2,3} `(\w+)`\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def rows(section: str) -> dict[str, str]:
    """Return the table rows of ``section``: name -> its default cell."""
    return {name: default.strip() for name, default in ROW.findall(section)}


def default_of(field) -> object:
    return field.default if field.default is not MISSING else field.default_factory()


def check(listed: dict[str, str], kind) -> None:
    names = [f.name for f in fields(kind)]
    assert list(listed) == names, f"{kind.__name__}: the page lists {list(listed)}, the code has {names}"
    for f in fields(kind):
        cell = listed[f.name]
        value = default_of(f)
        if not isinstance(value, (str, int, float, bool, type(None))):
            continue  # a nested object (the spec's config): its own section lists it
        assert cell.startswith("`") and cell.endswith("`"), f"{f.name}: default {cell!r} is not `json`"
        shown = json.loads(cell.strip("`"))
        assert shown == value and isinstance(shown, bool) == isinstance(value, bool), \
            f"{kind.__name__}.{f.name}: the page says {cell}, the code {value!r}"


TEXT = PAGE.read_text(encoding="utf-8")
SECTIONS = sections(TEXT)


def test_every_spec_field_is_listed_with_its_default():
    check(rows(SECTIONS["EngineSpec"]), EngineSpec)


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_option_of_each_config_group_is_listed_with_its_default(group):
    assert group in SECTIONS, f"no section for the config group {group!r}"
    check(rows(SECTIONS[group]), GROUPS[group])


def test_no_section_names_a_group_the_config_lacks():
    assert set(SECTIONS) - {"EngineSpec", "EngineConfig"} == set(GROUPS)


def test_a_wrong_default_or_a_missing_option_is_caught():
    good = rows(SECTIONS["clarify"])
    with pytest.raises(AssertionError):
        check({**good, "max_options": "`4`"}, GROUPS["clarify"])
    with pytest.raises(AssertionError):
        check({k: v for k, v in good.items() if k != "max_options"}, GROUPS["clarify"])
