"""Prebuilt index files of the built-in corpus, shipped in the package so the first ``dtdialog chat`` opens them.

Building the built-in index on a fresh machine parses every answer, encodes it with the MiniLM and
extracts its SG phrases: 30 s or more before the first prompt. ``python -m dtdialog.setup.make_prebuilt`` runs that
same start-up path once (``build_engine`` over a temporary index file) and packs what it wrote - the SQLite
index and its dense and SG side files - into ``dtdialog/resources/prebuilt/builtin-<parser>/``, gzipped, with
a ``manifest.json`` that records a **stamp**:

* ``corpus``: sha256 of every built-in dialogue;
* ``parser``: the parser's configuration with its files (cue lexicon, model manifest) replaced by their
  digests, and the spaCy pipeline package it tokenises with;
* ``encoder``: the dense encoder's model file (``MODEL_ID``); the runtime that made the vectors is checked by the
  dense store itself (a bundle of another runtime's vectors gets them re-encoded, ``index.dense_store``);
* ``formats``: the document, SQLite schema, SG phrase file and bundle versions.

On a first start ``install_builtin`` compares the shipped stamp with the one computed for this corpus,
parser and encoder. Equal: the files are unpacked (each checked against its sha256) into ``data_home()``,
side files first and the SQLite file last, under the index's build lock, so a reader never sees an index
without its side files. Different, missing or damaged: nothing is installed and the caller builds the index
as before - a stale bundle costs time, never a wrong index.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from parsers.errors import DTDialogError

PREBUILT_DIR = Path(__file__).resolve().parent.parent / "resources" / "prebuilt"
MANIFEST = "manifest.json"
#: Bumped when the bundle layout changes; a bundle of another format is never installed.
BUNDLE_FORMAT = 1
#: (role, side-file kind, extension): what a bundle holds besides the SQLite file.
SIDE_ROLES = (("dense.npy", "dense", ".npy"), ("dense.ids.json", "dense", ".ids.json"), ("sg.json", "sg", ".json"))
_CHUNK = 1 << 20


def bundle_dir(parser_name: str, root: Path | None = None) -> Path:
    """Return the folder of the shipped bundle for ``parser_name``."""
    return (root or PREBUILT_DIR) / f"builtin-{parser_name}"


def file_digest(path: Path) -> str:
    """Return the sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


# --- the stamp ---------------------------------------------------------------------------------------------
def corpus_digest(dialogues) -> str:
    """Return the sha256 of the dialogues' content (order included)."""
    digest = hashlib.sha256()
    for d in dialogues:
        digest.update(json.dumps(d.to_dict(), sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()


def parser_identity(parser) -> dict[str, Any]:
    """Return what decides the trees ``parser`` makes: its configuration, its files' digests, its spaCy package.

    A configured file path is replaced by the digest of the file (an absolute path differs between installs,
    the content is what matters); a loaded model contributes the digest of its manifest, which records when and
    how its weights were trained.
    """
    config = dict(parser.to_dict()) if hasattr(parser, "to_dict") else {"name": getattr(parser, "name", "parser")}
    for key, value in config.items():
        if isinstance(value, str) and value.endswith(".json") and Path(value).is_file():
            config[key] = "sha256:" + file_digest(Path(value))
    manifest = getattr(getattr(parser, "model", None), "manifest", None)
    if isinstance(manifest, dict):
        config["model_manifest"] = hashlib.sha256(json.dumps(manifest, sort_keys=True, default=str).encode()).hexdigest()
    config["spacy"] = spacy_package()
    return config


def spacy_package() -> str:
    """Return ``name==version`` of the spaCy pipeline ``parsers.nlp_spacy.load_spacy`` loads ("" when none)."""
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    from parsers.nlp_spacy import MODEL_PACKAGES

    for name in MODEL_PACKAGES:
        if importlib.util.find_spec(name) is not None:
            try:
                return f"{name}=={version(name)}|spacy=={version('spacy')}"
            except PackageNotFoundError:
                return name
    return ""


def builtin_stamp(parser, dialogues) -> dict[str, Any]:
    """Return the stamp a bundle for ``parser`` over ``dialogues`` must carry to be installed."""
    from index.documents import DOCUMENT_VERSION
    from index.sg_store import VERSION as SG_VERSION
    from index.sqlite_index import SCHEMA_VERSION
    from parsers.encoder import MODEL_ID

    return {"corpus": corpus_digest(dialogues), "parser": parser_identity(parser), "encoder": MODEL_ID,
            "formats": {"bundle": BUNDLE_FORMAT, "documents": DOCUMENT_VERSION, "schema": SCHEMA_VERSION,
                        "sg": SG_VERSION}}


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """Return the bundle manifest in ``folder``, or None when there is none or it cannot be read."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def stale_fields(manifest: dict[str, Any], stamp: dict[str, Any]) -> list[str]:
    """Return the stamp fields in which ``manifest`` differs from ``stamp`` (``[]``: the bundle is current)."""
    shipped = manifest.get("stamp") if isinstance(manifest.get("stamp"), dict) else {}
    return [key for key in stamp if shipped.get(key) != stamp[key]]


# --- installing a bundle (the first start) -------------------------------------------------------------------
#: Seconds an install waits for another process that builds or installs the same index file.
LOCK_WAIT = 300.0


def install_builtin(target: Path, *, parser, dialogues, progress: bool = True, root: Path | None = None) -> bool:
    """Unpack the shipped bundle for ``parser`` as the index file ``target``; return True when ``target`` is there.

    False (the caller builds the index) when there is no bundle for this parser, its stamp differs from the
    current one, or a file of it is damaged; with ``progress`` the reason is one line on stderr.
    """
    from index.index_files import build_lock, clean_leftovers

    folder = bundle_dir(getattr(parser, "name", "parser"), root)
    manifest = read_manifest(folder)
    if manifest is None:
        return False
    stale = stale_fields(manifest, builtin_stamp(parser, dialogues))
    if stale:
        _note(progress, f"the shipped index of the built-in corpus is out of date ({', '.join(stale)} changed); "
                        "building it instead")
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # a fresh machine has no dtdialog home yet
        with build_lock(target, timeout=LOCK_WAIT):
            if not target.exists():  # another process may have built or installed it while this one waited
                clean_leftovers(target)  # what a killed install or build left beside it
                _unpack(folder, manifest, target)
    except (DTDialogError, OSError, EOFError, ValueError, KeyError, TypeError) as exc:
        _note(progress, f"could not install the shipped index ({exc}); building it instead")
        return False
    return True


def _note(progress: bool, message: str) -> None:
    if progress:
        print(message, file=sys.stderr)


def _unpack(folder: Path, manifest: dict[str, Any], target: Path) -> None:
    """Write the bundle's side files, then its SQLite file (the one atomic pointer to them), beside ``target``."""
    from index.index_files import side_path

    files, generation = manifest["files"], str(manifest["generation"])
    written: list[Path] = []
    try:
        for role, kind, ext in SIDE_ROLES:
            dest = side_path(target, kind, ext, generation)
            _unpack_one(folder, files[role], dest)
            written.append(dest)
        _unpack_one(folder, files["index"], target)
    except BaseException:
        for path in written:  # side files of an index that never went live are no use to anyone
            path.unlink(missing_ok=True)
        raise


def _unpack_one(folder: Path, entry: dict[str, Any], dest: Path) -> None:
    """Decompress one bundle file to ``dest`` atomically; a content that does not match its sha256 is refused."""
    from parsers.errors import InputError
    from parsers.files import atomic_write

    name = str(entry["file"])
    if Path(name).name != name:
        raise InputError(f"bundle file name {name!r} is not a plain file name")
    digest = hashlib.sha256()

    def write(out) -> None:
        with gzip.open(folder / name, "rb") as src:
            for block in iter(lambda: src.read(_CHUNK), b""):
                digest.update(block)
                out.write(block)
        if digest.hexdigest() != entry["sha256"]:
            raise InputError(f"{folder / name} does not match its sha256 (damaged bundle)")

    atomic_write(dest, write)


# --- packing a bundle (python -m dtdialog.setup.make_prebuilt) ------------------------------------------------------
def write_bundle(index_path: Path, folder: Path, stamp: dict[str, Any]) -> dict[str, Any]:
    """Pack the index at ``index_path`` and its dense and SG side files into ``folder``; return the manifest."""
    from index.index_files import index_generation, side_path
    from parsers.errors import InputError
    from parsers.files import atomic_write_text, check_out_dir

    generation = index_generation(index_path)
    check_out_dir(folder).mkdir(parents=True, exist_ok=True)
    files = {"index": _pack(index_path, folder / "index.sqlite.gz")}
    for role, kind, ext in SIDE_ROLES:
        source = side_path(index_path, kind, ext, generation)
        if not source.is_file():
            raise InputError(f"{source} is missing: a bundle needs the dense vectors and SG phrases ([dense] extra)")
        files[role] = _pack(source, folder / f"{role}.gz")
    manifest = {"stamp": stamp, "generation": generation, "files": files}
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _pack(source: Path, dest: Path) -> dict[str, Any]:
    from parsers.files import atomic_write

    def write(raw) -> None:
        # mtime=0 and no file name in the header: the same content gives the same bytes
        with open(source, "rb") as src, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                      compresslevel=9) as out:
            shutil.copyfileobj(src, out, _CHUNK)

    atomic_write(dest, write)
    return {"file": dest.name, "sha256": file_digest(source), "bytes": source.stat().st_size,
            "packed_bytes": dest.stat().st_size}
