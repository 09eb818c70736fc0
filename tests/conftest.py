"""Shared test fixtures: paths to the shared data, skipped with a reason when absent."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Tests never use the developer's own dtdialog home: an index, vectors or sessions left there by an earlier
# run made a browser test pass on one machine and fail on every fresh clone. Each test run starts from an
# empty home (built-in index built once per run), unless DTDIALOG_TEST_HOME names one to reuse on purpose.
if os.environ.get("DTDIALOG_TEST_HOME"):
    os.environ["DTDIALOG_HOME"] = os.environ["DTDIALOG_TEST_HOME"]
else:
    _home = tempfile.mkdtemp(prefix="dtdialog-test-home-")
    os.environ["DTDIALOG_HOME"] = _home
    atexit.register(shutil.rmtree, _home, True)
SHARED_DATA = Path(os.environ.get("DTDIALOG_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Return the shared data folder, or skip the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (set DTDIALOG_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def gum_dir(shared_data: Path) -> Path:
    """Return the GUM RST folder, or skip when it is absent."""
    path = shared_data / "gum_rst"
    if not (path / "splits.tsv").is_file():
        pytest.skip(f"GUM corpus not found at {path}")
    return path


@pytest.fixture(autouse=True)
def _collector_settings_left_as_found():
    """Code under test (a chat's warm-up, the API service) installs the serving collector settings
    (``dtdialog.runtime.gc_tuning``): process-wide, so they are undone after each test rather than left to the next."""
    callbacks, threshold = list(gc.callbacks), gc.get_threshold()
    yield
    if gc.callbacks != callbacks:
        gc.callbacks[:] = callbacks
    if gc.get_threshold() != threshold:
        gc.set_threshold(*threshold)
