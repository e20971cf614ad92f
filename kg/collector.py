"""Python's cyclic garbage collector paused around work that builds millions of small, long-lived objects.

The collector runs after every few hundred new container objects and, now and then, walks every object
alive: while a 100k-row `kg import` plans ~290k triples, writes graph.ttl and builds the graph view, it
walked the growing heap again and again (~4 s of ~25 s CPU, issue 25). What is built there holds no
reference cycles worth collecting early; whatever cycles it leaves are collected once it is resumed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Nested uses are fine: the collector runs again when the outermost one ends (if it ran before)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
