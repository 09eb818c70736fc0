"""Domain profiles (dtdialog.setup.profile): loading and validation, the replies they word, no car wording outside the
built-in corpus's profile."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from dtdialog.dialogue.replies import DEFAULT_REPLIES, Replies
from dtdialog.setup.profile import (
    BUILTIN_PROFILE_PATH,
    Profile,
    builtin_profile,
    generic_profile,
    load_profile,
    resolve_profile,
)
from parsers.errors import ConfigError

CAR_WORDS = re.compile(r"\b(car|cars|vehicle|engine|mechanic)\b", re.IGNORECASE)


def _texts(replies: Replies) -> dict[str, str]:
    return {f.name: getattr(replies, f.name) for f in fields(Replies) if isinstance(getattr(replies, f.name), str)}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_generic_wording_names_no_domain():
    for replies in (DEFAULT_REPLIES, generic_profile().replies()):
        car = {name: text for name, text in _texts(replies).items() if CAR_WORDS.search(text)}
        assert not car, car
    page = generic_profile().page()
    assert not any(CAR_WORDS.search(v) for v in page.values()), page


def test_builtin_profile_keeps_the_car_wording_and_synonyms():
    car = builtin_profile()
    assert CAR_WORDS.search(car.greeting) and CAR_WORDS.search(car.page_title + " " + car.placeholder)
    replies = car.replies()
    assert replies.greeting == car.greeting
    assert CAR_WORDS.search(replies.out_of_scope_domain) and CAR_WORDS.search(replies.abstain_part)
    # the synonym file it names is read relative to the profile: the car list the engine used before profiles
    from data.builtin import load_car_synonyms

    assert {k: list(v) for k, v in car.synonyms.items()} == load_car_synonyms()
    assert BUILTIN_PROFILE_PATH.is_file()


def test_a_profile_file_words_the_replies(tmp_path):
    _write(tmp_path / "syn.yaml", "login: [log in, sign in, sign-in]\n")
    path = _write(tmp_path / "bank.yaml", """
name: banking assistant
domain: banking
greeting: "Hello! What can I do for your bank account?"
page_title: Bank help
placeholder: "e.g. my card was declined"
language: en
synonyms: syn.yaml
prompts:
  abstain_part: "Is it about your card, a transfer or online banking?"
  fallback_not_found: "Nothing found about {missing}; add a detail?"
""")
    profile = load_profile(path)
    assert profile.synonyms == {"login": ("log in", "sign in", "sign-in")}
    replies = profile.replies()
    assert replies.greeting == "Hello! What can I do for your bank account?"
    assert replies.abstain_text("part").startswith("I'm not sure") and "online banking" in replies.abstain_text("part")
    assert replies.fallback_text("x", found_on_topic=False) == "Nothing found about x; add a detail?"
    assert "banking questions" in replies.out_of_scope_text("domain")
    assert "banking assistant" in replies.out_of_scope_text("greeting")
    # what the index stores reads back as the same profile, synonyms inline
    assert Profile.from_dict(profile.to_dict()) == profile
    assert profile.page()["title"] == "Bank help"


@pytest.mark.parametrize("text, message", [
    ("greting: hi\n", "unknown key(s) greting"),
    ("greeting: 3\n", "greeting must be non-empty text"),
    ("greeting: ''\n", "greeting must be non-empty text"),
    ("- a\n- b\n", "expected a mapping"),
    ("prompts: {choose_agian: x}\n", "unknown prompt 'choose_agian'"),
    ("prompts: {greeting: x}\n", "a top-level profile key"),
    ("prompts: {fallback_off_part: 'nothing on {mising}'}\n", "unknown field(s) mising; allowed: {missing}"),
    ("handoff: 'passing you on ({why})'\n", "unknown field(s) why"),
    ("prompts: {choose: 'a { b'}\n", "not a valid template"),
    ("prompts: [choose]\n", "prompts must be a mapping"),
    ("synonyms: {login: sign in}\n", "aliases of 'login' must be a list"),
    ("synonyms: missing.json\n", "does not exist"),
    ("greeting: [unclosed\n", "not valid YAML"),
    ("language: English please\n", "language must be a language code"),
])
def test_a_bad_profile_is_one_line_config_error(tmp_path, text, message):
    path = _write(tmp_path / "p.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_profile(path)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_missing_or_folder_profile(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_profile(tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="is a folder"):
        load_profile(tmp_path)


def test_a_project_file_holds_the_profile_under_its_key(tmp_path):
    path = _write(tmp_path / "dtdialog.yaml", "data: d.csv\nformat: csv\nprofile:\n  domain: gardening\n")
    assert load_profile(path).domain == "gardening"
    bare = _write(tmp_path / "other.yaml", "data: d.csv\nformat: csv\n")
    assert load_profile(bare) == generic_profile()


def test_resolution_order(tmp_path):
    path = _write(tmp_path / "p.yaml", "domain: gardening\n")
    stored = {"profile": Profile(domain="plumbing").to_dict()}
    assert resolve_profile(path=path, info=stored, builtin=True).domain == "gardening"
    # the built-in corpus speaks the shipped profile, not the copy its index stored when it was built
    assert resolve_profile(path=None, info=stored, builtin=True) == builtin_profile()
    assert resolve_profile(path=None, info=stored, builtin=False).domain == "plumbing"
    assert resolve_profile(path=None, info={}, builtin=True) == builtin_profile()
    assert resolve_profile(path=None, info={"parser": "rules"}, builtin=False) == generic_profile()
