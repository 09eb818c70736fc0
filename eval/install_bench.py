"""Install size and time: the wheel a user downloads, and how long ``pip install`` takes into a fresh venv.

``python -m eval.install_bench [--extras all] [--runs 3] [--no-cache] [--out FILE.json]``

It builds the project's wheel (``pip wheel . --no-deps``) and reports its size and what is largest inside it (the
prebuilt index, the models). Then, ``--runs`` times, it makes a fresh venv and times ``pip install <wheel>[extras]``
in it, and reports the venv's size on disk afterwards. By default pip's cache is used, as on a machine that installed
once before (the figure a developer sees again and again); ``--no-cache`` downloads every dependency, so the time
depends on the network. The load average before and after is recorded: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from eval.entry import one_line_errors
from eval.latency import percentile
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

REPO = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


def build_wheel(out_dir: Path) -> Path:
    """Return the project's wheel, built into ``out_dir`` without its dependencies."""
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out_dir), str(REPO)],
         what="building the wheel")
    wheels = sorted(out_dir.glob("dtdialog-*.whl"))
    if not wheels:
        raise InputError(f"pip wheel wrote no dtdialog wheel into {out_dir}")
    return wheels[-1]


def wheel_contents(wheel: Path, *, top: int = 8) -> dict:
    """Return the wheel's size, its files' uncompressed total and its ``top`` largest members (MB, compressed)."""
    with zipfile.ZipFile(wheel) as zf:
        members = zf.infolist()
    largest = sorted(members, key=lambda m: m.compress_size, reverse=True)[:top]
    return {"file": wheel.name, "mb": round(wheel.stat().st_size / MB, 2),
            "unpacked_mb": round(sum(m.file_size for m in members) / MB, 2), "files": len(members),
            "largest": [{"path": m.filename, "mb": round(m.compress_size / MB, 2)} for m in largest]}


def timed_install(wheel: Path, extras: str, *, cache: bool) -> dict:
    """Return the seconds ``pip install`` of ``wheel[extras]`` takes into a fresh venv, and the venv's size."""
    with tempfile.TemporaryDirectory(prefix="dtdialog-install-") as tmp:
        venv = Path(tmp) / "venv"
        _run([sys.executable, "-m", "venv", str(venv)], what="making a venv")
        python = venv / "bin" / "python"
        target = f"{wheel}[{extras}]" if extras else str(wheel)
        command = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", target]
        if not cache:
            command.insert(4, "--no-cache-dir")
        start = time.perf_counter()
        _run(command, what="pip install")
        seconds = time.perf_counter() - start
        size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    return {"seconds": round(seconds, 1), "venv_mb": round(size / MB, 1)}


def _run(command: list[str], *, what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip()).splitlines() or ["no output"]
        # pip ends with hints; the line that says what went wrong is the last one naming an error
        cause = next((line.strip() for line in reversed(lines) if "error" in line.lower() and "hint" not in line),
                     lines[-1].strip())
        raise InputError(f"{what} failed (exit {done.returncode}): {cause}")


def markdown(report: dict) -> str:
    wheel, runs = report["wheel"], report["installs"]
    seconds = [r["seconds"] for r in runs]
    lines = [f"wheel {wheel['file']}: {wheel['mb']} MB ({wheel['unpacked_mb']} MB unpacked, {wheel['files']} files)",
             "largest members: " + ", ".join(f"{m['path']} {m['mb']} MB" for m in wheel["largest"][:4]),
             f"pip install [{report['extras']}] into a fresh venv, {'warm' if report['cache'] else 'no'} pip cache, "
             f"{len(runs)} runs: p50 {percentile(seconds, 50):.1f} s, max {max(seconds):.1f} s; "
             f"venv {runs[-1]['venv_mb']} MB on disk",
             f"load average before / after: {report['load_before']} / {report['load_after']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.install_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="all", help="the extras installed with the wheel ('' for none)")
    parser.add_argument("--runs", type=int, default=3, help="fresh venvs to time (default 3)")
    parser.add_argument("--no-cache", action="store_true", help="download every dependency (network-bound)")
    parser.add_argument("--out", help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    command = "python -m eval.install_bench " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                                else sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


def run(args: argparse.Namespace, *, command: str) -> int:
    """Build the wheel, time the installs and print (and with ``--out`` write) the figures."""
    if args.out:
        check_out_dir(Path(args.out).parent)  # before the slow part
    if args.runs < 1:
        raise InputError(f"--runs must be at least 1, got {args.runs}")
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="dtdialog-wheel-") as tmp:
        wheel = build_wheel(Path(tmp))
        contents = wheel_contents(wheel)
        installs = [timed_install(wheel, args.extras, cache=not args.no_cache) for _ in range(args.runs)]
    report = {"command": command,
              "wheel": contents, "extras": args.extras, "cache": not args.no_cache, "installs": installs,
              "load_before": load_before, "load_after": round(os.getloadavg()[0], 2)}
    print(markdown(report))
    if args.out:
        atomic_write_text(Path(args.out), json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
