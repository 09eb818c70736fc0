"""The OpenAPI schema checked into docs/ is the one the app serves."""

from __future__ import annotations

import json
from pathlib import Path

from dtdialog.api.export_openapi import schema_text

DOC = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"


def _contract(schema: dict) -> dict:
    """Return what clients rely on: operations, their parameters, and each model's fields.

    Byte equality would tie the test to one FastAPI/pydantic release's rendering details.
    """
    ops = {
        (path, method): sorted(p["name"] for p in op.get("parameters", []))
        for path, item in schema["paths"].items() for method, op in item.items()
    }
    models = {name: sorted(s.get("properties", {})) for name, s in schema.get("components", {}).get("schemas", {}).items()}
    return {"operations": ops, "models": models}


def test_checked_in_openapi_matches_the_app():
    assert DOC.is_file(), "run: python -m dtdialog.api.export_openapi docs/openapi.json"
    assert _contract(json.loads(DOC.read_text(encoding="utf-8"))) == _contract(json.loads(schema_text())), \
        "docs/openapi.json is stale; run: python -m dtdialog.api.export_openapi docs/openapi.json"


def test_schema_lists_every_endpoint_and_is_served(client):
    paths = json.loads(schema_text())["paths"]
    for path in ("/parse", "/search", "/sessions", "/sessions/{session_id}/messages", "/sessions/{session_id}",
                 "/healthz", "/index", "/index/documents", "/index/rebuild", "/index/documents/{doc_id}/history",
                 "/index/documents/{doc_id}/restore"):
        assert path in paths
    assert set(paths["/search"]) == {"get", "post"}
    assert client.get("/openapi.json").json()["paths"].keys() == paths.keys()


def test_the_session_token_is_in_the_schema():
    schema = json.loads(schema_text())
    created = schema["components"]["schemas"]["SessionCreated"]
    assert {"session_id", "token"} <= set(created["required"])
    for path, method in (("/sessions/{session_id}", "get"), ("/sessions/{session_id}/messages", "post")):
        operation = schema["paths"][path][method]
        headers = [p for p in operation["parameters"] if p["in"] == "header"]
        assert [h["name"] for h in headers] == ["X-Session-Token"], path
        assert "X-API-Key" in operation["description"] and "session_not_found" in headers[0]["description"]
