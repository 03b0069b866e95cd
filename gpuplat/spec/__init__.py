"""Loading specs with positions and merging a stack's overlay onto the base."""

from gpuplat.spec.loader import SourceDoc, load_file, parse_text
from gpuplat.spec.merge import merge_overlay
from gpuplat.spec.positions import Pos

__all__ = ["Pos", "SourceDoc", "load_file", "merge_overlay", "parse_text"]
