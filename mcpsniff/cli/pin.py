"""``mcpsniff pin``: write the lock file of the servers in some traces."""

from __future__ import annotations

from pathlib import Path

import click

from mcpsniff.cli.options import output_option
from mcpsniff.cli.shared import fail, warner
from mcpsniff.guard.inventory import InventoryError, read_inventory
from mcpsniff.guard.lockfile import lock_data, read_lock, write_lock
from mcpsniff.guard.stored import StoredError, listed_from_stored


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@output_option(
    "The lock file to write (replaced when it exists: review the diff).",
    default=Path("mcpsniff.lock"),
)
def pin(traces: tuple[Path, ...], output: Path) -> None:
    """Pin the definitions each server of TRACE... offered in its last session.

    The lock file is stable JSON, one entry a server, with each tool, prompt,
    resource and template's fingerprint and definition; commit it, and gate CI
    on mcpsniff check TRACE --pins mcpsniff.lock.
    """
    try:
        inventory = read_inventory(traces, warn=warner("pin"))
    except InventoryError as exc:
        fail("pin", str(exc))
    data = lock_data(inventory)
    if not data["servers"]:
        fail("pin", "no session in these traces listed tools, prompts or resources: nothing to pin")
    before = None
    if output.exists():
        try:
            before = read_lock(output)
        except StoredError as exc:
            fail("pin", f"{exc} (not replaced)")
    try:
        write_lock(output, data)
    except StoredError as exc:
        fail("pin", str(exc))
    for identity, entry in data["servers"].items():
        count = len(entry["definitions"])
        state = "pinned"
        if before is not None and identity in before.servers:
            now = listed_from_stored(str(output), entry["definitions"])
            old = before.servers[identity]
            same = {k: v.fingerprint for k, v in old.items()} == {
                k: v.fingerprint for k, v in now.items()
            }
            state = "unchanged" if same else "updated"
        click.echo(f"{state}: {identity} ({count} definition(s), offer {entry['offer']})")
    click.echo(f"wrote {output}")
