"""Video sampling, decoding and the decode-once frame cache."""
from .decode import (VideoEmpty, VideoError, VideoMissing, VideoTooLarge, VideoUndecodable, VideoUnreadable,
                     decode_indices, probe, write_video)
from .frames import Frames, FrameStore, content_key
from .sampling import FramePlan, PartInfo, Sampling, plan_frames

__all__ = ["Frames", "FrameStore", "FramePlan", "PartInfo", "Sampling", "VideoEmpty", "VideoError",
           "VideoMissing", "VideoTooLarge", "VideoUndecodable", "VideoUnreadable", "content_key", "decode_indices",
           "plan_frames", "probe", "write_video"]
