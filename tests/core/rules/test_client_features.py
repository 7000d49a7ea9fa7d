"""rules/client_features.py: sampling and elicitation rules, each fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, err, note, req, res, s

TEXT = {"type": "text", "text": "hi"}
SAMPLE = {"messages": [{"role": "user", "content": TEXT}], "maxTokens": 9}
CAPS = {"sampling": {"tools": {}, "context": {}}, "elicitation": {"form": {}, "url": {}}}
FORM = {
    "message": "Your name?",
    "requestedSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
}
URL = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://example.com/consent",
    "elicitationId": "e1",
}


def sample(**params: Any) -> list:
    return [s(req(5, "sampling/createMessage", {**SAMPLE, **params}))]


def elicit(params: dict[str, Any], reply: dict[str, Any] | None = None) -> list:
    steps = [s(req(5, "elicitation/create", params))]
    if reply is not None:
        steps.append(c(res(5, reply)))
    return steps


TOOL = {"name": "w", "inputSchema": {"type": "object"}}
USE = {"type": "tool_use", "id": "u1", "name": "w", "input": {}}
RESULT = {"type": "tool_result", "toolUseId": "u1", "content": [TEXT]}


def conversation(*messages: dict[str, Any]) -> list:
    return sample(messages=list(messages), tools=[TOOL])


MIXED = conversation(
    {"role": "assistant", "content": [USE]},
    {"role": "user", "content": [RESULT, TEXT]},
)
SAMPLED = {"role": "assistant", "content": TEXT, "model": "m"}


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("client_caps", CAPS)
    return Proof(rule, fire, miss, **kw)


PROOFS = [
    proof(
        "CAP-SAMPLING-TOOLS",
        fire=sample(tools=[TOOL]),
        miss=sample(tools=[TOOL]),
        client_caps={"sampling": {}},
        miss_client_caps=CAPS,
    ),
    proof(
        "CAP-SAMPLING-CONTEXT",
        fire=sample(includeContext="thisServer"),
        miss=sample(includeContext="none"),
        client_caps={"sampling": {}},
    ),
    proof(
        "SAMP-PRIORITIES",
        fire=sample(modelPreferences={"costPriority": 5}),
        miss=sample(modelPreferences={"costPriority": 0.5}),
    ),
    proof(
        "SAMP-TOOLCHOICE",
        fire=sample(tools=[TOOL], toolChoice={"mode": "always"}),
        miss=sample(tools=[TOOL], toolChoice={"mode": "required"}),
    ),
    proof(
        "SAMP-TOOLRESULT-ONLY",
        fire=conversation(
            {"role": "user", "content": TEXT},
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [RESULT, TEXT]},
        ),
        miss=conversation(
            {"role": "user", "content": TEXT},
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [RESULT]},
        ),
    ),
    proof(
        "SAMP-ERRORS",
        # Tool results mixed with text: the client samples anyway instead of refusing it.
        fire=[*MIXED, c(res(5, SAMPLED))],
        miss=[*MIXED, c(err(5, -32602, "Tool results mixed with other content"))],
    ),
    proof(
        "SAMP-TOOL-BALANCE",
        fire=conversation(
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [{**RESULT, "toolUseId": "u2"}]},
        ),
        miss=conversation(
            {"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]}
        ),
    ),
    proof(
        "CAP-ELICIT-MODE",
        fire=elicit(URL),
        miss=elicit(URL),
        client_caps={"elicitation": {}},
        miss_client_caps=CAPS,
    ),
    proof("ELIC-MODE-FIELDS", fire=elicit({**URL, "elicitationId": None}), miss=elicit(URL)),
    proof(
        "ELIC-SCHEMA-FLAT",
        fire=elicit(
            {**FORM, "requestedSchema": {"type": "object", "properties": {"a": {"type": "object"}}}}
        ),
        miss=elicit(FORM),
    ),
    proof(
        "ELIC-FORM-NO-LINKS",
        fire=elicit({**FORM, "message": "See https://example.com first"}),
        miss=elicit(FORM),
    ),
    proof(
        "ELIC-URL-SAFE",
        fire=elicit({**URL, "url": "https://example.com/consent?access_token=abc"}),
        miss=elicit({**URL, "url": "https://example.com/consent?step=2"}),
    ),
    proof(
        "ELIC-COMPLETE-NOTIF",
        fire=[
            *elicit({**URL, "elicitationId": "e9"}),
            s(note("notifications/elicitation/complete", {"elicitationId": "e1"})),
        ],
        miss=[*elicit(URL), s(note("notifications/elicitation/complete", {"elicitationId": "e1"}))],
    ),
    proof(
        "ELIC-CONTENT-SCHEMA",
        fire=elicit(FORM, {"action": "accept", "content": {"nickname": "x"}}),
        miss=elicit(FORM, {"action": "accept", "content": {"name": "x"}}),
    ),
    proof(
        "ELIC-URL-REQUIRED-ERR",
        fire=[
            c(req(2, "tools/call", {"name": "a"})),
            s({"jsonrpc": "2.0", "id": 2, "error": {"code": -32042, "message": "x"}}),
        ],
        miss=[
            c(req(2, "tools/call", {"name": "a"})),
            s(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "error": {
                        "code": -32042,
                        "message": "x",
                        "data": {"elicitations": [URL]},
                    },
                }
            ),
        ],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def _findings_of(steps: list, rule: str) -> list:
    from tests.core.rules.dsl import play

    return play(proof(rule, steps, []), steps).find(rule)


def test_a_tool_used_although_tool_choice_was_none() -> None:
    use = {"role": "assistant", "content": [USE], "model": "m", "stopReason": "toolUse"}
    steps = [*sample(tools=[TOOL], toolChoice={"mode": "none"}), c(res(5, use))]
    (finding,) = _findings_of(steps, "SAMP-TOOLCHOICE")
    assert finding.severity == "info" and 'toolChoice mode "none"' in finding.message
    # Near miss: the same reply to mode "auto", or a text reply to mode "none".
    steps = [*sample(tools=[TOOL], toolChoice={"mode": "auto"}), c(res(5, use))]
    assert _findings_of(steps, "SAMP-TOOLCHOICE") == []
    text = {"role": "assistant", "content": TEXT, "model": "m"}
    steps = [*sample(tools=[TOOL], toolChoice={"mode": "none"}), c(res(5, text))]
    assert _findings_of(steps, "SAMP-TOOLCHOICE") == []


def test_a_plain_http_elicitation_url_outside_development() -> None:
    (finding,) = _findings_of(elicit({**URL, "url": "http://example.com/consent"}), "ELIC-URL-SAFE")
    assert finding.severity == "warning" and "plain http" in finding.message
    for url in ("http://localhost:8080/consent", "http://127.0.0.1/x", "https://example.com/a"):
        assert _findings_of(elicit({**URL, "url": url}), "ELIC-URL-SAFE") == [], url


def test_an_unbalanced_sampling_request_refused_with_invalid_params_is_right() -> None:
    from tests.core.rules.dsl import play

    unbalanced = conversation(
        {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [{**RESULT, "toolUseId": "u2"}]},
    )
    refused = play(proof("-", [], []), [*unbalanced, c(err(5, -32602, "missing tool result"))])
    answered = play(proof("-", [], []), [*unbalanced, c(res(5, SAMPLED))])
    assert not refused.find("SAMP-ERRORS")
    (finding,) = answered.find("SAMP-ERRORS")
    assert "lacks the tool results" in finding.message


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "ELIC-MODE-FIELDS",
            fire=elicit({"message": "Your name?"}),
            miss=elicit(FORM),
        ),
        "form-mode elicitation request lacks requestedSchema",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
