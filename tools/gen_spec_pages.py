#!/usr/bin/env python3
"""Generate ``mcpsniff/core/spec_pages.json``: the pages of each MCP version and their sections.

A finding links the page of the specification it comes from, in the session's
version (``mcpsniff/core/spec_links.py``). Pages move between versions (2026-07-28
moved cancellation and progress to ``basic/patterns/`` and split the transports
page), so a link is only made to a page this index says exists in that version,
and to a ``#section`` only when that page has the heading.

Input: a checkout (or bare git directory) of ``modelcontextprotocol/modelcontextprotocol``.
Output: ``{"<version>": {"<page path without .mdx>": ["<anchor>", ...]}, "extensions": {...}}``.

Usage::

    python tools/gen_spec_pages.py REPO_GIT_DIR mcpsniff/core/spec_pages.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def slug(heading: str) -> str:
    """The anchor the documentation site gives a heading (lower case, words joined by -)."""
    text = re.sub(r"<[^>]+>", "", heading)  # inline JSX/HTML tags
    text = re.sub(r"[`*_\[\]()]", "", text).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"\s+", "-", text).strip("-")


def anchors(text: str) -> list[str]:
    """The anchors of the Markdown headings in ``text`` (fenced code skipped), in order."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match is not None and (anchor := slug(match.group(2))) and anchor not in found:
            found.append(anchor)
    return found


def _git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def build(repo: str) -> dict[str, dict[str, list[str]]]:
    """The page index of every version (and the extensions) in the repository at ``repo``."""
    names = _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "docs").splitlines()
    index: dict[str, dict[str, list[str]]] = {}
    groups = [(v, f"docs/specification/{v}/") for v in VERSIONS]
    groups.append(("extensions", "docs/extensions/"))
    for group, prefix in groups:
        pages: dict[str, list[str]] = {}
        for name in sorted(n for n in names if n.startswith(prefix) and n.endswith(".mdx")):
            page = name[len(prefix) : -len(".mdx")]
            pages[page] = anchors(_git(repo, "show", f"HEAD:{name}"))
        index[group] = pages
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", help="the modelcontextprotocol repository (git directory)")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    index = build(args.repo)
    args.out.write_text(json.dumps(index, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
