"""dtdialog: a discourse-tree dialogue manager for customer support."""

#: The version when the package's metadata is not installed (a source tree on PYTHONPATH); keep it equal to
#: pyproject.toml's ``version`` (tests/dtdialog/test_cli_conventions.py checks it).
__version__ = "0.1.0"
