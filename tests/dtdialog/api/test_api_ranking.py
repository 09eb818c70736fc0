"""The API with its default ranking (``auto``): the learned hybrid ranker when the [dense] extra is installed."""

from __future__ import annotations

import pytest
from api_helpers import API_KEY

from dtdialog.ranking.learned_scorer import DEFAULT_MODEL

pytestmark = pytest.mark.dense


@pytest.fixture
def learned_client(make_client, index_copy, monkeypatch):
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra (onnxruntime, tokenizers) is not installed")
    if not DEFAULT_MODEL.is_file():
        pytest.skip("no shipped ranker model (python -m eval.train_ranker)")
    monkeypatch.delenv("DTDIALOG_RANKER", raising=False)
    client = make_client(index_path=index_copy, ranker=None, api_key=API_KEY)  # ranker None: the engine default
    client.headers["X-API-Key"] = API_KEY  # index writes need the key
    return client


def test_default_ranking_is_the_learned_ranker_with_contributions(learned_client):
    body = learned_client.post("/search", json={"query": "My brakes squeal when I stop, even though the pads are new.",
                                                "size": 3}).json()
    top = body["hits"][0]
    assert top["dialogue_id"] == "t-brakes-1"
    features = top["features"]
    assert "model_logit" in features and "contribution.dense" in features and features["dense"] > 0
    names = [k for k in features if k.startswith("contribution.") and k not in ("contribution.linear",)]
    assert sum(features[k] for k in names) == pytest.approx(features["model_logit"], abs=1e-6)


def test_added_answers_get_vectors_and_compete(learned_client):
    new = {"answers": [{"text": "If the wipers stop in the middle of the glass, replace the wiper motor park switch.",
                        "dialogue_id": "api-wipers", "position": 1, "question": "My wipers stop halfway."}]}
    assert learned_client.post("/index/documents", json=new).status_code == 200
    body = learned_client.post("/search", json={"query": "My wipers stop halfway across the windshield.",
                                                "size": 3}).json()
    top = body["hits"][0]
    # the new answer has a vector (a dense cosine), so the learned ranker can rank it first
    assert top["id"] == "api-wipers#1" and top["features"]["dense"] > 0.3
