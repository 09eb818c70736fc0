"""``/docs`` and ``/redoc`` load Swagger UI and ReDoc from this server, never from a CDN (they work offline)."""

from __future__ import annotations

import re

import pytest

ASSET = re.compile(r'(?:src|href)="([^"]+)"')


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_reference_only_local_assets_that_are_served(client, page):
    response = client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "http://" not in html and "https://" not in html and "//cdn" not in html, html
    assets = ASSET.findall(html)
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts, html  # the page is drawn by a script: it must be one of ours
    for asset in assets:
        assert asset.startswith("/"), asset
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert len(served.content) > 1000, asset  # the real bundle, not an error page
    assert "/openapi.json" in html
    # the browser may fetch nothing from another host, even what the bundles themselves ask for (ReDoc's logo)
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "img-src 'self' data:" in policy and "http" not in policy
    assert client.get("/openapi.json").status_code == 200


def test_docs_pages_are_not_in_the_schema(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert not any(p.startswith(("/docs", "/redoc")) for p in paths)
