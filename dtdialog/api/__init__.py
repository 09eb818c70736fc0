"""The HTTP service: ``create_app(ApiSettings(...))`` returns the FastAPI app that ``dtdialog serve`` runs."""

from dtdialog.api.app import create_app
from dtdialog.api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
