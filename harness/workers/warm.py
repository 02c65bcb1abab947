"""Warm the forkserver, so that every worker forked from it starts hot.

Importing this module (the forkserver preloads it) runs one scripted scenario end
to end in a throwaway directory: the openai SDK, pydantic, SQLAlchemy and respx
do their lazy first-use work once here instead of once per worker. Everything it
starts is stopped again before the forkserver forks: no threads, pools or respx
patches survive into a child. One shared TLS context does (harness/workers/tls.py).
"""

from __future__ import annotations

import gc

from killpoint.adapters.registry import warm_loaded
from killpoint.workers.tls import share_tls_context


def warm() -> None:
    share_tls_context()
    warm_loaded()
    # Everything loaded so far lives as long as the forkserver: keep the collector from
    # walking (and copy-on-write touching) it again in every forked worker. No collect()
    # first: the garbage it would free would leave holes that every child's allocations
    # fill, copying the page each time (killpoint.workers.forkserver.gc_off).
    gc.freeze()


warm()
