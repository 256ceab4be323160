"""Models that run on this machine through transformers (or open_clip): generative video LLMs
and causal LMs (``hf_generative``, its inputs, loading, prefix reuse and greedy continuation),
contrastive encoders (``contrastive``, ``blip2``, ``pe_video``) and the text-only baselines.
Their heavy imports (torch, transformers) happen only when one of them loads."""
