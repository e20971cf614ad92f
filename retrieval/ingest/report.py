"""What an ingest, a deletion or a sync changed: documents new / updated / unchanged, chunks added / unchanged / retired / removed, files skipped."""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.ingest.readers import Skipped

__all__ = ["IngestReport"]


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0  # documents that got a new version
    unchanged: int = 0
    chunks_indexed: int = 0  # children new to their document: indexed and linked
    chunks_removed: int = 0  # children deleted from the index (deleted documents, --sync)
    seconds: float = 0.0
    doc_ids: list[str] = field(default_factory=list)
    chunks_unchanged: int = 0  # children a new version carried over: not touched
    chunks_retired: int = 0  # children of the old version that the new one dropped (kept for --as-of)
    deleted: list[str] = field(default_factory=list)  # documents removed (--sync: their files are gone)
    versions_removed: int = 0  # versions removed by --sync (their files are gone)
    versions_replaced: int = 0  # versions a new one from the same file replaced on the day they began (in force on no day)
    chunks_dropped: int = 0  # their children no other version holds: deleted from the index
    skipped: list[Skipped] = field(default_factory=list)  # files not ingested, with the reason
    moved: list[tuple[str, str]] = field(default_factory=list)  # (old, new) path of documents whose file moved
    ignored: int = 0  # files and folders the folders' .kgignore / .gitignore left out (not read)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if not (self.added or self.updated or self.deleted or self.versions_removed or self.moved):
            text = f"nothing changed: {self.unchanged} document(s) already up to date"
        else:
            text = (
                f"{self.added} new, {self.updated} updated, {self.unchanged} unchanged document(s); "
                f"{self.chunks_indexed} chunks indexed in {self.seconds:.1f} s"
                f" (chunks: {self.chunks_indexed} added, {self.chunks_unchanged} unchanged, {self.chunks_retired} retired)"
            )
            if self.versions_replaced:
                text += (f"; {self.versions_replaced} earlier version(s) of the same day replaced"
                         f" ({self.chunks_dropped} chunks dropped: no date showed them)")
            if self.deleted or self.versions_removed:
                text += (f"; removed {self.versions_removed} version(s) whose files are gone"
                         f" ({len(self.deleted)} whole document(s), {self.chunks_removed} chunks)")
        if self.moved:
            text += f"; {len(self.moved)} moved (the same document at a new path: its versions kept)"
        if self.skipped:
            text += f"; {len(self.skipped)} file(s) skipped"
        if self.ignored:
            text += f"; {self.ignored} file(s)/folder(s) ignored (.kgignore, .gitignore, node_modules)"
        return text

    def to_json(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k not in ("doc_ids", "skipped")}
        data["skipped"] = [{"path": s.path, "reason": s.reason} for s in self.skipped]
        data["moved"] = [{"from": old, "to": new} for old, new in self.moved]
        return data
