"""The certification catalog as data: one folder per entry plus shared fragments under ``_lib``."""
