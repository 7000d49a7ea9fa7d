"""``mcpsniff rules``: every rule mcpsniff checks."""

from __future__ import annotations

import click
import orjson

from mcpsniff.cli.options import format_option
from mcpsniff.core import catalog, conformance, explain, spec_links
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.core.rules.severities import severities
from mcpsniff.core.spec_links import spec_link


@click.command()
@format_option(("text", "json"))
def rules(fmt: str) -> None:
    """List every rule mcpsniff checks, with severity, versions and spec source.

    The severity is what the rule's findings carry; a rule whose findings
    carry several (by version, or a heuristic part reported lower) lists them
    all, strongest first ("severities" in JSON, "error/warning" in text).
    """
    for rule_id in IMPLEMENTED:
        entry = catalog.get(rule_id)
        versions = _versions_label(entry.versions)
        # What the findings carry, which a rule's own severity may set apart
        # from the catalogue's keyword (core/rules/severities.py).
        carried = severities(rule_id)
        if fmt == "json":
            click.echo(
                orjson.dumps(
                    {
                        "rule": rule_id,
                        "severity": carried[0],
                        "severities": list(carried),
                        "keyword": entry.sev,
                        "versions": list(entry.versions),
                        "source": spec_links.plain_source(entry),
                        "spec": spec_link(rule_id),
                        "description": explain.description(rule_id),
                        "conformance": list(conformance.checks_for(rule_id)),
                    }
                ).decode()
            )
        else:
            shown = "/".join(carried)
            click.echo(f"{rule_id:<28} {shown:<13} {versions:<24} {entry.sev}")
            click.echo(f"    {spec_links.plain_source(entry)[:200]}")
    if fmt == "text":
        click.echo(f"{len(IMPLEMENTED)} rules implemented")


def _versions_label(versions: tuple[str, ...]) -> str:
    if tuple(versions) == catalog.VERSIONS:
        return "all versions"
    if len(versions) == 1:
        return versions[0]
    return f"{versions[0]} … {versions[-1]}"
