"""The installed `killpoint` script's first step: nothing but the standard library
before a Ctrl-C has somewhere quiet to land.

Importing the command (rich, the registry, every subcommand) takes a noticeable moment;
a Ctrl-C in it would otherwise print the traceback of whichever import it cut short.
"""

from __future__ import annotations

import sys

from killpoint.cli.exit_codes import interrupted_status


def entry() -> None:
    try:
        from killpoint.cli.main import entry as run
    except KeyboardInterrupt:
        sys.stderr.write("killpoint: interrupted while starting; nothing ran\n")
        sys.exit(interrupted_status(None))
    run()
