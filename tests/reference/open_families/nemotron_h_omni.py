"""Nemotron 3 Nano Omni (NemotronH text, RADIO vision; the audio branch is optional and left
out): the template writes ``<video>`` before the user's text; the processor widens it into one
``<img>`` run of image tokens per pair of frames, each labelled with its frames' numbers and
times ("Frame 1 sampled at 0.00 seconds and frame 2 ..."). Its processor takes one prompt per
call when a video is shown."""
MODEL_TYPE = "nemotron_h_omni"
SHOWN_AS = "video"
NOTE = ("verified without the audio tower the released checkpoint carries: timefoil gives it no audio, and "
        "its processor takes one prompt per call when a video is shown")

# ``<video>`` is no token of the real vocabulary: it is text the processor replaces
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>\n"
            "{% elif c['type'] == 'video' %}<video>\n{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
            "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% endif %}")
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]


def make(folder: str, words: list[str]) -> None:
    import torch
    from transformers import (NemotronH_Omni_Reasoning_V3, NemotronH_Omni_Reasoning_V3_Config,
                              NemotronH_Omni_Reasoning_V3ImageProcessor, NemotronH_Omni_Reasoning_V3Processor,
                              NemotronH_Omni_Reasoning_V3VideoProcessor, ParakeetFeatureExtractor)

    from . import tiny_tokenizer

    # what the frame labels are written with: "sampled at 1.50 seconds" is "1", ".", "50" here
    labels = "Frame frame sampled at seconds and . : " + " ".join(map(str, range(10))) + " " + " ".join(
        f"{n:02d}" for n in range(100))
    tokenizer = tiny_tokenizer(list(words) + [labels], ["<|im_start|>", "<|im_end|>", "<image>", "<img>", "</img>"],
                               TEMPLATE, named_tokens={"image_token": "<image>"})
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    text = {"model_type": "nemotron_h", "vocab_size": len(tokenizer), "hidden_size": 32,
            "layers_block_type": ["mamba", "attention", "moe"], "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 8, "intermediate_size": 64, "ssm_state_size": 16, "mamba_num_heads": 4, "mamba_head_dim": 16,
            "n_groups": 1, "chunk_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 32,
            "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id}
    vision = {"model_type": "radio", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
              "patch_size": 16, "image_size": 64, "max_img_size": 128, "video_temporal_patch_size": 2,
              "norm_mean": CLIP_MEAN, "norm_std": CLIP_STD}
    config = NemotronH_Omni_Reasoning_V3_Config(text_config=text, vision_config=vision, vision_hidden_size=32,
                                                projector_hidden_size=32, image_token_id=image_id,
                                                video_token_id=image_id)
    torch.manual_seed(0)
    NemotronH_Omni_Reasoning_V3(config).save_pretrained(folder)
    # 60x80 frames become a 4x4 patch grid: 4 tokens for each pair of frames after the pixel shuffle
    video = NemotronH_Omni_Reasoning_V3VideoProcessor(norm_mean=CLIP_MEAN, norm_std=CLIP_STD,
                                                      video_target_num_patches=16)
    image = NemotronH_Omni_Reasoning_V3ImageProcessor(image_mean=CLIP_MEAN, image_std=CLIP_STD, min_num_patches=4,
                                                      max_num_patches=16)
    # the processor insists on an audio feature extractor even when no audio is ever given
    NemotronH_Omni_Reasoning_V3Processor(image, video, tokenizer, ParakeetFeatureExtractor(),
                                         chat_template=TEMPLATE).save_pretrained(folder)
