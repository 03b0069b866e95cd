"""gpuplat: a declarative compiler for GPU AI platforms (spec -> validate -> plan -> Pulumi)."""

__version__ = "0.1.0"
