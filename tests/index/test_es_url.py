"""``index.es_url``: a URL's credentials are dropped for saving and given back only for the same server."""

from __future__ import annotations

from index.es_url import same_server, with_credentials_of, without_credentials
from index.registry import es_url


def test_credentials_are_dropped_and_only_given_to_the_same_server():
    assert without_credentials("https://elastic:p%40ss@ES.example:9243/prefix") == "https://ES.example:9243/prefix"
    assert without_credentials("http://localhost:9200") == "http://localhost:9200"
    assert same_server("http://ES.example:9200", "http://u:p@es.example:9200/")
    assert not same_server("http://es.example:9200", "https://es.example:9200")
    assert not same_server("http://es.example:9200", "http://es.example:9201")
    assert with_credentials_of("http://es.example:9200", "http://u:p@es.example:9200") == "http://u:p@es.example:9200"
    assert with_credentials_of("http://es.example:9200", "http://u:p@other:9200") == "http://es.example:9200"
    assert with_credentials_of("http://a:b@es.example:9200", "http://u:p@es.example:9200") == "http://a:b@es.example:9200"
    assert with_credentials_of("not a url", "http://u:p@es.example:9200") == "not a url"


def test_es_url_prefers_the_given_url_and_takes_the_environments_credentials_for_it(monkeypatch):
    monkeypatch.setenv("ELASTICSEARCH_URL", "http://u:p@es.example:9200")
    assert es_url(None) == "http://u:p@es.example:9200"
    assert es_url("http://es.example:9200") == "http://u:p@es.example:9200"
    assert es_url("http://localhost:9200") == "http://localhost:9200"
