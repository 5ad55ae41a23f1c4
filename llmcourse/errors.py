"""Errors that tell the user what to change."""

from __future__ import annotations

__all__ = ["InputError", "UnknownNameError"]


class InputError(ValueError):
    """A value given to ``llmcourse`` cannot be used; the message says how to fix it."""


class UnknownNameError(KeyError):
    """A catalog name that does not exist; the message suggests the closest names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
