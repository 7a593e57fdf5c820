"""A tiny random-weight llama model in GGUF, written at test time (about 1 MB).

It knows nothing; it exists so the real llama.cpp server has something to load in
milliseconds. The vocabulary is SentencePiece-style: control tokens, one token per printable
ASCII character (space as `▁`) and the 256 byte-fallback tokens, so any text tokenizes and
any JSON the grammar allows can be written.

The weights are random except for one lever that makes the model *terse*: every token
embedding carries a large constant in dimension 0, so the final hidden state has a
positive component there, and the output row of each token has a bias in that dimension.
Closing tokens (`"`, `}`, `]`, `,`) and end-of-sequence get a high bias, whitespace a low
one. Under a JSON-schema grammar the model therefore closes strings and arrays at once and
ends when it may: structured answers come back short and valid, like design §6's neutral
instances, instead of running to `max_tokens`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
N_FF = 128
TRAINED_CONTEXT = 8192  # bench/reply.py --peer runs a whole turn's prompts in 8192

CONTROL = ["<unk>", "<s>", "</s>"]
UNK, BOS, EOS = 0, 1, 2
PRINTABLE = [chr(c) for c in range(0x20, 0x7F)]

_HIGH = {'"': 6.0, "}": 6.0, "]": 6.0, ",": 3.0, "0": 2.0}
_LOW = {" ": -8.0, "\n": -8.0, "\t": -8.0}


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    tokens, scores, types = [], [], []
    for name in CONTROL:
        tokens.append(name)
        scores.append(0.0)
        types.append(2 if name == "<unk>" else 3)  # UNKNOWN, CONTROL
    for char in PRINTABLE:
        tokens.append("▁" if char == " " else char)
        scores.append(-1.0)
        types.append(1)  # NORMAL
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>")
        scores.append(-100.0)
        types.append(6)  # BYTE
    return tokens, scores, types


def _bias(token: str) -> float:
    if token == "</s>":
        return 6.0
    char = " " if token == "▁" else token
    if char in _HIGH:
        return _HIGH[char]
    if char in _LOW or token in ("<0x0A>", "<0x09>", "<0x20>"):
        return -8.0
    return 0.0


def write(path: Path, seed: int = 7) -> Path:
    import gguf

    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)

    def rand(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("novaberg-tiny-random")
    writer.add_context_length(TRAINED_CONTEXT)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(BOS)
    writer.add_eos_token_id(EOS)
    writer.add_unk_token_id(UNK)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    embeddings = rand(n_vocab, N_EMBD, scale=0.1)
    embeddings[:, 0] = 8.0  # the constant the output bias rides on
    output = rand(n_vocab, N_EMBD, scale=0.02)
    output[:, 0] = [_bias(t) for t in tokens]
    writer.add_tensor("token_embd.weight", embeddings)
    for layer in range(N_LAYER):
        prefix = f"blk.{layer}."
        writer.add_tensor(prefix + "attn_norm.weight", np.ones(N_EMBD, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(prefix + name + ".weight", rand(N_EMBD, N_EMBD))
        writer.add_tensor(prefix + "ffn_norm.weight", np.ones(N_EMBD, np.float32))
        writer.add_tensor(prefix + "ffn_gate.weight", rand(N_FF, N_EMBD))
        writer.add_tensor(prefix + "ffn_up.weight", rand(N_FF, N_EMBD))
        writer.add_tensor(prefix + "ffn_down.weight", rand(N_EMBD, N_FF))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, np.float32))
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
