"""Imported first by the forkserver: Ctrl-C is the engine's to handle, not its workers'.

A terminal's Ctrl-C (and `kill -INT` of the campaign's process group) reaches every
process still in the engine's group: the forkserver, and a worker in the moment between
its fork and its `setsid()`. multiprocessing's forkserver ignores SIGINT only once its
loop runs, and gives each child the handler it found when the loop began: Python's
default, which raised KeyboardInterrupt in such a worker and printed a traceback on the
campaign's stderr. Ignored from here on, it stays ignored in every fork until the worker
has a session of its own (killpoint.workers.worker gives the runtime the default back there);
the engine kills its workers itself.
"""

from __future__ import annotations

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
