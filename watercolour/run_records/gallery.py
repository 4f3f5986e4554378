"""A static, self-contained HTML gallery of paintings: one `index.html`, images by relative path, no network.

The item data is embedded as JSON and drawn by a small inline script with `textContent`, so a sketch holding
`</script>` or markup is shown as text and cannot break or script the page. Used by `watercolour demo` for the
seed pool and by training for per-run and cross-run galleries.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from pydantic import BaseModel, Field


class GalleryItem(BaseModel):
    """One painting on the page."""

    image: str | None = Field(description="Path of the PNG relative to the gallery folder; None: nothing rendered.")
    title: str
    sketch: str = Field(default="", description="The sketch source, shown on demand.")
    reward: float | None = None
    parts: dict[str, float | None] = Field(default_factory=dict, description="Reward parts by name.")
    step: int | None = None
    preset: str | None = Field(default=None, description="Run preset or run tag; the page filters on it.")
    tier: str | None = None
    violations: list[str] = Field(default_factory=list, description="Gate violation codes, if it failed.")
    note: str = Field(default="", description="Text shown under the painting (a repaint turn's observation).")
    turns: list[GalleryItem] = Field(
        default_factory=list, description="A repaint episode's paintings in order, shown side by side."
    )


def embed_json(data: object) -> str:
    """JSON that is safe inside a <script> element: no '<', '>' or '&' survives as a literal character."""
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def write_gallery(items: list[GalleryItem], out_dir: Path, title: str) -> Path:
    """Write `out_dir/index.html` showing `items`; returns the page's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    page = PAGE.replace("__TITLE__", html.escape(title)).replace(
        "__ITEMS__", embed_json([item.model_dump() for item in items])
    )
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; background: #faf7f0; color: #2b2623; }
  h1 { font-weight: 500; margin: 0 0 1rem; }
  .controls { display: flex; gap: .6rem; align-items: center; margin-bottom: 1rem; flex-wrap: wrap; }
  button, select { font: inherit; padding: .25rem .6rem; }
  #grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 1rem;
          align-items: start; }
  .episode { grid-column: span 2; }
  .turns { display: flex; gap: .5rem; }
  .turns > .card { flex: 1; border-style: dashed; }
  .note { white-space: pre-wrap; font-size: 11px; color: #4d463f; }
  .card { min-width: 0; background: #fff; border: 1px solid #e4ddd0; border-radius: 6px; padding: .6rem; }
  .card img { width: 100%; aspect-ratio: 1; object-fit: contain; display: block; background: #f4eee2; }
  .card .unrendered { width: 100%; aspect-ratio: 1; display: flex; align-items: center; justify-content: center;
                      background: #eee8dc; color: #8a8070; }
  .title { font-weight: 600; margin: .4rem 0 .2rem; }
  .meta { color: #6b625a; font-size: 12px; }
  .violations { color: #a3262a; font-size: 12px; }
  pre { max-height: 320px; overflow: auto; font-size: 11px; background: #f6f3ec; padding: .4rem; }
</style>
</head>
<body>
<h1>__TITLE__</h1>
<div class="controls">
  <button id="sort-reward" type="button">Sort by reward</button>
  <button id="sort-step" type="button">Sort by step</button>
  <label>Preset <select id="preset"><option value="">all</option></select></label>
  <span id="count" class="meta"></span>
</div>
<div id="grid"></div>
<script id="items" type="application/json">__ITEMS__</script>
<script>
"use strict";
const items = JSON.parse(document.getElementById("items").textContent);
const grid = document.getElementById("grid");
const presetSelect = document.getElementById("preset");
let order = items.slice();

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}
function fmt(x) { return x === null || x === undefined ? "-" : Number(x).toFixed(3); }

function card(item) {
  const box = el("div", item.turns.length ? "card episode" : "card");
  box.dataset.preset = item.preset || "";
  if (item.turns.length) {
    const row = el("div", "turns");
    row.append(...item.turns.map(card));
    box.append(row);
  } else if (item.image) {
    const img = el("img");
    img.src = item.image;
    img.alt = item.title;
    img.loading = "lazy";
    box.append(img);
  } else {
    box.append(el("div", "unrendered", "not rendered"));
  }
  box.append(el("div", "title", item.title));
  const facts = [];
  if (item.reward !== null) facts.push("reward " + fmt(item.reward));
  if (item.step !== null) facts.push("step " + item.step);
  if (item.preset) facts.push(item.preset);
  if (item.tier) facts.push("tier " + item.tier);
  box.append(el("div", "meta reward", facts.join(" \\u00b7 ")));
  const parts = Object.entries(item.parts).map(([k, v]) => k + " " + fmt(v));
  if (parts.length) box.append(el("div", "meta parts", parts.join(" \\u00b7 ")));
  if (item.violations.length) box.append(el("div", "violations", item.violations.join(", ")));
  if (item.note) {
    const details = el("details");
    details.append(el("summary", "", "observation"), el("div", "note", item.note));
    box.append(details);
  }
  if (item.sketch) {
    const details = el("details");
    details.append(el("summary", "", "sketch"), el("pre", "", item.sketch));
    box.append(details);
  }
  return box;
}

function render() {
  const preset = presetSelect.value;
  const shown = order.filter((item) => !preset || item.preset === preset);
  grid.replaceChildren(...shown.map(card));
  document.getElementById("count").textContent = shown.length + " of " + items.length;
}

// Highest reward first, latest step first; items without the key go last.
function sortBy(key) {
  order = items.slice().sort((a, b) => (b[key] ?? -Infinity) - (a[key] ?? -Infinity));
  render();
}

for (const preset of [...new Set(items.map((item) => item.preset).filter(Boolean))].sort()) {
  presetSelect.append(new Option(preset, preset));
}
document.getElementById("sort-reward").addEventListener("click", () => sortBy("reward"));
document.getElementById("sort-step").addEventListener("click", () => sortBy("step"));
presetSelect.addEventListener("change", render);
render();
</script>
</body>
</html>
"""
