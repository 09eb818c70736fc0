"""Domain profiles: the wording of one support bot (name, domain, greeting, prompts, page title, hand-off).

A profile is a YAML file (``load_profile``); a project's ``dtdialog.yaml`` holds one under its ``profile:`` key.
``dtdialog index build --profile FILE`` stores it in the index (``PROFILE_INFO_KEY`` of the index's build
information), so ``chat``, ``serve`` and the web page speak the index's domain with no further flag. The
built-in car-repair corpus ships its own profile (``data/car_profile.yaml``); any other corpus without one gets
``generic_profile()``, which names no domain at all.

Every reply the dialogue manager says is a field of ``dtdialog.dialogue.replies.Replies``: ``greeting`` and ``handoff``
fill the fields of the same name, ``prompts`` may replace any other one (its ``str.format`` fields must be the
ones the default template uses, so a typo fails when the profile is loaded, not in a customer's chat).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dtdialog.dialogue.replies import Replies
from parsers.errors import ConfigError

#: The key of the index's build information (``SqliteIndex.info()``) holding the profile as a dict.
PROFILE_INFO_KEY = "profile"
#: The profile shipped with the built-in corpus.
BUILTIN_PROFILE_PATH = Path(__file__).resolve().parents[2] / "data" / "car_profile.yaml"
#: The keys of a project's ``dtdialog.yaml`` (``dtdialog.setup.project``), which holds a profile under ``profile``.
PROJECT_KEYS = frozenset({"data", "format", "index", "tests", "profile", "calibrator"})
#: A profile file larger than this is refused (it is a page of wording, not data).
MAX_PROFILE_BYTES = 1_000_000
#: A BCP 47 language tag, loosely: "en", "pt-BR", "zh-Hant-TW".
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")


@dataclass(frozen=True)
class Profile:
    """The wording of one support bot; invalid values raise ``ConfigError`` with a one-line message.

    name: what the bot calls itself ("the {name}"), e.g. "banking assistant".
    domain: the noun phrase of what it answers, e.g. "banking" in "I only answer banking questions".
    greeting: the first thing the bot says. page_title: the web page's title and heading.
    placeholder: the example question in the page's message box.
    handoff: the hand-off reply (``{reason}`` and ``{messages}`` fields).
    language: the customers' language (BCP 47 code; the page's ``lang``).
    prompts: ``Replies`` field -> wording, replacing the generic default of that field.
    synonyms: canonical term -> aliases for entity matching (loaded from the file the YAML names, relative to
        it); None: the engine's default list.
    glossary: short texts describing the domain beyond the stored answers, one per entry (``term: definition``,
        loaded from the text file the YAML names, relative to it): the out-of-scope gate counts their words as the
        domain's, so a question the answers do not cover is asked about, not refused as off-topic.
    """

    name: str = "support assistant"
    domain: str = "support"
    greeting: str = Replies.greeting
    page_title: str = "Support chat"
    placeholder: str = "e.g. I tried the usual fix, but it still does not work."
    handoff: str = Replies.handoff
    language: str = "en"
    prompts: Mapping[str, str] = field(default_factory=dict)
    synonyms: Mapping[str, tuple[str, ...]] | None = None
    glossary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("name", "domain", "greeting", "page_title", "placeholder", "handoff", "language"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"profile: {name} must be non-empty text, got {value!r}")
        if not _LANGUAGE.fullmatch(self.language):
            raise ConfigError(f"profile: language must be a language code such as 'en' or 'pt-BR', got {self.language!r}")
        if not isinstance(self.prompts, Mapping):
            raise ConfigError("profile: prompts must be a mapping of reply name -> text")
        known = _reply_templates()
        for key, text in self.prompts.items():
            if key not in known or key in ("greeting", "handoff"):
                hint = " (a top-level profile key)" if key in ("greeting", "handoff") else ""
                raise ConfigError(f"profile: unknown prompt {key!r}{hint}; known: {', '.join(sorted(known))}")
            _check_template(f"prompts.{key}", text, known[key])
        _check_template("handoff", self.handoff, known["handoff"])
        if self.synonyms is not None:
            object.__setattr__(self, "synonyms", _checked_synonyms(self.synonyms, "profile: synonyms"))
        object.__setattr__(self, "prompts", dict(self.prompts))
        object.__setattr__(self, "glossary", _checked_glossary(self.glossary, "profile: glossary"))

    def replies(self) -> Replies:
        """Return the ``Replies`` this profile words: the generic defaults, the domain, then ``prompts``."""
        worded = {
            "greeting": self.greeting,
            "handoff": self.handoff,
            "out_of_scope_greeting": (f"Hi! I'm the {self.name}: I answer {self.domain} questions from our support "
                                      "answers. What is your question - what happens, and what have you already tried?"),
            "out_of_scope_gibberish": (f"Sorry, I could not make sense of that. Could you rephrase it as a {self.domain} "
                                       "question - what happens, and when?"),
            "out_of_scope_domain": (f"Sorry, that seems to be outside what I can help with: I only answer {self.domain} "
                                    "questions. If it is about that, could you describe it in a few words? "
                                    "Or say 'human' to talk to a person."),
        }
        return Replies(**{**worded, **self.prompts})

    def page(self) -> dict[str, str]:
        """Return what the web page shows: title, heading, greeting, placeholder, language."""
        return {"name": self.name, "domain": self.domain, "title": self.page_title, "greeting": self.greeting,
                "placeholder": self.placeholder, "language": self.language}

    def to_dict(self) -> dict[str, Any]:
        """Return the profile as JSON-ready data (synonyms inline), what the index stores."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["prompts"] = dict(self.prompts)
        data["synonyms"] = {k: list(v) for k, v in self.synonyms.items()} if self.synonyms is not None else None
        data["glossary"] = list(self.glossary)
        return data

    @classmethod
    def from_dict(cls, data: Any, *, base: Path | None = None, where: str = "profile") -> Profile:
        """Return the profile in ``data``; ``synonyms`` may be inline or a file path (relative to ``base``)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of profile keys, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(map(str, data)) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        values = dict(data)
        if values.get("prompts") is None:
            values.pop("prompts", None)
        for key, load in (("synonyms", load_synonyms), ("glossary", load_glossary)):
            if isinstance(values.get(key), str):  # a file named in the YAML, relative to it
                path = Path(values[key]).expanduser()
                try:
                    values[key] = load(path if path.is_absolute() or base is None else base / path)
                except ConfigError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
        if values.get("glossary", ()) is None:
            values.pop("glossary")
        try:
            return cls(**values)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace("profile:", f"{where}:", 1)) from None


def _reply_templates() -> dict[str, str]:
    """Return every text field of ``Replies`` with its default wording."""
    return {f.name: f.default for f in fields(Replies) if isinstance(f.default, str)}


def _format_fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def _check_template(where: str, text: Any, default: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"profile: {where} must be non-empty text, got {text!r}")
    try:
        used = _format_fields(text)
    except ValueError as exc:
        raise ConfigError(f"profile: {where} is not a valid template ({exc}); write {{{{ and }}}} for braces") from None
    allowed = _format_fields(default)
    extra = sorted(used - allowed)
    if extra:
        shown = ", ".join("{" + a + "}" for a in sorted(allowed)) or "none"
        raise ConfigError(f"profile: {where} uses unknown field(s) {', '.join(extra)}; allowed: {shown}")


def _checked_synonyms(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping of term -> [aliases]")
    out: dict[str, tuple[str, ...]] = {}
    for term, aliases in raw.items():
        if not isinstance(term, str) or not term.strip():
            raise ConfigError(f"{where}: every term must be non-empty text, got {term!r}")
        if not isinstance(aliases, (list, tuple)) or not all(isinstance(a, str) for a in aliases):
            raise ConfigError(f"{where}: the aliases of {term!r} must be a list of text")
        out[term.strip().lower()] = tuple(a.strip().lower() for a in aliases if a.strip())
    return out


def _checked_glossary(raw: Any, where: str) -> tuple[str, ...]:
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)) or not all(isinstance(t, str) for t in raw):
        raise ConfigError(f"{where}: expected a list of text entries (or a file name in the YAML)")
    return tuple(t.strip() for t in raw if t.strip())


def read_text(path: Path, what: str) -> str:
    """Return the UTF-8 text at ``path`` (at most ``MAX_PROFILE_BYTES``); every problem is a one-line ``ConfigError``."""
    try:
        size = path.stat().st_size
        if size > MAX_PROFILE_BYTES:
            raise ConfigError(f"{what} {path} is {size} bytes; expected at most {MAX_PROFILE_BYTES}")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} {path} is a folder; give a file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def read_yaml(path: Path, what: str) -> Any:
    """Return the YAML document at ``path`` (``yaml.safe_load``); every problem is a one-line ``ConfigError``."""
    import yaml

    text = read_text(path, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line, problem = yaml_error(exc)
        at = f":{line}" if line is not None else ""
        raise ConfigError(f"{what} {path}{at}: not valid YAML ({problem})") from None


def yaml_error(exc: Exception) -> tuple[int | None, str]:
    """Return the 1-based line of a ``yaml.YAMLError`` (None when it names none) and its problem in one line."""
    mark = getattr(exc, "problem_mark", None)
    return (mark.line + 1 if mark is not None else None), getattr(exc, "problem", None) or str(exc).splitlines()[0]


def load_synonyms(path: Path) -> dict[str, tuple[str, ...]]:
    """Return the synonym file at ``path`` (JSON or YAML: term -> list of aliases)."""
    if path.suffix.lower() == ".json":
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"synonyms file {path} does not exist") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"cannot read synonyms file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    else:
        raw = read_yaml(path, "synonyms file")
    return _checked_synonyms(raw, f"synonyms file {path}")


def load_glossary(path: Path) -> tuple[str, ...]:
    """Return the entries of the glossary text file at ``path``: one per line, ``#`` lines and blank lines skipped."""
    lines = read_text(path, "glossary file").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def load_profile(path: str | Path) -> Profile:
    """Return the profile in the YAML file ``path``: a profile, or a project's ``dtdialog.yaml`` (its ``profile:``
    key; a project without one gets the generic profile)."""
    path = Path(path).expanduser()
    data = read_yaml(path, "profile")
    if isinstance(data, Mapping) and set(data) & PROJECT_KEYS:
        data = data.get("profile") or {}
    return Profile.from_dict(data, base=path.parent, where=f"profile {path}")


def builtin_profile() -> Profile:
    """Return the profile of the built-in car-repair corpus."""
    return load_profile(BUILTIN_PROFILE_PATH)


def generic_profile() -> Profile:
    """Return the profile of a corpus that brings none: no domain words at all."""
    return Profile()


def stored_profile(info: Mapping[str, Any]) -> Profile | None:
    """Return the profile stored in an index's build information, or None when it holds none."""
    data = info.get(PROFILE_INFO_KEY)
    if data is None:
        return None
    return Profile.from_dict(data, where="the index's stored profile")


def resolve_profile(*, path: str | Path | None, info: Mapping[str, Any] | None, builtin: bool) -> Profile:
    """Return the profile an engine speaks with: the file ``path`` names, else the built-in corpus's (``builtin``:
    the shipped file, not the copy an older index stored), else the one stored in the index (``info``: its build
    information), else the generic one."""
    if path is not None:
        return load_profile(path)
    if builtin:
        return builtin_profile()
    stored = stored_profile(info or {})
    return stored if stored is not None else generic_profile()
