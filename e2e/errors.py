"""The suite's one error type, in a module of its own so that the modules `e2e.cluster` uses
(the Go module cache, upstream YAML) can raise it without importing the cluster."""

from __future__ import annotations


class E2EError(Exception):
    """A step of the suite could not be carried out; the message says what the engine said."""
