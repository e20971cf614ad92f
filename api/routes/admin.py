"""POST /import (a relation table, ontology or synonym table as a multipart upload; token) and GET /ontology/check."""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePath

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile

from api.deps import knowledge_base, require_token
from kg.errors import InputError

router = APIRouter()

_IMPORTABLE = (".csv", ".xlsx", ".xlsm", ".ttl", ".owl", ".rdf", ".xml", ".nt", ".jsonld", ".ofn", ".omn", ".owx", ".txt")


@router.post("/import", dependencies=[Depends(require_token)])
async def import_upload(
    request: Request,
    file: UploadFile = File(..., description="relations.csv (or .xlsx), an ontology (.ttl .owl .rdf .nt) or synonyms.txt"),  # noqa: B008
    dry_run: bool = Form(False, description="Relation tables only: check and report, import nothing."),  # noqa: B008
    skip_invalid: bool = Form(False, description="Relation tables only: import the good rows, report the bad."),  # noqa: B008
    kb=Depends(knowledge_base),  # noqa: B008 - FastAPI idiom
) -> dict:
    """The same import as `kg import FILE`: all or nothing, bad rows listed as `file:line: fix` in `problems`."""
    # Only the base name is kept: it names the file in the problem lines, and a client-sent
    # path must never choose where the upload is written.
    name = PurePath((file.filename or "").replace("\\", "/")).name
    if not name or Path(name).suffix.lower() not in _IMPORTABLE:
        raise InputError(
            f"'{name or '(no file name)'}' cannot be imported: upload a relation table (.csv, .xlsx), an ontology "
            "(.ttl, .owl, .rdf, .nt) or a synonym table (.txt) with its file name"
        )
    limit = request.app.state.settings.import_max_bytes
    data = await file.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{name} is larger than {limit:,} bytes: import it with `kg import`, or raise KG_IMPORT_MAX_BYTES")
    # An upload is known by its file name: uploading the edited relations.csv (or ontology) again removes what was deleted from it.
    suffix = Path(name).suffix.lower()
    options = {} if suffix == ".txt" else {"table": f"upload:{name}"}  # a synonym table keeps no record
    if suffix in (".csv", ".xlsx", ".xlsm"):
        options |= {"dry_run": dry_run, "skip_invalid": skip_invalid}
    with tempfile.TemporaryDirectory(prefix="kg-import-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        # A sync call from an async endpoint would block the loop; the import runs in a worker thread.
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(kb.import_file, path, **options)


@router.get("/ontology/check")
def ontology_check(kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    """The `kg ontology check --json` record: errors, warnings and each finding with its fix."""
    from kg.check import check_ontology

    with kb.lock:
        findings = check_ontology(kb.graph.rdf, kb.graph.vocab)
    errors = sum(f.severity == "error" for f in findings)
    return {"errors": errors, "warnings": len(findings) - errors, "findings": [f.to_json() for f in findings]}
