"""The value signal of redaction: strings that are credentials whatever they are called.

Each detector is one regular expression over bytes, modelled on the rules of
gitleaks (``config/gitleaks.toml``: ``openai-api-key``, ``github-pat``,
``slack-*-token``, ``aws-access-token``, ``gcp-api-key``, ``jwt``,
``private-key``, ...) and on detect-secrets' plugins of the same names, but
kept to the formats with a fixed, distinctive prefix or shape. Entropy
detectors are left out on purpose: on JSON traffic full of ids, hashes and
base64 images they flag far more than they catch (detect-secrets' hex entropy
plugin reports the ``ba`` of "basic"), and a trace whose ids or cursors were
redacted would be misread by ``check``.

The patterns work on the raw bytes of a frame at any JSON escaping depth: a
token's characters never include a quote or a backslash, so the same match
finds it in ``"sk-..."`` and in ``"{\\"key\\": \\"sk-...\\"}"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcpsniff.core.lazy_pattern import lazy


@dataclass(frozen=True, slots=True)
class Detector:
    """One secret format: its name, its hints, its pattern, and the group that is the secret."""

    name: str
    #: Lower-case literals one of which every match contains (a cheap pre-test).
    hints: tuple[bytes, ...]
    pattern: re.Pattern[bytes]
    #: The group to replace; the rest of the match (a prefix, a scheme) is kept.
    group: int = 0
    #: How far after the start of a match one of ``hints`` may start (in the
    #: lower-cased match). The pattern is then tried only there, not at every
    #: offset: a ``\b``-led pattern costs ``re`` 10-18 us per KiB of searching.
    hint_offset: int = 0
    #: With a ``hint_offset``: the bytes a match may have before its hint, as a
    #: pattern ending in ``\Z``. Candidates start only where a run of them reaches
    #: the hint, so a URL costs a few tries instead of ``hint_offset``.
    lead: re.Pattern[bytes] | None = None


def _rx(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]:
    # Compiled at first use: most traffic holds a hint of few secrets, if any.
    return lazy(pattern, flags)


# Token characters: what a credential in a header, URL or JSON string consists of.
_T = rb"[A-Za-z0-9_\-]"

DETECTORS: tuple[Detector, ...] = (
    # PEM private keys: the whole block, or to the end of the string when cut off.
    Detector(
        "private-key",
        (b"-----begin",),
        _rx(
            rb"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
            rb"(?:[^\"]{0,16384}?-----END[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----|[^\"]{0,16384})"
        ),
    ),
    # Authorization schemes (RFC 9110 §11.4, RFC 6750 §2.1): keep the scheme.
    # The credential must look like one (a digit or a token symbol in it), so
    # that "a basic implementation" is prose, not a Basic credential.
    Detector(
        "auth-scheme",
        (b"bearer", b"basic"),
        _rx(
            rb"(?i)\b(?:bearer|basic) +"
            rb"((?=[A-Za-z0-9._~+/=\-]*[0-9._~+/=\-])[A-Za-z0-9._~+/\-]{8,}=*)"
        ),
        1,
    ),
    # JSON Web Tokens (RFC 7519): base64url header "{"... is always "eyJ".
    Detector("jwt", (b"eyj",), _rx(rb"\beyJ" + _T + rb"{8,}\.eyJ" + _T + rb"{8,}\." + _T + rb"*")),
    # OpenAI / Anthropic style "sk-" keys, Stripe live and restricted keys.
    Detector(
        "sk-key",
        (b"sk-", b"sk_", b"rk_", b"rk-"),
        _rx(rb"\b(?:sk|rk)[-_](?:live_|test_|proj-|ant-)?" + _T + rb"{20,}"),
    ),
    Detector(
        "github-token",
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
        _rx(rb"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,})"),
    ),
    Detector("gitlab-token", (b"glpat-",), _rx(rb"\bglpat-" + _T + rb"{20,}")),
    Detector("slack-token", (b"xox",), _rx(rb"\bxox[abposre]-[A-Za-z0-9\-]{10,}")),
    Detector(
        "slack-webhook",
        (b"hooks.slack.com",),
        _rx(rb"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"),
    ),
    Detector(
        "aws-access-key-id",
        (b"akia", b"asia", b"abia", b"acca", b"a3t"),
        _rx(rb"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ),
    Detector("google-api-key", (b"aiza",), _rx(rb"\bAIza" + _T + rb"{35}")),
    Detector("npm-token", (b"npm_",), _rx(rb"\bnpm_[A-Za-z0-9]{36}")),
    Detector("pypi-token", (b"pypi-",), _rx(rb"\bpypi-AgEIcHlwaS5vcmc" + _T + rb"{40,}")),
    Detector("huggingface-token", (b"hf_",), _rx(rb"\bhf_[A-Za-z]{30,}")),
    # Credentials in a URL's userinfo (RFC 3986 §3.2.1: "Use of the format
    # user:password in the userinfo field is deprecated"): keep the user.
    Detector(
        "url-userinfo",
        (b"://",),
        _rx(rb"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s/?#@\"'<>:\\]*:([^\s/?#@\"'<>\\]+)@"),
        1,
        hint_offset=21,  # "://" after a scheme of 2 to 21 characters
        lead=_rx(rb"[A-Za-z0-9+.\-]+\Z"),
    ),
)

#: Every detector's hints: a string containing none of them has no value secret.
VALUE_HINTS: tuple[bytes, ...] = tuple(
    dict.fromkeys(hint for detector in DETECTORS for hint in detector.hints)
)
