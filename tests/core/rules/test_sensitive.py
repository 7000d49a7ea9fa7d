"""rules/sensitive.py: credentials in log messages and in form elicitations."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, Step, assert_proof, c, note, play, req, res, s

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def log(data: Any) -> dict[str, Any]:
    return note("notifications/message", {"level": "info", "logger": "auth", "data": data})


def form(**properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties}
    return req(1, "elicitation/create", {"message": "Your details", "requestedSchema": schema})


STRING = {"type": "string"}

PROOFS = [
    Proof(
        "LOG-NO-SECRETS",
        fire=[s(log(f"cloning with token {TOKEN}"))],
        miss=[s(log("cloning with the token from the keychain"))],
    ),
    Proof(
        "ELIC-NO-SENSITIVE",
        fire=[s(form(username=STRING, password=STRING)), c(res(1, {"action": "decline"}))],
        miss=[s(form(username=STRING, email=STRING)), c(res(1, {"action": "decline"}))],
        client_caps={"elicitation": {"form": {}}},
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def findings(steps: list[Step], **kw: Any) -> list[Any]:
    return play(Proof("-", [], [], **kw), steps).findings


@pytest.mark.parametrize(
    "data",
    [
        {"request": {"headers": {"authorization": "Bearer abc.def.ghi"}}},
        {"api_key": "k-12345"},
        "token [REDACTED] refreshed",
        # Only decoding the JSON inside the string shows the pair (core/redact.py
        # ``may_redact``: the rule's pre-test must let it through).
        '{"t":"\\"x\\" password\\u003dhunter2xyz"}',
        {"GitHub token (classic)": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"},
    ],
)
def test_structured_and_redacted_secrets_in_logs(data: Any) -> None:
    (finding,) = [f for f in findings([s(log(data))]) if f.rule == "LOG-NO-SECRETS"]
    assert finding.severity == "warning" and "(logger auth)" in finding.message


@pytest.mark.parametrize("data", [{"tokens": 1200, "cursor": "abc"}, 12, None, ["ok"]])
def test_ordinary_log_data_is_clean(data: Any) -> None:
    assert not [f for f in findings([s(log(data))]) if f.rule == "LOG-NO-SECRETS"]


def test_url_mode_may_ask_for_anything() -> None:
    url = {"mode": "url", "message": "Sign in", "url": "https://x.example/", "elicitationId": "e"}
    steps = [s(req(1, "elicitation/create", url))]
    found = findings(steps, client_caps={"elicitation": {"url": {}}})
    assert not [f for f in found if f.rule == "ELIC-NO-SENSITIVE"]


def test_every_credential_field_is_named() -> None:
    steps = [s(form(apiKey=STRING, cardNumber=STRING, accessToken=STRING, city=STRING))]
    (finding,) = [f for f in findings(steps) if f.rule == "ELIC-NO-SENSITIVE"]
    assert "city" not in finding.data["fields"]
    assert {"apiKey", "accessToken"} <= set(finding.data["fields"])
