"""Do two videos hold the same multiset of frames? Then only frame order separates them."""
from __future__ import annotations

import hashlib
from collections import Counter

from ..video.decode import decode_indices, probe


def frame_multiset(path: str) -> Counter:
    """Every decoded frame of a video, as a count of frame hashes."""
    info = probe(path)
    frames = decode_indices(path, list(range(info.n_frames)))
    return Counter(hashlib.sha1(frame.tobytes()).hexdigest() for frame in frames)


def same_frame_multiset(path_a: str, path_b: str) -> bool:
    return frame_multiset(path_a) == frame_multiset(path_b)
