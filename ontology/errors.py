"""One exception tree for kgrag (kept at the bottom layer so the ontology loader can raise into it; everyone else imports it as `kg.errors`): every failure a user can cause is a `KgError` with an HTTP status.

    KgError (500)
    ├── InputError (400)            bad request data, bad file contents
    │   ├── RelationTableError      relations.csv problems, one line each
    │   ├── OntologyFormatError     a file rdflib cannot read faithfully (OWL/XML, Manchester, ...)
    │   └── QuestionSetError        a malformed questions.jsonl line
    ├── AuthError (401)             missing or wrong bearer token
    ├── NotFoundError (404)         unknown entity, document or knowledge base
    ├── ConflictError (409)         a write that would take over what another owns (an API post naming a file's document)
    ├── TooLargeError (413)         a request body or document over its size limit
    ├── BusyError (503)             another process holds the knowledge base's write lock
    ├── StorageError (507)          the data dir's disk is full: the write was not made
    └── ConfigError (500)           a setting that cannot work (bad data dir, empty token, ...)

The API turns any of them into `{"error": {"type", "message"}}` with `status`; the CLI prints
`error: <message>` and exits with `exit_code`.
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "BusyError",
    "ConfigError",
    "ConflictError",
    "InputError",
    "KgError",
    "NotFoundError",
    "OntologyFormatError",
    "QuestionSetError",
    "RelationTableError",
    "StorageError",
    "TooLargeError",
]


class KgError(Exception):
    status: int = 500
    exit_code: int = 1

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        # Itemised details (e.g. one line per bad CSV row) kept apart from the headline.
        self.problems: list[str] = list(problems or [])

    def __str__(self) -> str:
        if not self.problems:
            return self.message
        return self.message + "\n" + "\n".join(f"  {p}" for p in self.problems)

    def to_json(self) -> dict:
        body: dict = {"type": type(self).__name__, "message": self.message}
        if self.problems:
            body["problems"] = self.problems
        return {"error": body}


class InputError(KgError):
    status = 400
    exit_code = 2


class RelationTableError(InputError):
    pass


class OntologyFormatError(InputError):
    pass


class QuestionSetError(InputError):
    pass


class AuthError(KgError):
    status = 401


class NotFoundError(KgError):
    status = 404


class ConflictError(KgError):
    status = 409


class TooLargeError(InputError):
    status = 413


class BusyError(KgError):
    """Another writer kept the write lock past the wait; `retry_after` seconds is a fair next try."""

    status = 503
    exit_code = 75  # EX_TEMPFAIL: try again later

    def __init__(self, message: str, *, retry_after: int = 5, problems: list[str] | None = None) -> None:
        super().__init__(message, problems=problems)
        self.retry_after = retry_after


class StorageError(KgError):
    """The disk of the data dir (or of the SQLite catalog) is full or over quota: the write was rolled back."""

    status = 507  # Insufficient Storage
    exit_code = 74  # EX_IOERR


class ConfigError(KgError):
    status = 500
