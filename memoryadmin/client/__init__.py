"""What an agent host imports. Nothing here needs Django or its settings."""

from .types import MemoryCategory, MemoryFact

__all__ = ["MemoryCategory", "MemoryFact"]
