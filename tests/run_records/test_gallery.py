"""The static gallery page: safe embedding, and in real headless Chromium it loads, sorts, filters, shows code."""

from __future__ import annotations

import shutil

import pytest

from ground.reference_pool import BUNDLED_POOL
from watercolour.run_records.gallery import GalleryItem, embed_json, write_gallery


HOSTILE_SKETCH = 'function draw() { /* </script><script>document.title = "pwned"</script> */ }'


def _items() -> list[GalleryItem]:
    return [
        GalleryItem(
            image="a.png",
            title="low",
            sketch="function draw() {}",
            reward=0.2,
            step=30,
            preset="judge-led",
            parts={"gate": 1.0, "judge": None},
        ),
        GalleryItem(image="b.png", title="high", sketch=HOSTILE_SKETCH, reward=0.9, step=10, preset="hps-only"),
        GalleryItem(image="c.png", title="middle", reward=0.5, step=20, preset="judge-led", tier="love"),
        GalleryItem(image="d.png", title="failed", violations=["not_webgl"], step=40, preset="hps-only"),
    ]


def test_embedded_json_cannot_close_its_script_element():
    text = embed_json({"sketch": HOSTILE_SKETCH})
    assert "</" not in text and "<" not in text


@pytest.fixture
def gallery(tmp_path):
    png = BUNDLED_POOL / "peach_hibiscus_loose.png"
    for name in "abcd":
        shutil.copy(png, tmp_path / f"{name}.png")
    return write_gallery(_items(), tmp_path, title="Run <test> gallery")


@pytest.mark.browser
async def test_gallery_page_sorts_filters_and_shows_the_sketch(gallery):
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(gallery.as_uri())

        assert await page.title() == "Run <test> gallery"
        assert await page.locator(".card").count() == 4
        assert await page.locator(".card img").evaluate_all("imgs => imgs.every(i => i.complete && i.naturalWidth)")

        await page.click("#sort-reward")
        assert await page.locator(".card .title").all_text_contents() == ["high", "middle", "low", "failed"]
        await page.click("#sort-step")
        assert await page.locator(".card .title").all_text_contents() == ["failed", "low", "middle", "high"]

        await page.select_option("#preset", "hps-only")
        assert await page.locator(".card .title").all_text_contents() == ["failed", "high"]
        assert await page.locator(".violations").all_text_contents() == ["not_webgl"]

        high = page.locator(".card", has_text="high")
        await high.locator("summary").click()
        assert await high.locator("pre").inner_text() == HOSTILE_SKETCH
        assert await page.title() == "Run <test> gallery"
        assert errors == []
        await browser.close()
