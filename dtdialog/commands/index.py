"""``dtdialog index build`` and ``dtdialog index search``: make and query the answer index."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from index.registry import BACKENDS, DEFAULT_INDEX_NAME, default_index_path

NAME = "index"
HELP = "build the answer index from a corpus, or search it"
CORPUS_FORMATS = ("builtin", "csv", "jsonl", "mechanics", "twitter", "irc")
SNIPPET_CHARS = 220


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="index_command", metavar="ACTION")
    sub.required = True

    build = sub.add_parser("build", help="parse every answer of a corpus and write the index",
                           description="Parse every answer of a corpus and write the index (atomically).")
    build.add_argument("--corpus", type=Path, help="corpus file (a directory of *.jsonl for --format jsonl); "
                       "not needed for --format builtin")
    build.add_argument("--format", dest="fmt", choices=CORPUS_FORMATS, default=None,
                       help="corpus format (default: the project's in a dtdialog.yaml folder, else builtin, the "
                            "shipped car-repair corpus)")
    build.add_argument("--profile", type=Path, default=None, metavar="FILE",
                       help="domain profile YAML (the bot's wording) stored with the index (default: the project's, "
                            "the built-in corpus's for --format builtin, else the generic one)")
    build.add_argument("--backend", choices=BACKENDS, default="sqlite", help="index backend (default: sqlite)")
    build.add_argument("--out", type=Path, default=None,
                       help=f"SQLite index file to write (default: the project's, else $DTDIALOG_INDEX or "
                            f"{default_index_path()})")
    build.add_argument("--es-url", default=None, help="Elasticsearch URL (default: $ELASTICSEARCH_URL)")
    build.add_argument("--index-name", default=DEFAULT_INDEX_NAME, help="Elasticsearch index/alias name")
    build.add_argument("--parser", default=None, help="RST parser name (default: $DTDIALOG_PARSER or the parser "
                       "the shipped ranker was trained with, rules)")
    build.add_argument("--n-process", type=_positive, default=1, help="parallel parsing processes (spaCy n_process)")
    build.add_argument("--batch-size", type=_positive, default=64, help="texts per parsing batch")
    build.add_argument("--limit", type=_positive, default=None, help="index only the first N dialogues")
    build.add_argument("--on-error", choices=("skip", "raise"), default="skip",
                       help="malformed corpus records: skip and report them (default) or stop at the first")
    build.add_argument("--dense", action="store_true",
                       help="also encode the answers with MiniLM for the learned ranker (needs the [dense] extra; "
                            "sqlite: vectors and SG phrases beside the file, elasticsearch: a dense_vector field)")
    build.add_argument("--force", action="store_true",
                       help="sqlite: replace --out even when it is a regular file that is not a dtdialog index "
                            "(directories, devices and links to them are always refused)")
    build.add_argument("--wait", type=_seconds, default=0.0, metavar="SECONDS",
                       help="sqlite: wait up to SECONDS for another build of the same --out to finish "
                            "(default 0: fail at once)")
    build.add_argument("--drop-api-answers", action="store_true",
                       help="sqlite: leave the answers added through the API (POST /index/documents) out of the "
                            "rebuilt --out; they stay in its answer history (default: they are kept)")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.add_argument("--json", action="store_true", help="print the build report as JSON")
    build.set_defaults(_index_run=run_build)

    search = sub.add_parser("search", help="search the index with keywords and RR terms",
                            description="Search the index. QUERY mixes keywords and RR terms such as "
                                        "'Contrast [start car]'; query-language characters are plain text.")
    search.add_argument("query", metavar="QUERY", help="e.g. \"battery Contrast [replaced battery start car]\"")
    search.add_argument("--index", type=Path, default=None,
                        help=f"SQLite index file (default: the project's in a dtdialog.yaml folder, else "
                             f"$DTDIALOG_INDEX or {default_index_path()})")
    search.add_argument("--backend", choices=BACKENDS, default="sqlite", help="index backend (default: sqlite)")
    search.add_argument("--es-url", default=None, help="Elasticsearch URL (default: $ELASTICSEARCH_URL)")
    search.add_argument("--index-name", default=DEFAULT_INDEX_NAME, help="Elasticsearch index/alias name")
    search.add_argument("--relation", action="append", default=[], metavar="RELATION",
                        help="keep only answers containing this relation (repeatable: any of them)")
    search.add_argument("--size", type=_positive, default=5, help="number of hits (default 5)")
    search.add_argument("--json", action="store_true", help="print hits as JSON lines")
    search.set_defaults(_index_run=run_search)


def run(args: argparse.Namespace) -> int:
    return int(args._index_run(args) or 0)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {number}")
    return number


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not 0 <= number <= 86_400:
        raise argparse.ArgumentTypeError(f"expected 0 to 86400 seconds, got {value}")
    return number


def load_dialogues(args: argparse.Namespace, issues: list | None = None):
    """Return the dialogues named by ``--corpus``/``--format``/``--limit``; skipped records are reported on stderr
    and appended to ``issues`` when given."""
    from parsers.errors import ConfigError

    if args.fmt == "builtin":
        if args.corpus is not None:
            raise ConfigError("--format builtin takes no --corpus; give --format too when indexing a file")
        from data.builtin import load_builtin_corpus

        dialogues = load_builtin_corpus()
        return dialogues[: args.limit] if args.limit else dialogues
    if args.corpus is None:
        raise ConfigError(f"--format {args.fmt} needs --corpus PATH")
    from data.loaders import load_corpus

    issues = [] if issues is None else issues
    dialogues = load_corpus(args.corpus, fmt=args.fmt, on_error=args.on_error, issues=issues, limit=args.limit)
    if issues:
        print(f"skipped {len(issues)} malformed record(s); first: {issues[0]} (use --on-error raise to stop at the first)",
              file=sys.stderr)
    return dialogues


def project_defaults(args: argparse.Namespace) -> None:
    """Fill ``--corpus``/``--format``/``--out``/``--profile`` from the project in the working folder (``dtdialog.yaml``)
    when none of the corpus options is given."""
    if args.fmt is not None or args.corpus is not None:
        args.fmt = args.fmt or "builtin"
        return
    from dtdialog.setup.project import find_project

    project = find_project()
    if project is None:
        args.fmt = "builtin"
        return
    args.corpus, args.fmt = project.data, project.format
    if args.out is None and args.backend == "sqlite":
        args.out = project.index
    if args.profile is None:
        args.profile = project.config


def build_profile(args: argparse.Namespace):
    """Return the profile the build stores: ``--profile``, else the built-in corpus's, else the generic one."""
    from dtdialog.setup.profile import builtin_profile, generic_profile, load_profile

    if args.profile is not None:
        return load_profile(args.profile)
    return builtin_profile() if args.fmt == "builtin" else generic_profile()


def run_build(args: argparse.Namespace) -> int:
    import logging

    from dtdialog.setup.assembly import engine_parser_name
    from dtdialog.setup.profile import PROFILE_INFO_KEY
    from index.builder import build_index
    from parsers.base import get_parser

    logging.getLogger("dtdialog.data").setLevel(logging.ERROR)  # the summary line below reports skipped records
    if args.backend != "sqlite" and (args.force or args.wait or args.drop_api_answers):
        from parsers.errors import ConfigError

        raise ConfigError("--force, --wait and --drop-api-answers apply to the sqlite backend only")
    if args.dense:
        from index.dense import INSTALL_HINT, dense_available
        from parsers.errors import ConfigError

        if not dense_available():  # refuse before parsing anything, not after minutes of work
            raise ConfigError(f"--dense needs the [dense] extra ({INSTALL_HINT})")
    project_defaults(args)
    profile = build_profile(args)  # before parsing: a bad profile fails at once, not after minutes of work
    issues: list = []
    dialogues = load_dialogues(args, issues)
    parser = get_parser(engine_parser_name(args.parser))
    out = args.out or (default_index_path() if args.backend == "sqlite" else None)
    report = build_index(dialogues=dialogues, parser=parser, backend=args.backend, out=out, url=args.es_url,
                         batch_size=args.batch_size, n_process=args.n_process, progress=not args.quiet,
                         index_name=args.index_name, dense=args.dense, force=args.force, lock_timeout=args.wait,
                         api_answers="drop" if args.drop_api_answers else "keep",
                         info={PROFILE_INFO_KEY: profile.to_dict()})
    report.malformed = len(issues)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(report.summary())
        for doc_id, reason in report.skipped[:5]:
            print(f"  skipped {doc_id}: {reason}")
    return 0


def run_search(args: argparse.Namespace) -> int:
    from index.query_parser import parse_query_string
    from index.registry import open_index

    query = parse_query_string(args.query, size=args.size, relations=tuple(args.relation))
    if args.index is None and args.backend == "sqlite":
        from dtdialog.setup.project import find_project

        project = find_project()
        args.index = project.index if project is not None else None
    with open_index(backend=args.backend, path=args.index, url=args.es_url, index_name=args.index_name) as index:
        hits = index.search(query)
    if args.json:
        for hit in hits:
            print(json.dumps({"id": hit.document.id, "score": round(hit.score, 4), "matched": hit.matched,
                              "relations": list(hit.document.relations), "text": hit.document.text},
                             ensure_ascii=False))
        return 0 if hits else 1
    print(f"query: {_describe(query)}")
    if not hits:
        print("no answers matched")
        return 1
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank:>2}. {hit.score:7.3f}  {hit.document.id}")
        for field, values in hit.matched.items():
            if field != "text":
                print(f"      {field}: {'; '.join(values)}")
        print(f"      {snippet(hit.document.text, hit.matched)}")
    return 0


def _describe(query) -> str:
    parts = []
    if query.keywords:
        parts.append("keywords " + " ".join(query.keywords))
    parts.extend(f"RR {t}" for t in query.rr_terms)
    if query.relations:
        parts.append("filter " + "|".join(query.relations))
    return "; ".join(parts)


def snippet(text: str, matched: dict[str, list[str]], limit: int = SNIPPET_CHARS) -> str:
    """Return a one-line excerpt of ``text``: the first sentence holding a matched keyword, else its start."""
    if matched.get("text"):
        return " ".join(matched["text"][0].split())[:limit]
    words = [w.lower() for w in matched.get("keywords", [])]
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    chosen = next((s for s in sentences if any(w in s.lower() for w in words)), sentences[0] if sentences else "")
    return chosen if len(chosen) <= limit else chosen[: limit - 3].rstrip() + "..."
