"""InstructBLIP-Video: refused (tried with a tiny Vicuna-style model)."""
MODEL_TYPE = "instructblipvideo"
REFUSED = ("its processor takes the clip only as `images` (a `videos` input is dropped: no pixels, a text-only "
           "answer), loses any chat template on loading, and always writes 4 frames' query tokens, so the "
           "model silently uses a slice of 8 frames' features")
