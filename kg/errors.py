"""kgrag's exception tree, as the rest of the code imports it (defined in `ontology.errors`, the lowest layer, so the ontology loader needs nothing from above)."""

from ontology.errors import (
    AuthError,
    BusyError,
    ConfigError,
    ConflictError,
    InputError,
    KgError,
    NotFoundError,
    OntologyFormatError,
    QuestionSetError,
    RelationTableError,
    StorageError,
    TooLargeError,
)

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
