"""Tiny randomly initialised transformers models for testing adapters offline.

Each is saved to a folder and loaded back by path, so the real loading code runs. The
tokenizer is word-level, built from the words it must know, with a minimal chat template.
"""
from __future__ import annotations

import re

CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|> {% endif %}")
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>", "<|user|>", "<|system|>", "<|assistant|>"]
BASE_WORDS = ["Yes", "No", "yes", "no", "A", "B", "C", "D", "the", "a", "video", "caption"]


def word_tokenizer(texts):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = dict.fromkeys(SPECIAL + BASE_WORDS)
    for text in texts:
        words.update(dict.fromkeys(re.findall(r"\w+|[^\w\s]", text)))
    vocab = {w: i for i, w in enumerate(words)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    core.decoder = decoders.WordPiece(prefix="##")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def byte_level_tokenizer(texts, tokenizer_class: str):
    """The same words and special tokens as ``word_tokenizer``, as a byte-level BPE of
    transformers' ``tokenizer_class``: for a model type whose tokenizer transformers rebuilds
    from the saved vocabulary and merges whatever class the folder names (Qwen3.5's), which
    would break a word-level one. Merges learnt on the words keep each a token of its own."""
    import json

    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    words = BASE_WORDS + [w for text in texts for w in re.findall(r"\w+|[^\w\s]", text)]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=100_000, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(words + [" " + w for w in words], trainer)  # each word with and without its space
    learnt = json.loads(core.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in learnt["merges"]]
    tokenizer = getattr(transformers, tokenizer_class)(vocab=learnt["vocab"], merges=merges, unk_token="<unk>",
                                                       pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_llama(path, texts, seed=0, hidden=32, layers=2):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_tokenizer(texts)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=1024, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


REMOTE_CONFIGURATION = """from transformers import LlamaConfig


class TinyRemoteConfig(LlamaConfig):
    model_type = "tiny_remote"
"""
REMOTE_MODELING = """from transformers import LlamaForCausalLM

from .configuration_tiny_remote import TinyRemoteConfig


class TinyRemoteForCausalLM(LlamaForCausalLM):
    config_class = TinyRemoteConfig
"""


def tiny_remote_code(path, texts, seed=0):
    """A tiny causal LM shipped as the hub ships remote-code models: its own configuration and
    modeling modules beside config.json, named by the config's ``auto_map`` (transformers imports
    them only when asked to trust the folder's code)."""
    import json
    import os

    tiny_llama(path, texts, seed=seed)
    config_file = os.path.join(path, "config.json")
    with open(config_file) as f:
        config = json.load(f)
    config.update(model_type="tiny_remote", architectures=["TinyRemoteForCausalLM"],
                  auto_map={"AutoConfig": "configuration_tiny_remote.TinyRemoteConfig",
                            "AutoModelForCausalLM": "modeling_tiny_remote.TinyRemoteForCausalLM"})
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)
    for name, code in (("configuration_tiny_remote.py", REMOTE_CONFIGURATION),
                       ("modeling_tiny_remote.py", REMOTE_MODELING)):
        with open(os.path.join(path, name), "w") as f:
            f.write(code)
    return str(path)


def tiny_gpt2(path, texts, seed=0, hidden=32, layers=2):
    """A tiny GPT-2: a base language model whose tokenizer has no chat template."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = word_tokenizer(texts)
    tokenizer.chat_template = None
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=hidden, n_layer=layers, n_head=4, n_positions=256,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def tiny_clip(path, texts, seed=0, kind="clip", width=32, layers=2, image_size=32):
    """A tiny CLIP (or SigLIP) with a word-level tokenizer and a 32x32 image processor; the
    width, depth and image size grow it into a compute-bound random model for benchmarks."""
    import torch
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    if kind == "xclip":
        return tiny_xclip(path, texts, seed)
    tokenizer = word_tokenizer(texts)
    heads = max(2, width // 64)
    text = dict(vocab_size=len(tokenizer), hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=2 * width, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    vision = dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=2 * width,
                  image_size=image_size, patch_size=max(8, image_size // 14))
    torch.manual_seed(seed)
    if kind == "siglip":
        model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
        processor = SiglipProcessor(image_processor=SiglipImageProcessor(size={"height": image_size,
                                                                                "width": image_size}),
                                    tokenizer=tokenizer)
    else:
        model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
        processor = CLIPProcessor(image_processor=CLIPImageProcessor(
                                      size={"shortest_edge": image_size},
                                      crop_size={"height": image_size, "width": image_size}),
                                  tokenizer=tokenizer)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return str(path)


def pattern_frames(count: int, height: int, width: int):
    """Deterministic uint8 frames [count, height, width, 3] with detail at every scale
    (no random generator, so every machine and numpy version makes the same pixels)."""
    import numpy as np

    t, y, x, c = np.meshgrid(np.arange(count), np.arange(height), np.arange(width), np.arange(3), indexing="ij")
    return ((x * 7 + y * 13 + t * 29 + c * 71 + (x * y) % 17 + ((x // 9 + y // 5) % 2) * 90) % 256).astype(np.uint8)


def tiny_xclip(path, texts, seed=0, frames=8):
    """A tiny X-CLIP (whole-clip video encoder) with a 32x32 VideoMAE-style image processor."""
    import torch
    from transformers import VideoMAEImageProcessor, XCLIPConfig, XCLIPModel, XCLIPProcessor

    tokenizer = word_tokenizer(texts)
    text = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32,
                  patch_size=8, num_frames=frames, mit_hidden_size=16, mit_intermediate_size=32,
                  mit_num_attention_heads=2)
    torch.manual_seed(seed)
    model = XCLIPModel(XCLIPConfig(text_config=text, vision_config=vision, projection_dim=16,
                                   prompt_num_attention_heads=2))
    images = VideoMAEImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    model.save_pretrained(path)
    XCLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return str(path)


def register_frame_encoder_standin() -> None:
    """PE-Video's frame encoder is a timm model, and timm cannot be imported without torchvision.
    This registers a small torch image classifier for transformers' ``TimmWrapperConfig`` (in
    this process only, whether timm is installed or not, so every machine builds the same tiny
    model), so a tiny PE-Video is built and loaded by the real classes and loading code around
    it: the temporal encoder, heads and text model."""
    from torch import nn
    from transformers import AutoModelForImageClassification, PreTrainedModel, TimmWrapperConfig
    from transformers.modeling_outputs import ImageClassifierOutput

    class FrameEncoderStandin(PreTrainedModel):
        config_class = TimmWrapperConfig
        base_model_prefix = "frame_encoder"
        main_input_name = "pixel_values"

        def __init__(self, config):
            super().__init__(config)
            self.patches = nn.Conv2d(3, 16, kernel_size=8, stride=8)
            self.head = nn.Linear(16, config.num_labels)
            self.post_init()

        def forward(self, pixel_values, **kwargs):
            return ImageClassifierOutput(logits=self.head(self.patches(pixel_values).relu().mean((-2, -1))))

    AutoModelForImageClassification.register(TimmWrapperConfig, FrameEncoderStandin, exist_ok=True)


def tiny_pe_video(path, texts, seed=0, size=None):
    """A tiny PE-Video (``PeVideoModel``: frame encoder, temporal encoder, ModernBERT text model)
    with a word-level tokenizer and a video processor configuration written as the official
    processor saves it (``size``: its resize, 32x32 by default). The frame encoder's timm
    configuration keeps two labels: transformers does not keep another count across a reload."""
    import json
    import os

    import torch
    from transformers import PeVideoConfig, PeVideoModel

    register_frame_encoder_standin()
    tokenizer = word_tokenizer(texts)
    text = dict(model_type="modernbert", vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=64,
                pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id, cls_token_id=tokenizer.bos_token_id,
                sep_token_id=tokenizer.eos_token_id)
    video = dict(vision_config=dict(architecture="tiny_frame_encoder"), hidden_size=32, intermediate_size=64,
                 num_hidden_layers=2, num_attention_heads=2, head_dim=16)
    torch.manual_seed(seed)
    model = PeVideoModel(PeVideoConfig(text_config=text, video_config=video))
    with torch.no_grad():  # the released scale and bias are learnt; zeros would hide a wrong formula
        model.text_video_logit_scale.fill_(10.0)
        model.text_video_logit_bias.fill_(-2.0)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    processor = {"video_processor_type": "PeVideoVideoProcessor", "processor_class": "PeVideoProcessor",
                 "do_resize": True, "size": size or {"height": 32, "width": 32}, "resample": 2,
                 "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                 "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True,
                 "do_sample_frames": True, "num_frames": 16}
    with open(os.path.join(path, "video_preprocessor_config.json"), "w", encoding="utf-8") as handle:
        json.dump(processor, handle, indent=2)
    with open(os.path.join(path, "processor_config.json"), "w", encoding="utf-8") as handle:
        json.dump({"processor_class": "PeVideoProcessor"}, handle, indent=2)
    return str(path)


# -- tiny video LLMs: each family's recipe is its FamilySpec.tiny (timefoil.models.families) ----------


def tensor_digest(value) -> dict:
    """SHA-256, shape and dtype of a tensor's (or array's) bytes: what the digests compare."""
    import hashlib

    import numpy as np

    array = value.detach().cpu().contiguous().numpy() if hasattr(value, "detach") else np.asarray(value)
    return {"sha256": hashlib.sha256(array.tobytes()).hexdigest(), "shape": list(array.shape),
            "dtype": str(array.dtype)}


def vlm_prompt(tokenizer, visual: list[dict], text: str) -> str:
    """A one-turn chat prompt with the ``visual`` placeholders, ready for the answer."""
    return tokenizer.apply_chat_template([{"role": "user", "content": visual + [{"type": "text", "text": text}]}],
                                         add_generation_prompt=True, tokenize=False)


def vlm_tokenizer(texts, family: str, adds_bos: bool = False):
    """A word-level tokenizer that knows the family's placeholder tokens as special tokens; with
    ``adds_bos``, one that puts its begin token before every text it tokenises with special
    tokens, as Gemma's and Llama's do."""
    from tokenizers import AddedToken

    from .models.families import FAMILIES

    recipe = FAMILIES.find(family).tiny
    words = list(texts) + ["system user assistant"] + list(recipe.words)
    tokenizer = (byte_level_tokenizer(words, recipe.tokenizer_class) if recipe.tokenizer_class
                 else word_tokenizer(words))
    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken(t, special=True)
                                                                for t in recipe.special_tokens]})
    if recipe.named_tokens:
        tokenizer._set_model_specific_special_tokens(special_tokens=dict(recipe.named_tokens))
    tokenizer.chat_template = recipe.chat_template
    if adds_bos:
        from tokenizers.processors import TemplateProcessing

        bos = tokenizer.bos_token
        tokenizer._tokenizer.post_processor = TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tokenizer.bos_token_id)])
    return tokenizer


def write_processor_files(path, family: str, tokenizer, video: dict | None = None, processor: dict | None = None,
                          image: dict | None = None):
    """The processor configuration a hub repository of ``family`` carries, as files; ``video``,
    ``processor`` and ``image`` override entries of the video processor's, the top-level and the
    image processor's settings. A family without a video processor (Gemma 3) gets no entry for one."""
    import json
    import os

    from .models.families import FAMILIES

    recipe = FAMILIES.find(family).tiny
    os.makedirs(path, exist_ok=True)
    config = {**recipe.processor, **(processor or {}), "video_processor": {**recipe.video_processor, **(video or {})},
              "image_processor": {**recipe.image_processor, **(image or {})}}
    if not config["video_processor"]:
        del config["video_processor"]
    with open(os.path.join(path, "processor_config.json"), "w") as handle:
        json.dump(config, handle, indent=1)
    with open(os.path.join(path, "chat_template.jinja"), "w") as handle:
        handle.write(tokenizer.chat_template)
    tokenizer.save_pretrained(path)
    return str(path)


def tiny_vlm(path, family: str, texts, seed: int = 0, hidden: int = 32, layers: int = 2, adds_bos: bool = False):
    """A tiny random video LLM of ``family`` (a name in timefoil.models.families.FAMILIES) saved
    with its tokenizer, processor configuration and chat template; vision inputs are kept small.
    ``adds_bos``: its tokenizer adds its begin token, as vlm_tokenizer's does."""
    import torch

    from .models.families import FAMILIES

    recipe = FAMILIES.find(family).tiny
    tokenizer = vlm_tokenizer(texts, family, adds_bos=adds_bos)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in recipe.special_tokens}
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    model = recipe.model(text, ids, hidden)
    model.save_pretrained(path)
    write_processor_files(path, family, tokenizer, video=recipe.small_video, processor=recipe.small_processor,
                          image=recipe.small_image)
    return str(path)


def tiny_siglip2(path, texts, seed=0, patch_size=8, max_num_patches=20):
    """A tiny SigLIP 2 whose PIL image processor resizes each frame, keeping its aspect, to at
    most ``max_num_patches`` patches of ``patch_size`` pixels (the variable-resolution path):
    a 64x64 frame becomes 4x4 patches and 4 masked padding ones; its position embeddings are a
    4x4 grid, resized to each frame's patch grid."""
    import torch
    from transformers import Siglip2Config, Siglip2Model, Siglip2Processor
    from transformers.models.siglip2.image_processing_pil_siglip2 import Siglip2ImageProcessorPil

    tokenizer = siglip2_tokenizer(texts)
    text = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  patch_size=patch_size, num_patches=16)
    torch.manual_seed(seed)
    Siglip2Model(Siglip2Config(text_config=text, vision_config=vision)).save_pretrained(path)
    images = Siglip2ImageProcessorPil(patch_size=patch_size, max_num_patches=max_num_patches)
    Siglip2Processor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return str(path)


def siglip2_tokenizer(texts, vocab_size=2000):
    """SigLIP 2's own tokenizer class (Gemma's byte-fallback BPE, lowercased, spaces as "▁")
    with merges learnt from ``texts``, so that each text becomes a short, distinct sequence."""
    import json

    from tokenizers import Tokenizer, models, normalizers, trainers
    from transformers import Siglip2Tokenizer

    special = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.normalizer = normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(" ", "▁")])
    core.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                                          show_progress=False))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in json.loads(core.to_str())["model"]["merges"]]
    return Siglip2Tokenizer(vocab=core.get_vocab(), merges=merges)


def tiny_blip2_itm(path, texts, seed=0, queries=4):
    """A tiny BLIP-2 image-text retrieval model (vision encoder, Q-Former with ``queries``
    query tokens, ITM head and ITC projections) with a 32x32 BLIP image processor."""
    import torch
    from transformers import Blip2Config, Blip2ForImageTextRetrieval, Blip2Processor
    from transformers.models.blip.image_processing_pil_blip import BlipImageProcessorPil

    tokenizer = word_tokenizer(texts)
    # the processor adds its image token to the tokenizer: the Q-Former's vocabulary must hold it
    processor = Blip2Processor(image_processor=BlipImageProcessorPil(size={"height": 32, "width": 32}),
                               tokenizer=tokenizer, num_query_tokens=queries)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32,
                  patch_size=8)
    qformer = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=2, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                   use_qformer_text_input=True)
    torch.manual_seed(seed)
    # as on the hub: the processor puts ``queries`` image tokens before the text of an (image, text)
    # pair and the model, knowing their id, drops them again
    config = Blip2Config(vision_config=vision, qformer_config=qformer, num_query_tokens=queries,
                         image_text_hidden_size=16, architectures=["Blip2ForImageTextRetrieval"],
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"))
    Blip2ForImageTextRetrieval(config).save_pretrained(path)
    processor.save_pretrained(path)
    return str(path)
