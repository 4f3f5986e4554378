"""The chat template a repaint policy calls its `paint` tool through.

TRL (1.16) trains an environment only through a chat template that can render a whole tool-calling exchange
(`trl.chat_template_utils.supports_tool_calling`) and whose replies it can parse into tool calls (it recognises
known templates by their exact text and sets the matching response parser, `add_response_schema`). SmolLM2's own
template renders `content` only, so TRL refuses it. SmolLM2 speaks ChatML (`<|im_start|>`, `<|im_end|>`), and so
does Qwen2.5, whose template TRL knows: it lists the tools in the system message and renders a call as
`<tool_call>{"name": "paint", "arguments": {"sketch": "..."}}</tool_call>` and a tool result as a user turn in
`<tool_response>` tags. So a ChatML policy gets TRL's copy of the Qwen2.5 template (TRL then parses its calls with
its Qwen parser and trains with its prefix-preserving variant of the template). A policy whose own template TRL
already supports (Qwen3, Qwen2.5-VL, Llama 3.1, ...) keeps it.
"""

from __future__ import annotations

from typing import Any


CHATML_MARKERS = ("<|im_start|>", "<|im_end|>")


class NoToolTemplate(ValueError):
    """The policy's chat template cannot call tools and no tool-calling template fits its tokens."""


def use_tool_template(processing_class: Any) -> Any:
    """The tokenizer (or processor) with a chat template that can call tools; changed in place only if needed."""
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    if supports_tool_calling(processing_class):
        return processing_class
    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    vocabulary = tokenizer.get_vocab()
    if not all(marker in vocabulary for marker in CHATML_MARKERS):
        raise NoToolTemplate(
            "the policy's chat template cannot call tools and its tokenizer does not speak ChatML: give it a "
            "tool-calling chat template TRL knows (see trl/chat_templates) before a repaint run"
        )
    processing_class.chat_template = qwen2_5_chat_template
    return processing_class
