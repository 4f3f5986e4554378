"""Sketch to pixels: the HTML harness, the Chromium browser pool and pixel metrics. Knows nothing of rewards."""

from renderers.batch import render_many
from renderers.browsers import BrowserPool, RendererUnavailable


__all__ = ["BrowserPool", "RendererUnavailable", "render_many"]
