"""Test data and assertions shared by the API tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from data.model import Dialogue, Turn

#: A question the default (learned) engine answers with confidence; the paper's question gets a detail question there.
BRAKE_SQUEAL_QUESTION = ("My brakes make a high-pitched squeal while I drive, and it goes away when I press the brake "
                         "pedal. The car still stops fine. Should I worry?")
SPARK_PLUG_QUESTION = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the "
                       "solenoid, but I still could not start my car.")
API_KEY = "test-key-0123456789"
#: Base URL of the test clients: a Host the server answers by default.
LOCAL_URL = "http://localhost"
#: Settings that switch every per-client quota off, for tests that send many requests from one client on purpose.
NO_QUOTAS = {"session_rate": "off", "turn_rate": "off", "search_rate": "off", "engine_seconds": 0}

_DIALOGUES = [
    ("t-nostart-1", [
        ("Q", "My car will not start although I replaced the battery and the spark plugs."),
        ("A", "Since the engine cranks, check whether it gets spark and fuel. Spray starting fluid into the intake; "
              "if it starts for a couple of seconds, the fuel supply is the problem, not the ignition."),
        ("C", "It started on the starting fluid at first, but now it does not."),
        ("A", "Then check the fuel pressure at the rail, because starting fluid only proves the ignition works. "
              "If there is no pressure, test the fuel pump relay and its fuse."),
    ]),
    ("t-nostart-2", [
        ("Q", "The engine cranks but will not start even with new ignition coils."),
        ("A", "Although the coils are new, the crankshaft position sensor can stop the spark when it fails, "
              "so read the codes and test the sensor before you replace anything else."),
    ]),
    ("t-nostart-3", [
        ("Q", "Nothing happens when I turn the key, but the lights work."),
        ("A", "If the starter solenoid only clicks, clean the battery terminals and check the ground strap, "
              "because a corroded connection drops the voltage the starter needs."),
    ]),
    ("t-brakes-1", [
        ("Q", "My brakes squeal when I stop, even though the pads are new."),
        ("A", "New pads often squeal because the rotors were not resurfaced, so check the rotors for glazing "
              "and apply brake grease to the back of the pads."),
    ]),
    ("t-heat-1", [
        ("Q", "The engine overheats in traffic but the coolant is full."),
        ("A", "When it overheats only at idle, the radiator fan is the usual suspect, so check that the fan "
              "turns on when the engine gets hot and test its relay if it does not."),
    ]),
    ("t-battery-1", [
        ("Q", "The battery keeps dying overnight although it is new."),
        ("A", "A new battery that dies overnight points to a parasitic drain, so measure the current with the "
              "key off and pull fuses one at a time until the drain stops."),
    ]),
]


def small_dialogues() -> list[Dialogue]:
    """Return the hand-written test dialogues."""
    return [Dialogue(id=i, turns=tuple(Turn(role=r, text=t) for r, t in turns)) for i, turns in _DIALOGUES]


def write_corpus(path: Path) -> Path:
    """Write the test dialogues as JSONL at ``path``; return it."""
    path.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in small_dialogues()), encoding="utf-8")
    return path


def keep_session_tokens(client: Any, tokens: dict[str, str] | None = None) -> Any:
    """Make the httpx ``client`` send each session's token as the chat page does; return it.

    The token of every ``POST /sessions`` answer goes, as ``X-Session-Token``, with each later request on that
    session (a token the test sets itself wins). Clients given one ``tokens`` dict share what they learned.
    """
    known = {} if tokens is None else tokens

    def learn(response: Any) -> None:
        if response.request.method == "POST" and response.request.url.path == "/sessions" and response.status_code == 201:
            response.read()
            body = response.json()
            known[body["session_id"]] = body["token"]

    def send(request: Any) -> None:
        parts = request.url.path.split("/")
        if len(parts) > 2 and parts[1] == "sessions" and parts[2] in known:
            request.headers.setdefault("X-Session-Token", known[parts[2]])

    client.event_hooks = {"request": [*client.event_hooks["request"], send],
                          "response": [*client.event_hooks["response"], learn]}
    return client


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """Assert ``response`` is a JSON error with ``status`` (and ``code``); return its error object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code, body
    assert "Traceback" not in response.text and "/work/" not in response.text and "/tmp/" not in response.text
    return body["error"]
