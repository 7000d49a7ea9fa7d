"""A corpus of secrets in the places users leak them, and of look-alikes that are not secrets.

Every secret is a unique string, so a test can grep a trace or a command's
output for each one. ``SECRETS`` maps a placement (where the secret sits) to
the secret; the builders below put each one there. ``LOOKALIKES`` are strings
that must come through redaction unchanged (over-redaction is a bug too).
Shared by the stdio and the HTTP corpus tests and by the peers they run
(``peers/secret_peers.py``), which import this file by path.
"""

from __future__ import annotations

import json
from typing import Any


def _s(n: int) -> str:
    """The n-th unique secret-looking filler (letters and digits, 16 characters)."""
    return f"Qz{n:03d}vK8mW2pL9x"


#: Placement -> the secret put there.
SECRETS: dict[str, str] = {}


def _add(placement: str, value: str) -> str:
    assert placement not in SECRETS
    SECRETS[placement] = value
    return value


# JSON members named like secrets (client request arguments): 23.
MEMBER_NAMES = [
    "secret_key",
    "aws_secret_access_key",
    "access_key",
    "auth",
    "pass",
    "pw",
    "private_key_pem",
    "api_key",
    "apiKey",
    "x-api-key",
    "client_secret",
    "refresh_token",
    "accessToken",
    "db_password",
    "OPENAI_API_KEY",
    "passphrase",
    "credentials",
    "cookie",
    "session_token",
    "GITHUB_TOKEN",
    "privateKey",
]
ARGUMENTS: dict[str, Any] = {
    name: _add(f"member {name}", _s(i)) for i, name in enumerate(MEMBER_NAMES)
}
ARGUMENTS["password"] = int(_add("member password (number)", "987650321"))
ARGUMENTS["apiKeys"] = [_add("member apiKeys[0]", _s(100)), _add("member apiKeys[1]", _s(101))]

# Secrets recognised by their value, under innocent names (server result): 16.
VALUE_SECRETS = {
    "bearer": "Bearer " + _add("value bearer", "eyBq7Yt0kenValue42abcdEF"),
    "basic": "Basic " + _add("value basic", "dXNlcjpzM2NyM3RQYXNz"),
    "jwt": _add(
        "value jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEyMzQ1Njc4In0.c2lnbmF0dXJlLXZhbHVlLTEy",
    ),
    "openai": _add("value sk-proj", "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"),
    "anthropic": _add("value sk-ant", "sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"),
    "stripe": _add("value sk_live", "sk_live_" + "51Hb2c3d4e5f6g7h8i9j0kLm"),
    "github": _add("value ghp_", "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"),
    "github_pat": _add("value github_pat_", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    "slack": _add("value xoxb", "xoxb-1234567890-0987654321-AbCdEfGhIjKl"),
    "aws": _add("value AKIA", "AKIAZ7Q3X9W2V5T8R1P4"),
    "google": _add("value AIza", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "gitlab": _add("value glpat-", "glpat-" + "Xy7Zw3Vu9Ts1Rq5Po8Nm"),
    "npm": _add("value npm_", "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "hf": _add("value hf_", "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"),
    "pem": "-----BEGIN RSA PRIVATE KEY-----\n"
    + _add("value PEM body", "MIIEowIBAAKCAQEA7q8pemBodyLine")
    + "\n-----END RSA PRIVATE KEY-----",
    "dsn": "postgres://app:" + _add("value URL userinfo", _s(200)) + "@db.internal:5432/main",
    "link": "https://api.example.com/v1/items?key="
    + _add("value query key=", _s(201))
    + "&code="
    + _add("value query code=", _s(202))
    + "&sig="
    + _add("value query sig=", _s(203)),
}

# JSON inside JSON strings (server result text), as tool results arrive: 5.
NESTED_TEXTS = [
    json.dumps({"api_key": _add("nested api_key", _s(300)), "rows": 3}),
    json.dumps({"config": {"password": _add("nested password", _s(301))}}),
    json.dumps({"inner": json.dumps({"token": _add("nested twice token", _s(302))})}),
    "login failed: password=" + _add("text password=", _s(303)) + " for user bob",
    "upstream said: Authorization: Bearer " + _add("text bearer", "tk" + _s(304)),
]

# The JSON-RPC error a server returns: message and data: 2.
ERROR_MESSAGE = "invalid credentials: api_key=" + _add("error message api_key=", _s(400))
ERROR_DATA = {"token": _add("error data token", _s(401))}

# The spawned server's command line: 5.
ARGV = [
    "--api-key",
    _add("argv --api-key X", _s(500)),
    "--token=" + _add("argv --token=X", _s(501)),
    "postgres://u:" + _add("argv URL userinfo", _s(502)) + "@host/db",
    "API_KEY=" + _add("argv API_KEY=X", _s(503)),
    "--password",
    _add("argv --password X", _s(504)),
]

# stderr lines of the server: 6.
STDERR_LINES = [
    "debug: password=" + _add("stderr password=", _s(600)),
    "sending Authorization: Bearer " + _add("stderr bearer", "b3" + _s(601)),
    "config api_key: " + _add("stderr api_key:", _s(602)),
    "db postgres://svc:" + _add("stderr URL userinfo", _s(603)) + "@10.0.0.5/app",
    "retrying with token=" + _add("stderr token=", _s(604)),
    "env AWS_SECRET_ACCESS_KEY=" + _add("stderr AWS_SECRET_ACCESS_KEY=", _s(605)),
]

# HTTP only: request headers, response headers, query, upstream userinfo, error body.
REQUEST_HEADERS = {
    "Authorization": "Bearer " + _add("header Authorization", "hA" + _s(700)),
    "X-Custom-Token": _add("header X-Custom-Token", _s(701)),
    "X-Amz-Security-Token": _add("header X-Amz-Security-Token", _s(702)),
    "X-Access-Key": _add("header X-Access-Key", _s(703)),
    "X-Auth": _add("header X-Auth", _s(704)),
    "X-Forwarded-Authorization": "Bearer "
    + _add("header X-Forwarded-Authorization", "fw" + _s(705)),
    "Cookie": "session=" + _add("header Cookie", _s(706)),
}
RESPONSE_HEADERS = {
    "Set-Cookie": "sid=" + _add("response header Set-Cookie", _s(800)) + "; HttpOnly",
    "X-Custom-Token": _add("response header X-Custom-Token", _s(801)),
    "X-Upstream-Secret": _add("response header X-Upstream-Secret", _s(802)),
    "X-Debug": "auth Bearer " + _add("response header value bearer", "rb" + _s(803)),
}
QUERY = {
    "key": _add("query key=", _s(900)),
    "code": _add("query code=", _s(901)),
    "sig": _add("query sig=", _s(902)),
    "access_token": _add("query access_token=", _s(903)),
}
UPSTREAM_PASSWORD = _add("upstream userinfo", _s(904))
ERROR_BODY = "401 unauthorized: api_key=" + _add("http error body api_key=", _s(905))

#: Strings that are not secrets and must survive redaction unchanged.
LOOKALIKE_ARGUMENTS: dict[str, Any] = {
    "summary": "a basic implementation of the parser",
    "pwd": "/home/alice/project-lookalike",
    "maxTokens": 4096,
    "token_type": "Bearer",
    "keyboard": "qwerty-lookalike",
    "author": "Jane Lookalike",
    "monkey": "banana-lookalike",
    "passage": "the passage-lookalike",
    "compass": "north-lookalike",
    "key": "theme-lookalike",
    "signature": "def f(x: int) -> int",
    "description": "Use your API key to authenticate (lookalike)",
    "task": "task-abcdefghijklmnopqrstuvwxyz0123",
    "authorization_endpoint": "https://auth.example.com/authorize-lookalike",
    "public_key": "ssh-ed25519 AAAAlookalike",
    "keywords": ["token-lookalike", "secret-lookalike"],
}
PROGRESS_TOKEN = "sk-progress-0123456789abcdefghijkl"
NEXT_CURSOR = "eyJwYWdlIjoyfQ-lookalike"
LOOKALIKES = [
    "a basic implementation of the parser",
    "/home/alice/project-lookalike",
    '"maxTokens":4096',
    '"token_type":"Bearer"',
    "qwerty-lookalike",
    "Jane Lookalike",
    "banana-lookalike",
    "the passage-lookalike",
    "north-lookalike",
    "theme-lookalike",
    "def f(x: int) -> int",
    "Use your API key to authenticate (lookalike)",
    "task-abcdefghijklmnopqrstuvwxyz0123",
    "https://auth.example.com/authorize-lookalike",
    "ssh-ed25519 AAAAlookalike",
    "token-lookalike",
    PROGRESS_TOKEN,
    NEXT_CURSOR,
]


def tool_call(request_id: int) -> dict[str, Any]:
    """The client's request: secrets by name, look-alikes, a progressToken."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "lookup",
            "arguments": {**ARGUMENTS, **LOOKALIKE_ARGUMENTS},
            "_meta": {"progressToken": PROGRESS_TOKEN},
        },
    }


def tool_result(request_id: Any) -> dict[str, Any]:
    """The server's answer: value secrets, JSON in text, a nextCursor look-alike."""
    content = [{"type": "text", "text": text} for text in NESTED_TEXTS]
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": content, "values": VALUE_SECRETS, "nextCursor": NEXT_CURSOR},
    }


def tool_error(request_id: Any) -> dict[str, Any]:
    """An error answer that quotes credentials."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32602, "message": ERROR_MESSAGE, "data": ERROR_DATA},
    }


def leaked(text: str, placements: set[str] | None = None) -> list[str]:
    """The placements whose secret appears in ``text``."""
    return [
        where
        for where, secret in SECRETS.items()
        if (placements is None or where in placements) and secret in text
    ]
