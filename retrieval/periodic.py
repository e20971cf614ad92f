"""A long-running process's background chores (following other processes' commits, following the SPARQL store,
embedding new chunks): a daemon thread calling `round()` every `interval` seconds, or sooner when poked, until
`stop()`."""

from __future__ import annotations

import threading

__all__ = ["Periodic"]


class Periodic:
    """Subclasses give `round()` (its exceptions are theirs to catch: one would end the thread; `rounds` and `errors`
    are theirs to count) and may give `finish()`, run in the thread on its way out."""

    name = "kg-periodic"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.rounds = self.errors = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def poke(self) -> None:
        """Run the next round now, not at the end of the interval."""
        self._wake.set()

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        self._wake.set()
        self.thread.join(timeout=timeout)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._wake.wait(self.interval)
                self._wake.clear()
                if self._stop.is_set():
                    return
                self.round()
        finally:
            self.finish()

    def round(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass
