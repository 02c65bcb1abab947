"""Imported first by the forkserver: the cyclic collector stays off while it preloads.

CPython's recipe for fork without exec (see `gc.freeze`): a parent that never collects
leaves no freed holes among its objects for children to fill (each fill copies a page),
and `killpoint.workers.warm`, imported last, freezes the heap so a child's collector never walks
it. Workers turn collection back on (killpoint.workers.worker), so the runtime under test runs
as it would anywhere else.
"""

from __future__ import annotations

import gc

gc.disable()
