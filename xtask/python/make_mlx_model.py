"""Writes a Hugging Face-style llama model folder with seeded random weights, for mlx-lm.

benchpass measures speed, not quality, so the weights are noise; they are seeded and the
tokenizer is trained single-threaded, so every file in the folder (and its SHA-256) is the
same on every run. The tokenizer is a byte-level BPE trained on the given corpus, so no model
hub is needed. The output rows of special tokens, of tokens that are not whole UTF-8 text and
of padding rows are zeroed so that greedy decoding never stops early, never emits half a
character and sends one text piece per generated token.

usage: make_mlx_model.py CORPUS.txt OUT_DIR SIZE   (SIZE: tiny or small)
"""

import json
import os
import sys
import unicodedata
from pathlib import Path

# One thread, so that merge order cannot depend on scheduling. Set before tokenizers is
# imported: its thread pool reads them once, at first use.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

SIZES = {
    # name: (hidden, layers, heads, intermediate, vocab)   parameters ≈ 2·vocab·hidden + layers
    "tiny": (128, 2, 4, 384, 8000),  # about 2.5 M
    "small": (512, 4, 8, 1536, 16000),  # about 30 M
}

SEED = 20261130
CONTEXT = 4096
BOS, EOS, UNK = "<s>", "</s>", "<unk>"

# Role-prefixed turns; the prompt ends with the assistant prefix so that the model answers.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ message['role'] | capitalize }}: {{ message['content'] }}\n\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)


def train_tokenizer(corpus: str, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    # GPT-2 style: no prefix space, so decoding gives back exactly the text that was encoded.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    # mlx-lm picks its streaming detokenizer from this decoder's type.
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[BOS, EOS, UNK],
        # All 256 bytes, so that any text can be encoded, not only the corpus's characters.
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus.splitlines(keepends=True), trainer)
    bos_id = tokenizer.token_to_id(BOS)
    # Plain (non-chat) prompts start with BOS like llama's; the chat template writes its own.
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    return tokenizer


def unsafe_token_ids(tokenizer) -> list:
    """Ids that greedy decoding must never pick: special tokens; tokens whose bytes are not
    complete UTF-8 text on their own, or are a lone space, which mlx-lm's streaming detokenizer
    holds back until the next token (that token would then send no text); and tokens with
    control characters other than newline and tab, which no client wants to print."""
    from tokenizers import pre_tokenizers

    byte_of = {ch: b for b, ch in enumerate(_byte_level_chars(pre_tokenizers))}
    ids = []
    for token, token_id in tokenizer.get_vocab(with_added_tokens=True).items():
        if token in (BOS, EOS, UNK):
            ids.append(token_id)
            continue
        try:
            text = bytes(byte_of[ch] for ch in token).decode("utf-8")
        except UnicodeDecodeError:
            ids.append(token_id)
            continue
        if text == " " or any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in text):
            ids.append(token_id)
    return sorted(ids)


def _byte_level_chars(pre_tokenizers) -> list:
    # GPT-2's byte-to-character table: printable bytes map to themselves, the rest to U+0100 on.
    # Checked against the library's alphabet so that a different table fails loudly here.
    printable = set(range(0x21, 0x7E + 1)) | set(range(0xA1, 0xAC + 1)) | set(range(0xAE, 0xFF + 1))
    chars, extra = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    assert sorted(chars) == sorted(pre_tokenizers.ByteLevel.alphabet())
    return chars


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    corpus_path, out_dir, size = sys.argv[1:4]
    import numpy as np
    from safetensors.numpy import save_file

    hidden, n_layer, n_head, n_ff, vocab_target = SIZES[size]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = train_tokenizer(Path(corpus_path).read_text(encoding="utf-8"), vocab_target)
    n_tokens = tokenizer.get_vocab_size(with_added_tokens=True)
    # A small corpus runs out of merges before the target; the embedding keeps the target size
    # (padded, as many released models are) so that the compute per token matches the SIZE.
    vocab_size = max(vocab_target, n_tokens)
    bos_id, eos_id = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
    tokenizer.save(str(out / "tokenizer.json"), pretty=True)

    rng = np.random.default_rng(SEED)

    def weights(*shape):
        # (out, in) like torch's Linear; scaled so that activations keep about unit variance.
        scale = np.float32(1.0 / np.sqrt(shape[-1]))
        return rng.standard_normal(shape, dtype=np.float32) * scale

    def ones(n):
        return np.ones(n, dtype=np.float32)

    tensors = {"model.embed_tokens.weight": weights(vocab_size, hidden)}
    for i in range(n_layer):
        p = f"model.layers.{i}."
        tensors[p + "input_layernorm.weight"] = ones(hidden)
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            tensors[p + f"self_attn.{name}.weight"] = weights(hidden, hidden)
        tensors[p + "post_attention_layernorm.weight"] = ones(hidden)
        tensors[p + "mlp.gate_proj.weight"] = weights(n_ff, hidden)
        tensors[p + "mlp.up_proj.weight"] = weights(n_ff, hidden)
        tensors[p + "mlp.down_proj.weight"] = weights(hidden, n_ff)
    tensors["model.norm.weight"] = ones(hidden)
    lm_head = weights(vocab_size, hidden)
    # A zero row gives logit 0, below the maximum of thousands of random logits, so greedy
    # decoding never picks it.
    lm_head[unsafe_token_ids(tokenizer)] = 0.0
    lm_head[n_tokens:] = 0.0
    tensors["lm_head.weight"] = lm_head
    # The "pt" tag lets transformers read the file as well; mlx-lm ignores it.
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})

    write_json(
        out / "config.json",
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": hidden,
            "num_hidden_layers": n_layer,
            "num_attention_heads": n_head,
            "num_key_value_heads": n_head,
            "head_dim": hidden // n_head,
            "intermediate_size": n_ff,
            "hidden_act": "silu",
            "vocab_size": vocab_size,
            "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0,
            "max_position_embeddings": CONTEXT,
            "tie_word_embeddings": False,
            "attention_bias": False,
            "mlp_bias": False,
            "bos_token_id": bos_id,
            "eos_token_id": eos_id,
            "torch_dtype": "float32",
        },
    )
    write_json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS,
            "eos_token": EOS,
            "unk_token": UNK,
            "model_max_length": CONTEXT,
            "clean_up_tokenization_spaces": False,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    write_json(
        out / "special_tokens_map.json", {"bos_token": BOS, "eos_token": EOS, "unk_token": UNK}
    )
    write_json(
        out / "generation_config.json",
        {"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False},
    )

    n_params = sum(t.size for t in tensors.values())
    print(
        f"{out}: {size}, {n_params / 1e6:.1f} M parameters, "
        f"{n_tokens} tokens, vocab_size {vocab_size}"
    )


if __name__ == "__main__":
    main()
