"""The served snapshot, out of the cyclic garbage collector's sight.

A knowledge snapshot is ~200,000 long-lived Python objects (rows, ranges, compiled kernels), and every
full collection of CPython's cyclic collector walks them all again — about 100 ms each on this
project's machines, paid by whichever request happened to allocate the object that triggered it (a
10,000-profile batch triggers several). ``settle`` runs once per snapshot loaded: it gives the objects
frozen for the previous snapshot back to the collector, collects (so the old snapshot's cycles are
freed), and freezes what is left (``gc.freeze``: the objects alive now — the new snapshot, the app,
the modules — move to a permanent generation that collections skip). Objects made afterwards are
collected as usual; reference counting frees frozen objects that lose their last reference as
always. ``GC_FREEZE=off`` turns it off.

``tune`` sets how many container objects may be allocated between two collections of the youngest
generation (``GC_YOUNG_THRESHOLD``, 10,000 instead of Python's 700). A 10,000-profile batch allocates
some 150,000 of them (its decoded body, request models, profiles): at 700 it triggered ~195 young,
~18 middle and one or two full collections, 31–53 ms of its 245–285 ms in process (every collection
timed with ``gc.callbacks``); at 10,000, 12 young ones and one middle one, 8–21 ms, and the batch
took 210–250 ms. Each young collection walks at most that many objects (a millisecond or so). The
setting is the process's: it applies to every thread.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)


def settle() -> float:
    """Collect, then freeze the survivors; the seconds it took (the event loop waits that long, once
    per knowledge version)."""
    started = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    seconds = time.perf_counter() - started
    log.debug("heap settled in %.1f ms: %d objects frozen", seconds * 1000, gc.get_freeze_count())
    return seconds


def tune(young: int) -> None:
    """The youngest generation's threshold (``GC_YOUNG_THRESHOLD``); the older generations' as they are."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old)
