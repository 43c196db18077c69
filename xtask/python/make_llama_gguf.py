"""Writes a llama-architecture GGUF with seeded random weights on llama.cpp's shipped vocabulary.

benchpass measures speed, not quality, so the weights are noise; they are seeded, so the file
(and its SHA-256) is the same on every machine. The output rows of EOS, control and byte tokens
are zeroed so that greedy decoding never stops early or emits half a character.

usage: make_llama_gguf.py GGUF_PY_DIR VOCAB.gguf OUT.gguf SIZE   (SIZE: tiny or small)
"""

import sys

SIZES = {
    # name: (n_embd, n_layer, n_head, n_ff)   parameters ≈ 2·32000·n_embd + layers
    "tiny": (128, 2, 4, 384),  # about 8.6 M
    "small": (512, 4, 8, 1536),  # about 45 M
}


def main() -> None:
    gguf_py, vocab_path, out_path, size = sys.argv[1:5]
    sys.path.insert(0, gguf_py)
    import numpy as np
    import gguf

    n_embd, n_layer, n_head, n_ff = SIZES[size]
    vocab = gguf.GGUFReader(vocab_path)

    def field(name):
        f = vocab.fields[name]
        return f.contents()

    tokens = field("tokenizer.ggml.tokens")
    scores = field("tokenizer.ggml.scores")
    token_types = field("tokenizer.ggml.token_type")
    n_vocab = len(tokens)
    eos = field("tokenizer.ggml.eos_token_id")

    rng = np.random.default_rng(20261130)

    def weights(*shape):
        # numpy shape is (rows, cols); GGUF stores it reversed, as llama.cpp expects.
        return (rng.standard_normal(shape, dtype=np.float32) * (1.0 / np.sqrt(shape[-1]))).astype(np.float32)

    writer = gguf.GGUFWriter(out_path, "llama")
    writer.add_name(f"benchpass-{size}-random")
    writer.add_context_length(4096)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(n_vocab)
    writer.add_tokenizer_model(field("tokenizer.ggml.model"))
    writer.add_tokenizer_pre(field("tokenizer.ggml.pre"))
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(token_types)
    writer.add_bos_token_id(field("tokenizer.ggml.bos_token_id"))
    writer.add_eos_token_id(eos)
    writer.add_unk_token_id(field("tokenizer.ggml.unknown_token_id"))
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    writer.add_tensor("token_embd.weight", weights(n_vocab, n_embd))
    for i in range(n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{i}.{name}.weight", weights(n_embd, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weights(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weights(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weights(n_embd, n_ff))
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    output = weights(n_vocab, n_embd)
    # Token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    for token_id, kind in enumerate(token_types):
        if token_id == eos or kind in (2, 3, 5, 6):
            output[token_id, :] = 0.0
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
