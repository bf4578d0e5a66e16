"""A tiny, randomly initialised causal LM with a tokenizer trained on the fly.

The LoRA controller and the `hf` backend tests need a real transformers model that loads through
the ordinary ``AutoTokenizer.from_pretrained`` / ``AutoModelForCausalLM.from_pretrained`` path,
without downloading weights. ``build_tiny_model`` makes one:

* a byte-level BPE tokenizer (``tokenizers``) trained on a built-in seed corpus plus any ``texts``,
  with ChatML special tokens and a Qwen-style ``chat_template`` (``add_generation_prompt``,
  ``enable_thinking``), wrapped as ``PreTrainedTokenizerFast``;
* arch ``"qwen3_5"``: a ``Qwen3_5TextConfig`` model whose layers mix ``linear_attention`` (gated
  DeltaNet, run by the pure-torch fallback on CPU) and ``full_attention``, as Qwen3.5 does;
  arch ``"llama"``: a plain ``LlamaConfig`` model.

Weights come from ``torch.manual_seed(seed)``, so a build is reproducible. A marker file
(``tiny_build.json``) records the build arguments; a later call with the same arguments reuses
the folder instead of rebuilding. The model knows nothing: it is a stand-in for a pretrained base.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MARKER = "tiny_build.json"
# Bump when the build recipe changes so stale caches are rebuilt rather than reused.
BUILD_VERSION = 4
# The output head is drawn 8x wider than the 0.02 init: behind a final RMSNorm the logit range is
# about |head row| * sqrt(width), and at 0.02 a 64-wide model cannot put more than ~70% on one of
# a few actions. At 0.16 the range is near 10, as in pretrained LMs. (Scaling every weight up
# instead made the random layers noisier and a LoRA on long prompts learned far worse.)
HEAD_SCALE = 8.0

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
# Qwen adds the thinking markers as ordinary (non-special) added tokens: decoding keeps them.
THINK_TOKENS = ["<think>", "</think>"]

# ChatML as Qwen uses it. With enable_thinking false the generation prompt carries an empty think
# block, as Qwen3.5's template does; otherwise it opens one for the model to fill.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}"
    "{{- '<think>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)

# Enough text that the BPE learns the words the toolkit's prompts use (tables, programs, the
# controller's state lines and its four actions) rather than spelling them byte by byte.
_SEED_LINES = [
    "You transform tables. Given an input table and its output table, transform the new input.",
    "Input table:", "Output table:", "New input:", "Answer with the output table as JSON.",
    'def transform(table):\n    out = []\n    for row in table:\n        out.append(row)\n    return out',
    "    return [[cell.strip() for cell in row] for row in table]",
    "    header, rows = table[0], table[1:]\n    return [list(col) for col in zip(*table)]",
    "import re\nfrom collections import defaultdict\n",
    '[["name", "age", "city"], ["Alice", "30", "Paris"], ["Bob", "25", "Berlin"]]',
    '[["2020-01-01", "12.5"], ["2020-02-01", "13.0"], ["", "n/a"]]',
    "```python\n", "```json\n", "```\n",
    "The program raised an exception: IndexError: list index out of range",
    "error: syntax timeout memory exception bad_output no_transform forbidden crash",
    "round 0 round 1 round 2 repairs left: 1 passes public example: yes no",
    "visible_pass=yes visible_pass=no pass=yes pass=no agree=yes agree=no",
    "direct parse: ok failed rows cols shape match mismatch tokens",
    "state: start after_round last_round",
    "direct: parsed cols_match=1 rows_off=+0.0 copy=1.0",
    "direct: unparsed cols_match=0 rows_off=-1.0 copy=0.0",
    "round 0 write: pass", "round 1 fix: exception", "round 2 fix: fail", "round 1 fix: syntax",
    "program: agrees_direct=0.5 same=0 cols_match=1 rows_off=+0.2 repeated=0",
    "program: agrees_direct=1.0 same=1 cols_match=0 rows_off=-0.5 repeated=1",
    "repairs_left: 0", "repairs_left: 1", "repairs_left: 2",
    "valid: DIRECT WRITE", "valid: DIRECT PROGRAM", "valid: DIRECT FIX", "valid: DIRECT",
    "Action: DIRECT", "Action: WRITE", "Action: FIX", "Action: PROGRAM",
    " DIRECT WRITE FIX PROGRAM",
    "0 1 2 3 4 5 6 7 8 9 10 12 16 20 32 64 100 128 256 1000",
    "the a of to and in is for with on as by that this it from be are was not or",
]
SEED_CORPUS = tuple(_SEED_LINES * 8)


def _train_tokenizer(texts: Iterable[str], vocab_size: int) -> Any:
    """Train a byte-level BPE on the seed corpus plus ``texts``; return a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        # every byte is in the vocabulary, so any text encodes (no unknown token needed)
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = list(SEED_CORPUS) + [t for t in texts if t]
    tok.train_from_iterator(corpus, trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=1024,
    )
    wrapped.add_tokens(THINK_TOKENS)
    return wrapped


def _model_config(arch: str, vocab: int, hidden: int, layers: int, heads: int, tok: Any) -> Any:
    """A tiny config of the requested architecture, with token ids taken from ``tok``."""
    ids = dict(
        vocab_size=vocab,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    head_dim = hidden // heads
    common = dict(
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        head_dim=head_dim,
        max_position_embeddings=1024,
        # untied so the output head can be scaled alone (see HEAD_SCALE)
        tie_word_embeddings=False,
        **ids,
    )
    if arch == "llama":
        from transformers import LlamaConfig

        return LlamaConfig(**common)
    if arch == "qwen3_5":
        from transformers import Qwen3_5TextConfig

        # Qwen3.5 interleaves three gated-DeltaNet layers per full-attention layer; a tiny model
        # keeps the mix (last layer full attention) so both code paths run. The DeltaNet layers
        # use the pure-torch fallback kernels on CPU.
        layer_types = ["linear_attention"] * (layers - 1) + ["full_attention"]
        return Qwen3_5TextConfig(
            layer_types=layer_types,
            linear_num_key_heads=max(1, heads // 2),
            linear_num_value_heads=heads,
            linear_key_head_dim=head_dim,
            linear_value_head_dim=head_dim,
            linear_conv_kernel_dim=4,
            **common,
        )
    raise ValueError(f"unknown tiny model arch {arch!r}: expected 'qwen3_5' or 'llama'")


def _read_marker(out_dir: str) -> dict | None:
    try:
        with open(os.path.join(out_dir, MARKER), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def build_tiny_model(
    out_dir: str,
    *,
    arch: str = "qwen3_5",
    texts: Iterable[str] = (),
    seed: int = 0,
    vocab_size: int = 2000,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
) -> str:
    """Build (or reuse) a tiny random causal LM + tokenizer in ``out_dir``; return ``out_dir``.

    Raises ValueError for an unknown ``arch``, bad sizes, or an ``out_dir`` that already holds
    files not made by this builder (it is never overwritten).
    """
    if arch not in ("qwen3_5", "llama"):
        raise ValueError(f"unknown tiny model arch {arch!r}: expected 'qwen3_5' or 'llama'")
    if num_layers < 1 or hidden_size % num_heads or vocab_size < 300:
        raise ValueError("tiny model needs num_layers >= 1, hidden_size divisible by num_heads, "
                         "vocab_size >= 300 (256 bytes + special tokens)")
    texts = [str(t) for t in texts]
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]
    args = dict(version=BUILD_VERSION, arch=arch, seed=seed, vocab_size=vocab_size,
                hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
                texts_sha256=digest, n_texts=len(texts))
    if _read_marker(out_dir) == args:
        return out_dir
    if os.path.isdir(out_dir) and os.listdir(out_dir) and _read_marker(out_dir) is None:
        raise ValueError(f"{out_dir}: folder exists and was not made by build_tiny_model; "
                         "pick another folder")

    import torch
    from transformers import AutoModelForCausalLM

    tok = _train_tokenizer(texts, vocab_size)
    config = _model_config(arch, len(tok), hidden_size, num_layers, num_heads, tok)
    with torch.random.fork_rng(devices=[]):  # seeded, without moving the caller's RNG
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(HEAD_SCALE)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id

    # Build beside the target and move it in at the end, so an interrupted or concurrent build
    # never leaves a half-written folder that looks finished.
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tiny_build-", dir=parent)
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the build is an ordinary shared folder
    try:
        tok.save_pretrained(tmp)
        model.save_pretrained(tmp)
        with open(os.path.join(tmp, MARKER), "w", encoding="utf-8") as fh:
            json.dump(args, fh, indent=1, sort_keys=True)
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)  # a stale build of ours (checked above)
        try:
            os.rename(tmp, out_dir)
        except OSError:
            # another process finished the same build first; its copy is as good as ours
            if _read_marker(out_dir) != args:
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def pad_vocabulary(folder, size: int) -> int:
    """Give the folder's tokenizer exactly ``size`` ids: filler tokens (distinct strings of the
    byte-level alphabet, never produced by encoding since no merge makes them) fill the ids the
    trained vocabulary leaves free. Returns how many were added."""
    path = Path(folder) / "tokenizer.json"
    tok = json.loads(path.read_text())
    vocab = tok["model"]["vocab"]
    for a in tok.get("added_tokens", []):
        # an added token outside the model's vocabulary would be renumbered past it on loading
        vocab.setdefault(a["content"], a["id"])
    taken = set(vocab.values())
    free = [i for i in range(size) if i not in taken]
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    n = 0
    for i in free:
        j, word = i, ""
        while True:  # base-26 spelling of the id: distinct, and reads as a word when decoded
            word = alphabet[j % 26] + word
            j //= 26
            if not j:
                break
        name = "\u0120" + word  # Ġ is the byte-level space: it decodes to " word"
        while name in vocab:  # a trained token spelled the same: make it longer
            name += "q"
        vocab[name] = i
        n += 1
    path.write_text(json.dumps(tok, ensure_ascii=False))
    return n
