"""The process's long-lived objects, out of the cyclic garbage collector's sight; knowledge snapshots
within it.

Once the app is built the process holds some 200,000 long-lived Python objects (modules, classes,
functions, the app and its routes), and every full collection of CPython's cyclic collector walked
them all again — about 100 ms each on this project's machines, paid by whichever request happened to
allocate the object that triggered it (a 10,000-profile batch triggers several). ``settle`` runs once,
at start-up before the first knowledge snapshot is loaded: it collects, then freezes what is left
(``gc.freeze``: the objects alive now move to a permanent generation that collections skip). Objects
made afterwards are collected as usual; reference counting frees frozen objects that lose their last
reference as always. ``GC_FREEZE=off`` turns it off.

A snapshot is not frozen: it is a few thousand tracked objects with its compiled kernels (1,036 as
loaded from the reference seeds), so collections walk it cheaply, and a replaced snapshot — cyclic
(its kernels point back at it) — is freed by the collector like any garbage. Freezing each snapshot
at its load instead meant giving the frozen heap back to the collector at every swap (``gc.unfreeze``,
a full collection of the whole heap, ``gc.freeze``): 95–175 ms with the event loop stopped, in any
thread (a collection holds the GIL), measured in docs/performance.md.

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
    """Give what was frozen back, collect, then freeze the survivors; the seconds it took (the event
    loop waits that long: once, at start-up, before the first snapshot is loaded)."""
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
