"""`python -m killpoint.powerloss HELPER_FD`: the mount helper (server.helper_main)."""

from __future__ import annotations

import sys

from killpoint.powerloss.server import helper_main

if __name__ == "__main__":
    helper_main(int(sys.argv[1]))
