"""``mcpsniff rules``: every rule mcpsniff checks."""

from __future__ import annotations

import click
import orjson

from mcpsniff.cli.options import format_option
from mcpsniff.core import catalog, conformance, explain, spec_links
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.core.spec_links import spec_link


@click.command()
@format_option(("text", "json"))
def rules(fmt: str) -> None:
    """List every rule mcpsniff checks, with severity, versions and spec source."""
    for rule_id in IMPLEMENTED:
        entry = catalog.get(rule_id)
        versions = _versions_label(entry.versions)
        if fmt == "json":
            click.echo(
                orjson.dumps(
                    {
                        "rule": rule_id,
                        "severity": entry.default_severity,
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
            click.echo(f"{rule_id:<28} {entry.default_severity:<8} {versions:<24} {entry.sev}")
            click.echo(f"    {spec_links.plain_source(entry)[:200]}")
    if fmt == "text":
        click.echo(f"{len(IMPLEMENTED)} rules implemented")


def _versions_label(versions: tuple[str, ...]) -> str:
    if tuple(versions) == catalog.VERSIONS:
        return "all versions"
    if len(versions) == 1:
        return versions[0]
    return f"{versions[0]} … {versions[-1]}"
