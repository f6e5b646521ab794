"""``{% schema_shares shown %}``: the share of each schema id among the records of a messages page (a small table,
drawn only when a record of the page names a schema id); console/present/schema_choices.py counts them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from console.present.messages import ShownMessage
from console.present.schema_choices import schema_shares as count_shares

register = template.Library()


@register.inclusion_tag("messages/_schema_shares.html")
def schema_shares(cluster: str, shown: Iterable[ShownMessage]) -> dict[str, Any]:
    return {"shares": count_shares(cluster, shown)}
