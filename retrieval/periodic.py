"""A long-running process's background chores (a server following the SPARQL store, embedding new chunks): a daemon
thread calling `round()` every `interval` seconds until `stop()`."""

from __future__ import annotations

import threading

__all__ = ["Periodic"]


class Periodic:
    """A chore of the knowledge base `kb`. Subclasses give `round()` (its exceptions are theirs to catch: one would end
    the thread; `rounds` and `errors` are theirs to count) and may give `finish()`, run in the thread on its way out."""

    name = "kg-periodic"

    def __init__(self, kb, interval: float) -> None:
        self.kb, self.interval = kb, interval
        self.rounds = self.errors = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        self.thread.join(timeout=timeout)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                self.round()
        finally:
            self.finish()

    def round(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass
