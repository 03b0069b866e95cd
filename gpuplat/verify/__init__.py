# pyright: strict
"""`gpuplat verify`: prove that each tenant's job can reach a GPU, from what the platform emits.

Pure functions over recorded resources (the preview's plain dicts), the model and the plan;
Helm releases are rendered from a chart directory the user gives (render.py). The recording itself is
the preview engine's, imported only by the command (gpuplat/commands/verify.py).
"""

from __future__ import annotations

from .journeys import journey_targets, verify
from .output import render_json, render_text
from .render import NO_CHARTS, ChartDirectory, RenderError, RenderUnavailable, render_release
from .types import STEP_ORDER, Journey, Step

__all__ = [
    "NO_CHARTS",
    "STEP_ORDER",
    "ChartDirectory",
    "Journey",
    "RenderError",
    "RenderUnavailable",
    "Step",
    "journey_targets",
    "render_json",
    "render_release",
    "render_text",
    "verify",
]
