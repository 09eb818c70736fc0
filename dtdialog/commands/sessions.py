"""``dtdialog sessions purge --older-than 7d``: delete the dialogue sessions idle for longer than a duration.

The server expires idle sessions by itself (``serve --session-ttl``); this command does it for a
store no server is running on, or by a cron job with its own policy.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from parsers.errors import InputError

NAME = "sessions"
HELP = "Manage the stored dialogue sessions (purge the idle ones)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    purge = sub.add_parser("purge", help="delete the sessions idle for longer than --older-than",
                           description="Delete the sessions (and their traces) last updated longer ago than --older-than.")
    purge.add_argument("--older-than", required=True, metavar="DURATION",
                       help="idle time, e.g. 7d, 12h, 30m, 90s (plain numbers are seconds)")
    purge.add_argument("--sessions", type=Path, default=None,
                       help="SQLite session store (default: $DTDIALOG_HOME/sessions.sqlite, shared with chat and serve)")
    purge.add_argument("--dry-run", action="store_true", help="only count the sessions that would go")


def run(args: argparse.Namespace) -> int:
    """Purge (or count) the idle sessions and print one line; return 0."""
    from dtdialog.dialogue.session_store import SessionStore
    from dtdialog.runtime.durations import parse_duration
    from dtdialog.runtime.paths import sessions_path

    idle = parse_duration(args.older_than, what="--older-than")
    path = args.sessions if args.sessions is not None else sessions_path()
    if not path.is_file():
        raise InputError(f"no session store at {path}")
    cutoff = time.time() - idle
    with SessionStore(path) as store:
        total = store.count()
        if args.dry_run:
            gone = total - store.count(updated_since=cutoff)
            print(f"would purge {gone} of {total} sessions idle for more than {args.older_than} from {path}")
        else:
            gone = store.purge(updated_before=cutoff)
            print(f"purged {gone} of {total} sessions idle for more than {args.older_than} from {path}; "
                  f"{total - gone} left")
    return 0
