"""What every command shares: the data-folder option and the one-line failure."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import NoReturn

import click

DATA_OPTION = click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="data",
    show_default=True,
    envvar="DASHBOARD_DATA",
    show_envvar=True,
    help="Data folder holding runs/.",
)


def fail(message: str, debug: bool = False) -> NoReturn:
    """Print one line on stderr (the traceback first under --debug) and exit 1."""
    if debug:
        traceback.print_exc()
    click.echo(message, err=True)
    sys.exit(1)
