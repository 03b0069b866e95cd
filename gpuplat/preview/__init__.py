"""Preview: record what the Pulumi program would register, offline (see engine.py).

Importing this package does not import pulumi; a recording does.
"""

from .engine import (
    DuplicateUrnError,
    RecordedResource,
    RecordingError,
    UnsupportedFeatureError,
    record_main,
    record_program,
)

__all__ = [
    "DuplicateUrnError",
    "RecordedResource",
    "RecordingError",
    "UnsupportedFeatureError",
    "record_main",
    "record_program",
]
