"""Run inside the scorer image (`python -` in /app): HPSv3's code path as far as a machine without its weights goes,
as one line of JSON. tests/operations/test_images.py sends it.

1. `import hpsv3`, which pulls transformers, trl, peft, deepspeed, datasets and pyarrow.
2. hpsv3's own reward model class built at the published shape (Qwen2-VL-7B-Instruct's configuration, with the
   head HPSv3's configuration file asks for) on the meta device: random weights that take no memory.
3. The Space's model load (`models.HPSv3Model`) up to its first weight download, which cannot reach the Hub here.
"""

import importlib.metadata
import json
import os

import hpsv3
import torch
from hpsv3.model.qwen2vl_trainer import Qwen2VLRewardModelBT
from hpsv3.utils.parser import DataConfig, ModelConfig, PEFTLoraConfig, TrainingConfig, parse_args_with_yaml
from transformers import Qwen2VLConfig


# Qwen2-VL-7B-Instruct's published config.json, the model HPSv3_7B.yaml names (`model_name_or_path`).
QWEN2_VL_7B = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "tie_word_embeddings": False,
    "vision_config": {
        "depth": 32,
        "embed_dim": 1280,
        "hidden_size": 3584,
        "mlp_ratio": 4,
        "num_heads": 16,
        "in_chans": 3,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
}

config_path = os.path.join(os.path.dirname(hpsv3.__file__), "config", "HPSv3_7B.yaml")
(_, _, model_config, _), _ = parse_args_with_yaml(
    (DataConfig, TrainingConfig, ModelConfig, PEFTLoraConfig), config_path, is_train=False
)
with torch.device("meta"):
    model = Qwen2VLRewardModelBT(
        Qwen2VLConfig(**QWEN2_VL_7B),
        output_dim=model_config.output_dim,
        reward_token=model_config.reward_token,
        rm_head_type=model_config.rm_head_type,
        rm_head_kwargs=model_config.rm_head_kwargs,
    )

from models import HPSv3Model  # noqa: E402  (the Space's own module, in /app)


try:
    HPSv3Model()
    first_download = "none: the weights were there"
except Exception as error:  # what the Space's /health would report
    first_download = f"{type(error).__name__}: {error}"

print(
    json.dumps(
        {
            "hpsv3": importlib.metadata.version("hpsv3"),
            "transformers": importlib.metadata.version("transformers"),
            "reward_model": type(model).__name__,
            "parameters": sum(parameter.numel() for parameter in model.parameters()),
            "reward_head": str(model.rm_head).replace("\n", " "),
            "first_download": first_download,
        }
    )
)
