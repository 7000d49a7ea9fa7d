"""HAR 1.2's structure as a JSON Schema, written from the specification's object list.

"HTTP Archive (HAR) format, version 1.2" (Jan Odvarko; W3C Web Performance WG
draft): every object, its required members and their types. Optional members
are typed where they appear; ``_``-prefixed custom fields are allowed
everywhere, as the format says.
"""

from __future__ import annotations

from typing import Any

_STRING = {"type": "string"}
_INT = {"type": "integer"}
_NAME_VALUE = {
    "type": "object",
    "required": ["name", "value"],
    "properties": {"name": _STRING, "value": _STRING, "comment": _STRING},
}
_TIMING = {"type": "number", "minimum": -1}
# ISO 8601 with a time zone designator, as "startedDateTime" requires.
_ISO_8601 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$"

HAR_1_2: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["log"],
    "properties": {
        "log": {
            "type": "object",
            "required": ["version", "creator", "entries"],
            "properties": {
                "version": {"const": "1.2"},
                "creator": {
                    "type": "object",
                    "required": ["name", "version"],
                    "properties": {"name": _STRING, "version": _STRING},
                },
                "pages": {"type": "array"},
                "comment": _STRING,
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": [
                            "startedDateTime",
                            "time",
                            "request",
                            "response",
                            "cache",
                            "timings",
                        ],
                        "properties": {
                            "pageref": _STRING,
                            "startedDateTime": {
                                "type": "string",
                                "pattern": _ISO_8601,
                            },
                            "time": {"type": "number", "minimum": 0},
                            "request": {
                                "type": "object",
                                "required": [
                                    "method",
                                    "url",
                                    "httpVersion",
                                    "cookies",
                                    "headers",
                                    "queryString",
                                    "headersSize",
                                    "bodySize",
                                ],
                                "properties": {
                                    "method": _STRING,
                                    "url": {"type": "string", "pattern": "^https?://"},
                                    "httpVersion": _STRING,
                                    "cookies": {"type": "array"},
                                    "headers": {"type": "array", "items": _NAME_VALUE},
                                    "queryString": {"type": "array", "items": _NAME_VALUE},
                                    "postData": {
                                        "type": "object",
                                        "required": ["mimeType"],
                                        "properties": {
                                            "mimeType": _STRING,
                                            "text": _STRING,
                                            "params": {"type": "array"},
                                        },
                                        "not": {"required": ["encoding"]},
                                    },
                                    "headersSize": _INT,
                                    "bodySize": _INT,
                                },
                            },
                            "response": {
                                "type": "object",
                                "required": [
                                    "status",
                                    "statusText",
                                    "httpVersion",
                                    "cookies",
                                    "headers",
                                    "content",
                                    "redirectURL",
                                    "headersSize",
                                    "bodySize",
                                ],
                                "properties": {
                                    "status": _INT,
                                    "statusText": _STRING,
                                    "httpVersion": _STRING,
                                    "cookies": {"type": "array"},
                                    "headers": {"type": "array", "items": _NAME_VALUE},
                                    "content": {
                                        "type": "object",
                                        "required": ["size", "mimeType"],
                                        "properties": {
                                            "size": _INT,
                                            "compression": _INT,
                                            "mimeType": _STRING,
                                            "text": _STRING,
                                            "encoding": _STRING,
                                        },
                                    },
                                    "redirectURL": _STRING,
                                    "headersSize": _INT,
                                    "bodySize": _INT,
                                },
                            },
                            "cache": {"type": "object"},
                            "timings": {
                                "type": "object",
                                "required": ["send", "wait", "receive"],
                                "properties": {
                                    "blocked": _TIMING,
                                    "dns": _TIMING,
                                    "connect": _TIMING,
                                    "send": {"type": "number", "minimum": 0},
                                    "wait": {"type": "number", "minimum": 0},
                                    "receive": {"type": "number", "minimum": 0},
                                    "ssl": _TIMING,
                                },
                            },
                            "serverIPAddress": _STRING,
                            "connection": _STRING,
                            "comment": _STRING,
                        },
                    },
                },
            },
        }
    },
}
