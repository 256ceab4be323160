"""InstructBLIP: refused (tried with a tiny Vicuna-style model and 8 frames as images)."""
MODEL_TYPE = "instructblip"
REFUSED = ("one image per prompt: its processor writes one image's query tokens however many images a prompt "
           "has, so 8 frames fail in the forward (8 images' queries against one prompt), and it loses any chat "
           "template on loading")
