"""Loading a transformers model and its tokenizer by hub id or folder, and the fingerprints
that say which weights and which model code answered (a run's cache keys depend on them)."""
from __future__ import annotations

import json
import os
import re
import threading
from concurrent.futures import Future
from typing import Any

from ...core.hashing import file_hash, stable_hash
from ...core.memory import is_out_of_memory, release_memory
from ...core.paths import default_cache_dir
from . import sync_free
from .hf_open import refuse_unfaithful
from .placement import out_of_memory, torch_dtype


WEIGHT_FILES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt")
# a folder of the hub's cache is named by the commit it holds: its files never change under that name
HUB_SNAPSHOT = re.compile(r"(?:^|[\\/])models--[^\\/]+[\\/]snapshots[\\/]([0-9a-f]{40})[\\/]?$")
MEMO = "weights-hashes.json"  # in the cache folder: content hashes by (path, size, mtime, ctime, inode)


# (folder, memo folder) whose weights are being hashed while the model loads
_HASHING: dict[tuple[str, str | None], Future] = {}
_HASHING_LOCK = threading.Lock()


def hash_weights_meanwhile(path: str, memo_dir: str | None = None) -> None:
    """Start hashing a folder's weights on a thread of its own while they load (the load reads
    the same bytes, which the hash then finds in the page cache), so that the fingerprint a run
    asks for after the load is ready rather than reading the gigabytes of a new checkpoint again
    between the load and the first answer. ``memo_dir``: the run's cache folder, where the hashes
    are kept (the loaders know it before the load starts). A daemon: a Ctrl-C never waits for it."""
    if not os.path.isdir(path):
        return
    with _HASHING_LOCK:
        if (path, memo_dir) in _HASHING:
            return
        made = _HASHING[path, memo_dir] = Future()

    def hash_them() -> None:
        try:
            before = folder_stamps(path)
            made.set_result((before, _weights_fingerprint(path, memo_dir)))
        except BaseException as exc:  # noqa: BLE001 - the fingerprint asked for later computes it again and says why
            made.set_exception(exc)

    threading.Thread(target=hash_them, name="timefoil-weights-hash", daemon=True).start()


def weights_fingerprint(path: str, memo_dir: str | None = None) -> str:
    """``_weights_fingerprint``, taken from the hash started while the model loaded where there
    was one and no file of the folder was written since (else, or where it failed, computed
    again here, where a failure raises for the caller)."""
    with _HASHING_LOCK:
        started = _HASHING.pop((path, memo_dir), None)
    if started is not None:
        try:
            stamps, fingerprint = started.result()
        except Exception:  # noqa: BLE001 - computed again below, where its error reaches the caller
            stamps = fingerprint = None
        try:
            unchanged = fingerprint is not None and stamps == folder_stamps(path)  # no file written since
        except OSError:  # the folder gone: computed again below, which says so
            unchanged = False
        if unchanged:
            return fingerprint
    return _weights_fingerprint(path, memo_dir)


def folder_stamps(path: str) -> list:
    """(name, size, modification time, status-change time, inode) of each file of a folder:
    what tells a file written again (ctime too: one rewritten in place with its mtime put back)."""
    stamps = []
    for name in sorted(os.listdir(path)):
        try:
            st = os.stat(os.path.join(path, name))
        except OSError:  # gone since it was listed: written again, for what the stamps say
            stamps.append((name, None))
            continue
        stamps.append((name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return stamps


def _weights_fingerprint(path: str, memo_dir: str | None = None) -> str:
    """For a local directory: the config's bytes, each weight file's name and content, and the
    bytes of the Python files a remote-code model runs (a folder without any keeps the same
    form). A checkpoint saved again into the same folder with the same shapes changes it; a
    snapshot of the hub's cache is named by its commit instead of its files' bytes. ``memo_dir``:
    the cache folder that keeps the weights' hashes (the run's --cache-dir; else the default)."""
    if not os.path.isdir(path):
        return path
    names = sorted(f for f in os.listdir(path) if f.endswith(WEIGHT_FILES + (".json",)))
    snapshot = HUB_SNAPSHOT.search(os.path.realpath(path)) or HUB_SNAPSHOT.search(os.path.abspath(path))
    if snapshot:
        files: Any = {"revision": snapshot.group(1),
                      "sizes": [(f, os.path.getsize(os.path.join(path, f))) for f in names]}
    else:
        files = [(f, os.path.getsize(os.path.join(path, f))) for f in names if not f.endswith(WEIGHT_FILES)]
        files += content_hashes(path, [f for f in names if f.endswith(WEIGHT_FILES)], memo_dir)
        files.sort()
    return _folder_hash(path, files)


def sized_weights_fingerprint(path: str) -> str:
    """The fingerprint runs made before the weights' content counted hold: names and sizes only
    (``check`` tells such a run from one answered by other weights)."""
    listing = sorted((f, os.path.getsize(os.path.join(path, f))) for f in os.listdir(path)
                     if f.endswith((".safetensors", ".bin", ".gguf", ".json")))
    return _folder_hash(path, listing)


def _folder_hash(path: str, files: Any) -> str:
    config = os.path.join(path, "config.json")
    code = code_fingerprint(path)
    return stable_hash({"files": files, "config": file_hash(config) if os.path.exists(config) else None,
                        **({"code": code} if code else {})})


def content_hashes(folder: str, names: list[str], memo_dir: str | None = None) -> list[tuple[str, int, str]]:
    """(name, size, sha256) of each weight file, memoised on disk (in ``memo_dir``, the run's cache
    folder) by its path, size, modification time, status-change time and inode: a load hashes
    the gigabytes of a checkpoint once, not each time. A file written again has a new inode or
    mtime, and one rewritten in place with its old mtime put back (``dd conv=notrunc`` then
    ``touch -d``, ``rsync --inplace -t``) a new ctime, which the kernel sets and no call can
    set back: each is hashed again."""
    memo_path = os.path.join(memo_dir or default_cache_dir(), MEMO)
    memo = _read_memo(memo_path)
    found, changed = [], False
    for name in names:
        full = os.path.abspath(os.path.join(folder, name))
        st = os.stat(full)
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        known = memo.get(full)
        if not (isinstance(known, dict) and known.get("stamp") == stamp and isinstance(known.get("sha256"), str)):
            known = memo[full] = {"stamp": stamp, "sha256": file_hash(full)}
            changed = True
        found.append((name, st.st_size, known["sha256"]))
    if changed:  # entries of files gone since are dropped, so the memo stays the size of what is here
        _write_memo(memo_path, {f: known for f, known in memo.items() if os.path.exists(f)})
    return found


def model_files(path: str, memo_dir: str | None = None) -> dict[str, str]:
    """What each file the fingerprint reads holds, by name (weight files and config.json by their
    content, the other .json files by size, model code by content; nothing for a hub id). Kept
    in run.json, so that a refusal can name the file that changed since, weight file or not."""
    if not os.path.isdir(path) or HUB_SNAPSHOT.search(os.path.realpath(path)):
        return {}
    names = sorted(f for f in os.listdir(path) if f.endswith(WEIGHT_FILES + (".json", ".py")))
    files = {name: sha for name, _, sha in content_hashes(path, [f for f in names if f.endswith(WEIGHT_FILES)],
                                                           memo_dir)}
    for name in names:
        if not name.endswith(WEIGHT_FILES):
            full = os.path.join(path, name)
            files[name] = file_hash(full) if name == "config.json" or name.endswith(".py") else \
                f"{os.path.getsize(full)} bytes"
    return files


def files_changed(before: dict, now: dict) -> str:
    """Which files of a model folder changed between two ``model_files``, in words: the weight
    files said as such, any other file (config.json, model code) named as not being one."""
    changed = sorted(n for n in set(before) | set(now) if before.get(n) != now.get(n))
    others = [n for n in changed if not n.endswith(WEIGHT_FILES)]
    named = f"{', '.join(others[:3])}{' and more' if len(others) > 3 else ''}"
    if others and len(others) == len(changed):
        return f"{named} changed since; {'it is not a weight file' if len(others) == 1 else 'none is a weight file'}"
    # the same listing (the fingerprint's other parts differ) is said as the weights, as before
    return "the model's weight files" + (f" and {named}" if others else "") + " changed since"


def _read_memo(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            memo = json.load(handle)
        return memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):  # none yet, or damaged: hashing again is only slower
        return {}


def _write_memo(path: str, memo: dict) -> None:
    """Written whole (a file beside it, then renamed); a cache that cannot be written keeps no memo."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(memo, handle)
        os.replace(partial, path)
    except OSError:
        pass


def code_fingerprint(folder: str) -> dict[str, str]:
    """Each .py file in ``folder`` (a remote-code model's configuration and modeling code): its hash."""
    if not os.path.isdir(folder):
        return {}
    return {f: file_hash(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".py")}


def loaded_code_fingerprint(model) -> dict[str, str]:
    """The code a remote-code model from the hub ran: the .py files beside its modeling module
    (transformers copies a repository's code files into one folder of its modules cache)."""
    import inspect

    try:
        return code_fingerprint(os.path.dirname(inspect.getfile(type(model))))
    except (TypeError, OSError):
        return {}


def refuse_untrusted_code(path: str, config: dict, trust_remote_code: bool) -> None:
    """A model whose config names its own Python classes (``auto_map``: MiniCPM-V, Phi-3.5-Vision,
    InternLM-XComposer ship this way) runs that code when it loads: refused in one line unless
    the user said to trust it (transformers' own refusal runs over several lines)."""
    if config.get("auto_map") and not trust_remote_code:
        raise ValueError(f"{path} ships its own model code (auto_map in config.json), which would run on this "
                         "machine when it loads; pass --model-arg trust_remote_code=true to run it")


def language_model_types() -> set[str]:
    """The architectures transformers loads as image-text-to-text or multimodal LMs."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
                                                        MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)

    return set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES) | set(MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)


def refuse_without_language(config) -> None:
    """A video encoder or classifier (VideoMAE, V-JEPA 2, TimeSformer...) has a video processor
    but no language head: no request kind can be asked of it, so it is refused in one line."""
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    model_type = getattr(config, "model_type", "")
    if model_type in VIDEO_PROCESSOR_MAPPING_NAMES and model_type not in language_model_types():
        hint = " (PE-Video: clip:<folder>)" if model_type == "pe_video" else ""
        raise ValueError(f"{model_type} is a video encoder or classifier without a language head: hf: answers with "
                         f"language models only{hint}")


def takes_vision(config) -> bool:
    """Whether a model of ``config`` is shown images or video: its architecture is one of
    transformers' image-text-to-text or multimodal LMs (an omni model keeps its vision config
    inside its thinker's), or its config has a vision part (a remote-code model)."""
    return getattr(config, "model_type", "") in language_model_types() or hasattr(config, "vision_config")


def model_class_of(config):
    """The auto class that loads a model of ``config`` with its generation head."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoModelForMultimodalLM
    from transformers.models.auto.modeling_auto import (MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
                                                        MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES)

    model_type = getattr(config, "model_type", "")
    if "AutoModelForCausalLM" in (getattr(config, "auto_map", None) or {}):
        return AutoModelForCausalLM  # remote-code video LLMs (MiniCPM-V, Phi-3.5-Vision) register as causal LMs
    if model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES or hasattr(config, "vision_config"):
        return AutoModelForImageTextToText
    if model_type in MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES:  # omni models: text, images, video, audio
        return AutoModelForMultimodalLM
    return AutoModelForCausalLM


def load_pretrained(path: str, *, dtype: str = "float32", device_map: str | None = None,
                    revision: str | None = None, gguf_file: str | None = None, trust_remote_code: bool = False,
                    attention: str | None = None, device: str | None = None):
    """Model and tokenizer from a hub id or a folder (a video LLM's processor is not built
    here: timefoil makes its inputs itself, see hf_inputs). ``dtype`` "auto": the checkpoint's
    own; ``attention``: the attn_implementation, None for transformers' own choice; ``device``:
    where inputs will go, named with the other settings if the weights do not fit."""
    from transformers import AutoConfig, AutoTokenizer, PretrainedConfig

    from ...core.weights import quiet_transformers

    quiet_transformers()
    kwargs: dict[str, Any] = {"revision": revision} if revision else {}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if not gguf_file:  # the config's plain JSON, read before any of the model's own code could be imported
        refuse_untrusted_code(path, PretrainedConfig.get_config_dict(path, **kwargs)[0], trust_remote_code)
    if trust_remote_code:
        kwargs["trust_remote_code"] = True
    config = AutoConfig.from_pretrained(path, **kwargs)
    refuse_without_language(config)
    refuse_unfaithful(getattr(config, "model_type", ""))
    model_class = model_class_of(config)
    tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    if attention:
        kwargs["attn_implementation"] = attention
    try:
        model = model_class.from_pretrained(path, dtype=torch_dtype(dtype), device_map=device_map, **kwargs)
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
    else:
        model = answering_part(model)
        # no layer of its forward reads the device (sync_free): installed on this instance only
        sync_free.install(model, getattr(config, "model_type", ""))
        return model, tokenizer
    # left the except block first: what the half-loaded model held is freed, not kept by a traceback
    release_memory()
    raise ValueError(f"{path}: " + out_of_memory("loading its weights", device=device or loaded_on(device_map),
                                                 device_map=device_map, dtype=dtype))


def loaded_on(device_map: str | None) -> str:
    """The device inputs go to for a ``device_map`` as placement fills it in: the map's device
    itself, the first GPU for auto, the CPU without one."""
    if device_map is None:
        return "cpu"
    return device_map if device_map.startswith(("cuda", "mps")) else "cuda:0"


def answering_part(model):
    """The part of a model that reads and writes text: an omni model (Qwen2.5-Omni, Qwen3-Omni)
    loads as a thinker that answers and a talker that speaks, and only the thinker has a forward."""
    import torch

    thinker = getattr(model, "thinker", None)
    has_forward = type(model).forward is not torch.nn.Module.forward
    return thinker if thinker is not None and not has_forward else model


__all__ = ["code_fingerprint", "language_model_types", "load_pretrained", "loaded_code_fingerprint", "model_class_of",
           "hash_weights_meanwhile", "refuse_untrusted_code", "refuse_without_language", "sized_weights_fingerprint",
           "takes_vision", "model_files", "files_changed", "weights_fingerprint"]
