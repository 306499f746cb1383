"""Date formats per language (FORMAT_MODULE_PATH): where Django's own read badly to travellers."""
