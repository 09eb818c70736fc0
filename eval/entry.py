"""What every evaluation entry point does with a failure: one line and an exit code, never a traceback.

The handler is ``parsers.errors.one_line_errors``, shared with ``dtdialog``'s own entry point.
"""

from __future__ import annotations

from parsers.errors import one_line_errors

__all__ = ["one_line_errors"]
