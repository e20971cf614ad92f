"""kgrag's knowledge graph: the model, the relation-table import, the RDF store and the `kg` CLI.

Kept import-light on purpose: `kg --help` must not load spaCy, rdflib or litellm.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
