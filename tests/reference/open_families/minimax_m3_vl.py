"""MiniMax-M3: the template writes ``]<]video[>[`` for a video; the processor writes each temporal
patch as ``]<]<seconds> seconds[>[`` then ``]<]start of image[>[``, one ``]<]video[>[`` per merged
patch, ``]<]end of image[>[``. Its processor never resizes video frames (``do_resize`` is off in
the processor's own defaults), so the patch size is one that 60x80 frames divide into. The
architecture is refused at load (hf_open.REFUSED): with its released patch size x merge size (28)
most videos' frames fail in the processor; the check shows the line it is refused in."""
from __future__ import annotations

from . import tiny_tokenizer

MODEL_TYPE = "minimax_m3_vl"
SHOWN_AS = "video"

# the hub template: ]~!b[ opens the text with a fixed system turn, each turn is ]~b]<role>\n...[e~[\n
# (a system message is the "developer" turn, the assistant is "ai"), a visual item is its placeholder
# before the text of the turn
SYSTEM = "You are a helpful assistant."
ROLES = "{'system': 'developer', 'assistant': 'ai'}"
CHAT_TEMPLATE = (
    "]~!b[]~b]system\n" + SYSTEM + "[e~[\n{% for m in messages %}]~b]{{ " + ROLES + ".get(m['role'], m['role']) }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for item in m['content'] %}"
    "{% if item['type'] == 'video' %}]<]video[>[{% elif item['type'] == 'image' %}]<]image[>["
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}[e~[\n{% endfor %}"
    "{% if add_generation_prompt %}]~b]ai\n{% endif %}")
SPECIAL = ["]~!b[", "]~b]", "[e~[", "]<]image[>[", "]<]video[>[", "]<]start of image[>[", "]<]end of image[>["]
# the words of ]<]0.0 seconds[>[, of the roles and of the fixed system turn
PROMPT_WORDS = " ".join(map(str, range(1000))) + " . seconds ] < [ > ai developer " + SYSTEM
PATCH, MERGE = 10, 2  # 60x80 frames are 6x8 patches, 3x4 merged


def make(folder: str, words: list[str]) -> None:
    from transformers import (MiniMaxM3SparseForConditionalGeneration, MiniMaxM3VLConfig, MiniMaxM3VLImageProcessor,
                              MiniMaxM3VLProcessor, MiniMaxM3VLVideoProcessor)

    tokenizer = tiny_tokenizer(list(words) + [PROMPT_WORDS], SPECIAL, CHAT_TEMPLATE)
    ids = dict(zip(SPECIAL, tokenizer.convert_tokens_to_ids(SPECIAL)))
    # one full-attention and one block-sparse (lightning indexer) layer, a dense and an expert MLP
    text = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, bos_token_id=ids["]~!b["],
                eos_token_id=ids["[e~["], hidden_size=32, intermediate_size=16, dense_intermediate_size=64,
                shared_intermediate_size=16, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                head_dim=8, rotary_dim=4, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=4096,
                layer_types=["full_attention", "minimax_m3_sparse"], mlp_layer_types=["dense", "sparse"],
                index_n_heads=2, index_head_dim=8, index_block_size=4, index_topk_blocks=2, index_local_blocks=1)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=80,
                  patch_size=PATCH, temporal_patch_size=2, spatial_merge_size=MERGE)
    config = MiniMaxM3VLConfig(text_config=text, vision_config=vision, projector_hidden_size=32,
                               image_token_index=ids["]<]image[>["], video_token_index=ids["]<]video[>["])
    MiniMaxM3SparseForConditionalGeneration(config).save_pretrained(folder)
    pixels = {"patch_size": PATCH, "merge_size": MERGE, "temporal_patch_size": 2}
    images = MiniMaxM3VLImageProcessor(size={"shortest_edge": 20 * 20, "longest_edge": 40 * 40}, **pixels)
    videos = MiniMaxM3VLVideoProcessor(min_pixels=20 * 20, max_pixels=40 * 40, **pixels)
    MiniMaxM3VLProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                         chat_template=CHAT_TEMPLATE).save_pretrained(folder)
