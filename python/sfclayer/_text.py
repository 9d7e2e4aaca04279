"""Small text helpers shared by the command line and the pictures."""


def human_bytes(n):
    """A byte count for people: ``512 B``, ``1.5 KiB``, ... ``3.0 TiB``."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
