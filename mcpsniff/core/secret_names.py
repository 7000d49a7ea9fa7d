"""The name signal of redaction: does a member, header, parameter or flag hold a secret?

A name is split into words (``aws_secret_access_key`` → aws, secret, access,
key; ``apiKeys`` → api, keys; ``X-Amz-Security-Token`` → x, amz, security,
token) and judged word by word, never by substring. That is what keeps
``implementation`` (no word ``pw``/``pass`` in it) and ``pwd`` (a working
directory, by far its commonest meaning in tool arguments) out, while ``pw``,
``pass``, ``auth`` and ``secret_key`` are in.

The vocabulary follows the keyword detectors of established scanners
(detect-secrets' ``KeywordDetector`` denylist, gitleaks' ``generic-api-key``
keywords), narrowed by word boundaries, by descriptor words that make a name
talk *about* a secret instead of holding one (``token_type``,
``authorization_endpoint``, ``password_required``, ``max_tokens``), and by the
MCP protocol fields that merely look similar (``progressToken``,
``nextCursor``): "The progressToken ... MUST be a string or integer value"
chosen by the sender (MCP basic/utilities/progress), not a credential, and the
analyzer must see it intact to pair progress notifications.
"""

from __future__ import annotations

import functools
from typing import Literal

from mcpsniff.core.lazy_pattern import lazy

#: Where a name was found; some short names are secrets only in one place.
Context = Literal["json", "header", "query", "arg", "text"]

# camelCase, PascalCase, ALLCAPS runs and digits: "APIKey" -> API, Key.
_WORD = lazy(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

#: Words that name a secret by themselves (as the head or inside the name).
_SECRET_WORDS = frozenset(
    {
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "pass",
        "pw",
        "secret",
        "secrets",
        "token",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "authorization",
        "auth",
        # Run-together spellings, as one word: apikey, accesstoken, ...
        "apikey",
        "apikeys",
        "accesskey",
        "secretkey",
        "privatekey",
        "authkey",
        "accesstoken",
        "refreshtoken",
        "authtoken",
        "idtoken",
        "apitoken",
        "bearertoken",
        "sessiontoken",
        "clientsecret",
    }
)
#: Run-together endings (``openaiapikey``, ``githubtoken``, ``dbpassword``).
_SECRET_ENDINGS = (
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
)
#: Words before ``key``/``keys`` that make it a credential (``api key``, ``private key``).
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "priv",
        "client",
        "auth",
        "session",
        "master",
        "encryption",
        "signing",
        "account",
        "service",
        "license",
        "subscription",
        "app",
        "application",
        "consumer",
        "shared",
        "ssh",
        "gpg",
        "pgp",
        "db",
        "database",
        "webhook",
        "admin",
        "root",
    }
)
#: Words before ``tokens`` (plural) that make them credentials, not counts.
_TOKENS_QUALIFIERS = frozenset(
    {"access", "refresh", "auth", "api", "bearer", "id", "session", "oauth", "personal"}
)
#: Words before ``token`` that make it a position or a count, not a credential.
_TOKEN_NOT_SECRET_BEFORE = frozenset(
    {"progress", "page", "next", "continuation", "sync", "cancellation", "max", "min", "num"}
)
#: A later word of these makes the name describe a secret rather than hold one.
_DESCRIPTORS = frozenset(
    {
        "type",
        "types",
        "endpoint",
        "endpoints",
        "url",
        "urls",
        "uri",
        "count",
        "counts",
        "limit",
        "limits",
        "max",
        "min",
        "length",
        "len",
        "size",
        "name",
        "names",
        "id",
        "ids",
        "expires",
        "expiry",
        "expiration",
        "exp",
        "in",
        "at",
        "policy",
        "hint",
        "required",
        "enabled",
        "disabled",
        "format",
        "field",
        "fields",
        "usage",
        "method",
        "methods",
        "scheme",
        "schemes",
        "mode",
        "provider",
        "providers",
        "server",
        "servers",
        "file",
        "path",
        "env",
        "header",
        "param",
        "location",
        "supported",
        "rate",
        "ttl",
        "age",
        "set",
        "valid",
        "changed",
        "reset",
        "strength",
    }
)
#: Names that are secrets only in a URL's query (Google ``key=``, an OAuth
#: authorization ``code=``, Azure SAS ``sig=``, AWS ``X-Amz-Signature``) or on
#: a command line (``--key``); in JSON, ``key`` and ``code`` are everyday names.
_QUERY_ONLY = frozenset({"key", "keys", "code", "sig", "signature"})
_ARG_ONLY = frozenset({"key"})
#: MCP and HTTP protocol names that are never secrets, whatever they look like.
PROTOCOL_NAMES = frozenset(
    {
        "progresstoken",
        "cursor",
        "nextcursor",
        "requestid",
        "id",
        "method",
        "jsonrpc",
        "mcpsessionid",
        "mcpprotocolversion",
        "lasteventid",
    }
)


def words(name: str) -> list[str]:
    """``name`` split into lower-case words at separators and case changes."""
    return [w.lower() for w in _WORD.findall(name)]


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str, context: Context = "json") -> bool:
    """Whether a member, header, query parameter or flag called ``name`` holds a credential."""
    parts = words(name)
    if not parts or "".join(parts) in PROTOCOL_NAMES:
        return False
    if len(parts) == 1 and (
        (context == "query" and parts[0] in _QUERY_ONLY)
        or (context == "arg" and parts[0] in _ARG_ONLY)
    ):
        return True
    for i, word in enumerate(parts):
        if _names_secret(parts, i, word, context):
            return not any(later in _DESCRIPTORS for later in parts[i + 1 :])
    return False


def _names_secret(parts: list[str], i: int, word: str, context: Context) -> bool:
    """Whether word ``i`` of a name, in its neighbourhood, is a credential word."""
    before = parts[i - 1] if i else ""
    if word == "token":
        return before not in _TOKEN_NOT_SECRET_BEFORE
    if word == "tokens":
        return before in _TOKENS_QUALIFIERS
    if word in ("key", "keys"):
        return before in _KEY_QUALIFIERS
    if word in ("signature", "sig") and context == "query":
        return True
    if word in _SECRET_WORDS:
        return True
    return (
        len(word) > 8
        and word.endswith(_SECRET_ENDINGS)
        and word not in PROTOCOL_NAMES
        and not word.endswith(("pagetoken", "synctoken"))
    )
