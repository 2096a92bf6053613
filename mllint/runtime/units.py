"""Byte counts for people: 1,536 -> "1.5 KiB" (binary units, as memory is sized)."""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(count: float, digits: int = 1) -> str:
    value = float(count)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{sign}{int(value)} B"
            return f"{sign}{value:.{digits}f} {unit}"
        value /= 1024
    return f"{sign}{value:.{digits}f} TiB"
