"""The painting task: the closed method list, the prompt's text rules and the chat messages."""

from __future__ import annotations

import pytest

from ground import prompt


TEN = {
    "scaleBrushes",
    "noStroke",
    "fill",
    "noFill",
    "fillBleed",
    "fillTexture",
    "beginShape",
    "vertex",
    "endShape",
    "circle",
}


def test_allowlist_is_exactly_the_ten_brush_methods():
    assert set(prompt.ALLOWLIST) == TEN and len(prompt.ALLOWLIST) == 10


def test_each_brush_method_checks_the_arguments_its_listed_signature_names_and_brackets_the_optional_ones():
    for name, method in prompt.BRUSH_METHODS.items():
        listed = method.signature(name).split("(", 1)[1].rstrip(")")
        parts = [part.strip() for part in listed.split(",") if part.strip()]
        assert len(prompt.BRUSH_ARGUMENTS[name]) == len(parts), name
        assert listed.count("[") == method.optional == len(parts) - prompt.BRUSH_REQUIRED[name], name
        assert f"brush.{method.signature(name)}: {method.purpose}." in prompt.system_prompt(), name


def test_every_allowed_method_is_listed_with_its_signature():
    text = prompt.system_prompt()
    for name in prompt.ALLOWLIST:
        assert f"brush.{name}(" in text


def test_painting_methods_are_allowed_ones():
    assert set(prompt.PAINTING_METHODS) <= set(prompt.ALLOWLIST)


def test_prompt_has_no_code_fence_and_no_worked_example():
    text = prompt.system_prompt()
    assert "```" not in text
    assert "brush.vertex(3" not in text and "brush.circle(3" not in text  # no concrete painting calls


# The sketch's skeleton: both prompt styles spell it out.
SKELETON = [
    "createCanvas(600, 600, WEBGL)",
    "brush.scaleBrushes(3)",
    "angleMode(DEGREES)",
    "noLoop()",
    "translate(-width / 2, -height / 2)",
]


@pytest.mark.parametrize(
    "rule",
    [
        *SKELETON,
        "0 and 600",
        "hex",
        "180 and 230",
        "below 150",
        "0.2 and 0.3",
        "two or three times",
    ],
)
def test_prompt_states_the_canvas_and_paint_rules(rule):
    assert rule in prompt.system_prompt()


def test_subjects_start_with_the_default_and_include_hibiscus_variants():
    assert prompt.SUBJECTS[0] == prompt.DEFAULT_SUBJECT == "a peach hibiscus"
    assert len(prompt.SUBJECTS) >= 12 and len(set(prompt.SUBJECTS)) == len(prompt.SUBJECTS)
    assert sum("hibiscus" in subject for subject in prompt.SUBJECTS) >= 4


@pytest.mark.parametrize("subject", ["a peach hibiscus", "a red poppy"])
def test_messages_are_a_system_and_a_user_turn_naming_the_subject(subject):
    chat = prompt.messages(subject)
    assert [m["role"] for m in chat] == ["system", "user"]
    assert chat[0]["content"] == prompt.system_prompt()
    assert subject in chat[1]["content"] and subject in prompt.user_prompt(subject)


@pytest.mark.parametrize("rule", [*SKELETON, "0 to 600", "0.2-0.3"])
def test_the_short_prompt_keeps_the_skeleton_and_canvas_rules(rule):
    assert rule in prompt.system_prompt("short")


def test_the_short_prompt_names_every_allowed_method_and_is_a_quarter_of_the_full_one():
    short = prompt.system_prompt("short")
    assert all(name in short for name in prompt.ALLOWLIST)
    assert "```" not in short
    assert len(short) * 4 < len(prompt.system_prompt("full"))
    chat = prompt.messages("a red poppy", "short")
    assert chat[0]["content"] == short and "a red poppy" in chat[1]["content"]
