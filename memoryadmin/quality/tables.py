"""The quality app's table names, read by the models and the SQL constants alike."""

QUALITY_SAMPLE = "quality_sample"
QUALITY_SAMPLE_ITEM = "quality_sample_item"
