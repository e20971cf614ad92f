"""What a check reports: a `Finding` (severity, code, subject, and a message that says how to fix it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal as _OneOf

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """One problem. `subject` is what it is about (an IRI, or the shared name for shared-alias);
    `message` says what is wrong and how to fix it."""

    severity: _OneOf["error", "warning"]
    code: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.code}: {self.message}"

    def to_json(self) -> dict:
        return asdict(self)
