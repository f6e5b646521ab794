"""Every change the console makes to a schema registry, as the pages and the API both make it: checked, run and
audited through console.access.perform. Operators register schemas and set compatibility levels (global or a
subject's own); admins delete subjects and versions, softly or for good. The audit keeps a registered schema's
type, size and references, not its text."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import HttpRequest

from broker.schemas.model import SchemaReference
from broker.schemas.registry import Registry, check_level, check_type
from console.access import perform


def _refs(references: Sequence[SchemaReference]) -> list[str]:
    return [f"{r.name} -> {r.subject} v{r.version}" for r in references]


def register(
    request: HttpRequest,
    cluster: str,
    registry: Registry,
    subject: str,
    text: str,
    schema_type: str,
    references: Sequence[SchemaReference] = (),
) -> tuple[int, int | None]:
    """Register a schema under ``subject``: its id and version (409 from the registry when incompatible)."""
    kind = check_type(schema_type)
    params = {"schema_type": kind, "schema_bytes": len(text.encode()), "references": _refs(references)}
    return perform(
        request,
        "schemas.register",
        cluster,
        subject,
        params,
        lambda: registry.register(subject, text, kind, references),
        lambda found: f"id {found[0]}, version {found[1]}",
    )


def set_compatibility(
    request: HttpRequest, cluster: str, registry: Registry, level: str | None, subject: str | None = None
) -> str | None:
    """Set the global level (``subject`` None) or a subject's own; a blank level for a subject removes its own
    level, so it follows the global one again. The level set (None: removed). A level that is not one is
    refused (400) before anything is sent, and audited as failed."""
    target = subject if subject is not None else "(global)"

    def change() -> str | None:
        if not level and subject is not None:
            registry.delete_compatibility(subject)
            return None
        return registry.set_compatibility(check_level(level or ""), subject)

    return perform(
        request,
        "schemas.compatibility",
        cluster,
        target,
        {"compatibility": level or None},
        change,
        lambda found: f"compatibility {found}" if found else "follows the global level",
    )


def delete_subject(
    request: HttpRequest, cluster: str, registry: Registry, subject: str, permanent: bool = False
) -> list[int]:
    """Soft-delete a subject (or delete it for good); the versions deleted."""
    return perform(
        request,
        "schemas.delete",
        cluster,
        subject,
        {"permanent": permanent},
        lambda: registry.delete_subject(subject, permanent),
        lambda found: f"{'permanently ' if permanent else ''}deleted versions {', '.join(map(str, found)) or 'none'}",
    )


def delete_version(
    request: HttpRequest, cluster: str, registry: Registry, subject: str, version: int, permanent: bool = False
) -> int:
    return perform(
        request,
        "schemas.delete",
        cluster,
        f"{subject} v{version}",
        {"version": version, "permanent": permanent},
        lambda: registry.delete_version(subject, version, permanent),
        lambda found: f"{'permanently ' if permanent else ''}deleted version {found}",
    )
