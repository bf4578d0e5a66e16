"""What every package may import: ``ConfigError`` (``common/errors.py``)."""
