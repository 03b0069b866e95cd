"""Build ruamel's round-trip document (CommentedMap / CommentedSeq with the line and column of
every key and item) as fast as the installed ruamel allows.

ruamel's round-trip loader is pure Python end to end: about 400 function calls per value, so
a 20,000-value document (within the bounds of gpuplat/spec/guard.py) costs seconds. libyaml's
C parser and composer (ruamel's `_ruamel_yaml`) build the same nodes, with the same marks, in
a fraction of that; ruamel's own round-trip constructor and YAML 1.2 resolver then build the
document from them, so values, merge keys and duplicate-key errors are exactly ruamel's.

libyaml parses YAML 1.1 and words its errors its own way, so whenever it fails, for any
reason, the pure loader reads the text again and has the last word (its error messages and
positions are the ones users see). The pure loader uses ruamel's plain scanner and parser:
the round-trip ones only add comment gathering, which copies a long comment once per
character (quadratic: a 256 KB comment line costs seconds); positions do not depend on it.
"""

from __future__ import annotations

import importlib
import warnings
from functools import cache
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.parser import Parser
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scanner import Scanner

_ODD_BREAKS = ("\x85", "\u2028", "\u2029")


@cache
def _c_loader() -> Any:
    """A loader class on libyaml's parser and composer, or None when libyaml is absent."""
    try:
        binding: Any = importlib.import_module("_ruamel_yaml")
    except ImportError:
        return None

    class _Loader(binding.CParser, RoundTripConstructor, VersionedResolver):  # type: ignore[misc]
        def __init__(self, text: str) -> None:
            binding.CParser.__init__(self, text)
            constructor: Any = RoundTripConstructor  # ruamel's __init__ signatures are untyped
            resolver: Any = VersionedResolver
            constructor.__init__(self, loader=self)
            resolver.__init__(self, loader=self)
            # ruamel's constructor reaches the composer and resolver through the loader.
            self._composer = self
            self._resolver = self
            self.comment_handling = None
            # ruamel looks the YAML version up for every scalar, through two caught
            # AttributeErrors (this loader has no pure scanner to ask): a sixth of the load.
            # Here it cannot change within a document, so the table is looked up once.
            self._implicit_resolvers = resolver.versioned_resolver.fget(self)

        @property
        def versioned_resolver(self) -> Any:
            return self._implicit_resolvers

    return _Loader


def editor_lines(text: str) -> bool:
    """Whether libyaml counts the lines of `text` as editors do. It ends a line at U+0085,
    U+2028 and U+2029 too (YAML 1.1's breaks): one NEL in a comment would move every later
    position a line down. ruamel's pure reader counts LF and CR only, like an editor."""
    return not any(c in text for c in _ODD_BREAKS)


def _fast(text: str) -> tuple[bool, Any]:
    loader_class = _c_loader()
    if loader_class is None or not editor_lines(text):
        return False, None
    try:
        loader: Any = loader_class(text)
        try:
            return True, loader.get_single_data()
        finally:
            loader.dispose()
    except Exception:  # libyaml refuses: the pure loader decides and reports
        return False, None


def load_round_trip(text: str) -> Any:
    """The round-trip document of `text`; raises ruamel's YAMLError (with marks) as the
    round-trip loader does. ruamel's ReusedAnchorWarning is silenced: the event scan reports
    a reused anchor as a diagnostic."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done, root = _fast(text)
        if done:
            return root
        yaml: Any = YAML(typ="rt")
        yaml.Scanner, yaml.Parser = Scanner, Parser
        return yaml.load(text)
