"""Router flips between the slot decoder and the update's forward, on CPU: the decoder's sampled log-probabilities of
one row against a full forward of it (the update's), and whether the tokens whose importance ratio is far from 1
are tokens some MoE router sent to other experts in the two passes.

    PYTHONPATH=. OMP_NUM_THREADS=2 .venv/bin/python lab/scripts/router_flips.py bf16 qwen3.5-35b-a3b-4l 2
    PYTHONPATH=. OMP_NUM_THREADS=2 .venv/bin/python lab/scripts/router_flips.py fp32 qwen3.5-35b-a3b-4l 2

Arguments: the dtype (bf16 or fp32), a shape of `watercolour.rehearsal.shapes` with random weights, the rows (one a
seed, 48 tokens each). The 4-layer recipe shape needs about 8 GB in bf16 and 15 GB in float32.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from transformers import GenerationConfig

from watercolour.pipeline.slot_decode import Row, Sampler, SlotDecoder, decoding
from watercolour.rehearsal.shapes import build_model, shape_tokenizer


TOKENS = 48
FAR = 0.2  # a ratio further than this from 1 counts as far


def main(dtype_name: str, shape: str, rows: int) -> None:
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    tokenizer = shape_tokenizer()
    model = build_model(shape, tokenizer, "cpu", dtype).eval()
    routers = [module for module in model.modules() if type(module).__name__.endswith("TopKRouter")]
    record: list[torch.Tensor] = []

    def chosen(module: Any, args: Any, out: Any) -> None:
        record.append(out[2].detach().clone())  # the router's expert indices, (tokens, k)

    for router in routers:
        router.register_forward_hook(chosen)
    prompt = tuple(tokenizer("paint a peach hibiscus in a pale wash")["input_ids"])
    totals = {"tokens": 0, "flipped": 0, "far": 0, "far_flipped": 0}
    smallest, gaps = [], []
    layers = len(routers)
    for seed in range(rows):
        torch.manual_seed(seed)
        sampler = Sampler(GenerationConfig(do_sample=True, temperature=1.0))
        decoder = SlotDecoder(model, 1, TOKENS, 128, [tokenizer.eos_token_id], sampler)
        record.clear()
        with decoding(False):
            decoder.start(0, Row(0, prompt, stop_at=TOKENS))
            ended = []
            while not ended:
                ended = decoder.step()
        row = ended[0]
        prefill, steps = record[:layers], record[layers:]  # the prefill's (all prompt positions), then one a step
        record.clear()
        with torch.no_grad():
            logits = model(torch.tensor([list(prompt) + row.token_ids])).logits[0, len(prompt) - 1 : -1].float()
        full = torch.log_softmax(logits, -1).gather(1, torch.tensor(row.token_ids)[:, None])[:, 0]
        forward = record[:layers]
        sampled = torch.tensor(row.logprobs)
        ratio = torch.exp(full - sampled)
        for token in range(len(row.token_ids)):
            position = len(prompt) - 1 + token  # the position token `token` was sampled from
            flipped = False
            for layer in range(layers):
                if token == 0:
                    decoded = prefill[layer].view(-1, prefill[layer].shape[-1])[position]
                else:
                    decoded = steps[(token - 1) * layers + layer].view(-1, steps[0].shape[-1])[0]
                whole = forward[layer].view(-1, forward[layer].shape[-1])[position]
                flipped = flipped or set(decoded.tolist()) != set(whole.tolist())
            far = abs(float(ratio[token]) - 1) > FAR
            totals["tokens"] += 1
            totals["flipped"] += flipped
            totals["far"] += far
            totals["far_flipped"] += far and flipped
        smallest.append(round(float(ratio.min()), 3))
        gaps.append(round(float((full - sampled).abs().mean()), 3))
    print(dtype_name, shape, totals, "min ratio per row", smallest, "mean gap per row", gaps, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
