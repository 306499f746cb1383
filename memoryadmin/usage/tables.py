"""The use receipts' table name, read by the model and the SQL constants alike."""

MEMORY_USE = "memory_use"
