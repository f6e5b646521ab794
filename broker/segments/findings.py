"""What a reader found wrong in a file: one ``Finding`` per piece of damage, with where it is and what
was expected there.

Readers in this package never raise on a damaged file. They append findings to a list the caller
gives them and carry on where the format lets them, so a page or a CLI can show everything that is
wrong with a segment at once, next to everything that could still be read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One piece of damage (or one surprise) in a file.

    ``position`` is the byte position in ``file`` where it was found (``None`` when it has no single
    place, such as a file that cannot be opened). ``kind`` is a short machine name for grouping and
    tests ("crc_mismatch", "truncated", "size_past_end", "bad_record", ...); ``message`` is a sentence
    for a person saying what was found and what was expected. ``expected`` and ``found`` repeat the two
    values, as text, when there are two values to compare.
    """

    file: str
    position: int | None
    kind: str
    message: str
    expected: str | None = None
    found: str | None = None

    def as_dict(self) -> dict[str, str | int | None]:
        """The finding as a plain dict (for JSON output and templates)."""
        return {
            "file": self.file,
            "position": self.position,
            "kind": self.kind,
            "message": self.message,
            "expected": self.expected,
            "found": self.found,
        }

    def __str__(self) -> str:
        where = f"{self.file}" if self.position is None else f"{self.file} at byte {self.position}"
        return f"{where}: {self.message}"
