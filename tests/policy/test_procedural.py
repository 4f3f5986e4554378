"""The procedural flower generator: reproducible, varied, inside the prompt's numbers, and always admitted."""

from __future__ import annotations

import re

import pytest

from ground.palettes import PALETTES, SPECIES
from ground.prompt import SUBJECTS, messages
from ground.sketch import extract_sketch
from rewards.gate import gate, static_check
from watercolour.policy.procedural import (
    COMPACT_REACH,
    HEARTS,
    MAX_SHAPES,
    ProceduralPolicy,
    compact_sketch,
    completion,
    generate_sketch,
    plan_flower,
)


SEEDS = range(200)


def shapes_painted(seed: int) -> int:
    """Filled shapes the sketch paints when it runs (loops unrolled): stem, leaves, petal passes, heart."""
    plan = plan_flower(seed)
    heart = HEARTS[SPECIES[plan.species].centre]
    return 1 + len(plan.leaves) + plan.layers * sum(count for count, _, _ in plan.rings) + heart


def test_same_seed_writes_the_same_text_and_different_seeds_do_not():
    assert generate_sketch(7) == generate_sketch(7)
    assert completion(7, "a red poppy") == completion(7, "a red poppy")
    assert len({generate_sketch(seed) for seed in range(50)}) == 50


def test_flowers_vary_in_petal_count_palette_and_species():
    plans = [plan_flower(seed) for seed in range(120)]
    assert len({plan.petal_count for plan in plans}) >= 6
    assert len({plan.palette for plan in plans}) == len(plans)
    assert {plan.species for plan in plans} == set(SPECIES)
    hibiscus = [plan_flower(seed, "a peach hibiscus") for seed in range(30)]
    assert len({plan.layers for plan in hibiscus}) >= 2
    assert len({plan.loops for plan in hibiscus}) == 2
    assert len({len(plan.leaves) for plan in hibiscus}) >= 2


def test_the_subject_picks_species_and_palette():
    assert plan_flower(0, "a sunflower").species == "sunflower"
    assert plan_flower(0, "a sunflower").petal_count >= 12
    assert plan_flower(0, "a red poppy").petal_count in (4, 5)
    # The first colour word names the petals; the second, the heart.
    white = plan_flower(3, "a white hibiscus with a crimson eye").palette
    pale = [int(PALETTES["white"][0][i : i + 2], 16) for i in (1, 3, 5)]
    # The petals are white's washes as `_shade` varies them: at most 14 levels a channel.
    assert all(abs(int(white[0][i : i + 2], 16) - c) <= 14 for i, c in zip((1, 3, 5), pale, strict=True))
    assert white[3] != plan_flower(3, "a white hibiscus").palette[3]
    assert plan_flower(1, "a pale blue morning glory").species == "morning glory"


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_completion_is_one_sentence_and_a_fenced_sketch_following_the_skeleton(seed):
    reply = completion(seed)
    preamble, _, rest = reply.partition("\n\n```javascript\n")
    assert preamble.endswith(".") and "\n" not in preamble and rest.endswith("```")
    sketch = extract_sketch(reply)
    assert sketch is not None
    for line in (
        "async function setup() {",
        "createCanvas(600, 600, WEBGL);",
        "brush.scaleBrushes(3);",
        "angleMode(DEGREES);",
        "noLoop();",
        "translate(-width / 2, -height / 2);",
        "background(",
    ):
        assert line in sketch


def test_every_sample_passes_the_static_gate():
    failures = {seed: static_check(completion(seed)).violations for seed in SEEDS}
    assert {seed: v for seed, v in failures.items() if v} == {}


def test_compact_sketches_pass_the_static_gate_with_the_skeleton_one_petal_loop_and_a_centre():
    replies = [completion(seed, style="compact") for seed in SEEDS[:100]]
    failures = {seed: static_check(reply).violations for seed, reply in enumerate(replies)}
    assert {seed: v for seed, v in failures.items() if v} == {}
    assert len(set(replies)) == 100
    assert completion(4, "a red poppy", style="compact") == completion(4, "a red poppy", style="compact")
    for seed in SEEDS[:100]:
        sketch = compact_sketch(seed)
        assert sketch.startswith("async function setup() {\n  createCanvas(600, 600, WEBGL);")
        for line in (
            "brush.scaleBrushes(3);",
            "noLoop();",
            "translate(-width / 2, -height / 2);",
            "brush.noStroke();",
        ):
            assert line in sketch
        count = int(re.search(r"i < (\d+);", sketch).group(1))  # type: ignore[union-attr]
        assert 5 <= count <= 8 and sketch.count("for (") == 1
        assert 3 <= sketch.count("brush.vertex(") <= 4 and sketch.count("brush.circle(300, 300, ") == 1
        opacities = [int(o) for o in re.findall(r"brush\.fill\(\"#[0-9a-f]{6}\", (\d+)\)", sketch)]
        bleeds = [float(b) for b in re.findall(r"brush\.fillBleed\(([\d.]+)\)", sketch)]
        assert all(180 <= o <= 230 for o in opacities) and all(0.2 <= b <= 0.3 for b in bleeds)
        # About a third of a full sketch: it must fit the compact warm start's 400-token budget.
        assert len(sketch) < 1000


def test_compact_sketches_draw_the_petal_reach_across_the_whole_range_in_tens():
    reaches = []
    for seed in SEEDS[:200]:
        found = {int(r) for r in re.findall(r"300 \+ (\d+) \* cos", compact_sketch(seed))}
        assert len(found) == 1, seed
        reaches.append(found.pop())
    assert all(r % 10 == 0 and COMPACT_REACH[0] <= r <= COMPACT_REACH[1] for r in reaches)
    assert set(reaches) == set(range(COMPACT_REACH[0], COMPACT_REACH[1] + 1, 10))


def test_numbers_stay_inside_the_prompts_ranges_and_the_shape_budget():
    for seed in SEEDS:
        sketch = generate_sketch(seed)
        opacities = [int(o) for o in re.findall(r"brush\.fill\(\"#[0-9a-f]{6}\", (\d+)\)", sketch)]
        bleeds = [float(b) for b in re.findall(r"brush\.fillBleed\(([\d.]+)\)", sketch)]
        coordinates = [int(c) for pair in re.findall(r"brush\.vertex\((\d+), (\d+)\)", sketch) for c in pair]
        assert opacities and all(150 <= o <= 230 for o in opacities), seed
        assert bleeds and all(0.15 <= b <= 0.35 for b in bleeds), seed
        assert all(0 <= c <= 600 for c in coordinates), seed
        assert shapes_painted(seed) <= MAX_SHAPES, seed
        plan = plan_flower(seed)
        assert 150 <= plan.reach <= 240 and all(0 < plan.centre[i] < 600 for i in (0, 1))


def test_procedural_policy_answers_each_prompt_about_its_subject_with_fresh_seeds():
    policy = ProceduralPolicy(seed=5)
    first = policy.generate([messages("a red poppy"), "Paint a sunflower in loose watercolour."], n=3)
    assert [len(replies) for replies in first] == [3, 3]
    assert all("red poppy" in reply for reply in first[0]) and all("sunflower" in reply for reply in first[1])
    second = policy.generate([messages("a red poppy")], n=3)
    assert not set(second[0]) & set(first[0])
    assert ProceduralPolicy(seed=5).generate([messages("a red poppy")], n=3) == first[:1]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 5, 7, 12])
async def test_rendered_samples_pass_the_full_gate(browser_pool, seed):
    subject = SUBJECTS[seed % len(SUBJECTS)]
    verdict = await gate(completion(seed, subject), browser_pool)
    assert verdict.passed, verdict.violations
    assert verdict.render is not None and verdict.render.coverage is not None
    # Well above the gate's floor (0.01): these are whole flowers, not specks.
    assert verdict.render.coverage > 0.05


def test_a_compact_sketch_paints_a_named_heart_in_its_colour():
    from ground.palettes import PALETTES

    for seed in range(5):
        sketch = compact_sketch(seed, "a white hibiscus with a crimson eye")
        assert f'brush.fill("{PALETTES["crimson"][2]}"' in sketch
        # With no heart named, the heart is the petal palette's own.
        assert f'brush.fill("{PALETTES["peach"][3]}"' in compact_sketch(seed, "a peach hibiscus")


def test_named_sketches_are_the_compact_sketches_with_css_colour_names():
    from ground.palettes import PALETTES
    from rewards.subject_match import subject_colours
    from watercolour.policy.procedural import NAMED_WASHES, reply

    for seed, subject in enumerate(SUBJECTS):
        hexes, names = compact_sketch(seed, subject), compact_sketch(seed, subject, named_colours=True)
        # The same drawing: only the two colours differ, and both are names of the subject's own washes.
        assert re.sub(r'fill\("[^"]+"', "fill(", hexes) == re.sub(r'fill\("[^"]+"', "fill(", names)
        petals, heart = re.findall(r'brush.fill\("([^"]+)"', names)
        word = subject_colours(subject).petals
        assert petals in NAMED_WASHES[word][:2], subject
        assert heart in {*NAMED_WASHES[word], *(washes[1] for washes in NAMED_WASHES.values())}, subject
        assert static_check(reply(subject, names)).passed
    assert set(NAMED_WASHES) == set(PALETTES)
