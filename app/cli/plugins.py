"""``plugins``: the option plugins this installation loads, to check that an entry point is picked up."""

from __future__ import annotations

import click


@click.command()
def plugins() -> int:
    """List the loaded option plugins: each option, its plugin and version, the SDK versions it is written
    for and the assumptions its kernel requires (``seeds check`` refuses seeds without them)."""
    # imported here: loading the plugins is the slow part, and only this command needs them
    from app.host.compatibility import SDK_VERSION
    from app.host.manager import create_option_host

    for option in create_option_host().options.values():
        click.echo(
            f"{option.spec.key:24} {option.plugin_name} {option.plugin_version}  {option.spec.name}; "
            f"SDK {option.sdk}, {len(option.requires)} assumptions required"
        )
    click.echo(f"SDK {SDK_VERSION}")
    return 0
