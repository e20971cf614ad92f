"""A chunk's fields in, its postings in the writer's pool and its stored fields and lengths in the segment out: whoosh's
`SegmentWriter.add_document` for kgrag's schema, without whoosh's per-token layers.

whoosh reads a text field through its analyzer one `Token` at a time, counts each term in Python
(`Frequency.word_values`), then yields it through two more generators and checks each posting as it
enters the pool. kgrag's analyzers already hand back the field's terms as a list (`KgAnalyzer.terms`),
so the counting is `Counter`'s (in C) and the postings go into the pool as whoosh's `PostingPool.add`
puts them (the same size accounting, so the pool spills at the same point). The postings, lengths and
stored values are whoosh's own, so the segment is the same, byte for byte (tests/test_whoosh_adding.py).
Other fields (the ids) are indexed through whoosh's `field.index`; a document whoosh would treat otherwise (a boost,
a custom stored value, a field with vectors or spelling) goes through whoosh's `add_document` whole.
"""

from __future__ import annotations

from collections import Counter

from whoosh.formats import Frequency
from whoosh.system import pack_uint

from retrieval.index.analysis import KgAnalyzer

__all__ = ["add_document"]


def add_document(writer, fields: dict) -> None:
    """`writer.add_document(**fields)`, the text fields of kgrag's analyzers counted at once."""
    schema = writer.schema
    if any(name.startswith("_") or (name in schema and _special(schema[name])) for name in fields):
        writer.add_document(**fields)  # a boost, a custom stored value, spelling or vectors: whoosh's way
        return
    writer._check_state()
    perdoc, docnum = writer.perdocwriter, writer.docnum
    names = sorted(fields)
    writer._check_fields(schema, names)
    perdoc.start_doc(docnum)
    try:
        for name in names:
            value = fields[name]
            if value is None:
                continue
            field = schema[name]
            length = 0
            if field.indexed:
                if _countable(field):
                    length = _add_counted(writer.pool, name, field, value, docnum)
                else:
                    length = _add_whoosh(writer.pool, name, field, value, docnum)
            perdoc.add_field(name, field, value if field.stored else None, length)
            column = field.column_type
            if column:
                perdoc.add_column_value(name, column, field.to_column_value(value))
    except Exception:
        perdoc.cancel_doc()
        raise
    perdoc.finish_doc()
    writer._added = True
    writer.docnum += 1


def _special(field) -> bool:
    return bool(field.separate_spelling() or field.vector)


def _countable(field) -> bool:
    """A text field of one of kgrag's analyzers, term frequencies only, no boost: its postings are (term, count)."""
    fmt = field.format
    return type(fmt) is Frequency and fmt.field_boost == 1.0 and isinstance(field.analyzer, KgAnalyzer)


def _add_counted(pool, name: str, field, value, docnum: int) -> int:
    if not isinstance(value, str):
        raise ValueError(f"field {name!r}: text expected, got {type(value).__name__}")
    counts = Counter(term for term, _ in field.analyzer.terms(value))
    items = [(term.encode("utf-8"), freq, float(freq), pack_uint(freq)) for term, freq in counts.items()]
    _into_pool(pool, name, items, docnum)
    return sum(counts.values()) if field.scorable else 0


def _add_whoosh(pool, name: str, field, value, docnum: int) -> int:
    items = list(field.index(value))
    _into_pool(pool, name, items, docnum)
    return sum(freq for _, freq, _, _ in items) if field.scorable else 0


def _into_pool(pool, name: str, items: list, docnum: int) -> None:
    """`PostingPool.add` for each (term bytes, frequency, weight, value bytes): its size counted by whoosh's formula,
    the pool spilled to a sorted run when that passes its limit, then the posting appended."""
    if not items:
        return
    pool.fieldnames.add(name)
    fixed = 28 + 4 * 5 + 21 + len(name) + 26 + 18 + 16 + 21  # whoosh's estimate of a posting's bytes, less its text
    for tbytes, _, weight, vbytes in items:
        pool.currentsize += fixed + len(tbytes) * 2 + len(vbytes or "")
        if pool.currentsize > pool.limit:
            pool.save()
        pool.current.append((name, tbytes, docnum, weight, vbytes))
