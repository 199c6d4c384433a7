#!/usr/bin/python3
"""Train the SentencePiece BPE tokenizer for the default model.

Llama-style layout, which is what GGUF's tokenizer.ggml.model="llama" means:
<unk>=0, <s>=1, </s>=2, then the 256 byte pieces <0x00>..<0xFF> at ids 3..258
(byte_fallback puts them right after the control ids), then the learned merges,
scored by merge rank. Normalization is the identity and extra whitespace is kept
so an engine only has to replace ' ' by U+2581 and add the dummy prefix; it
never needs NFKC tables.
"""
import argparse
import os
import sys

import sentencepiece as spm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build-train", help="folder holding train.txt")
    ap.add_argument("--vocab", type=int, default=2048)
    args = ap.parse_args()
    prefix = os.path.join(args.out, "kjv")
    spm.SentencePieceTrainer.train(
        input=os.path.join(args.out, "train.txt"),
        model_prefix=prefix,
        model_type="bpe",
        vocab_size=args.vocab,
        character_coverage=1.0,
        byte_fallback=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        split_digits=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    # Check the layout the GGUF export and the engine rely on.
    assert sp.id_to_piece(0) == "<unk>" and sp.is_unknown(0)
    assert sp.id_to_piece(1) == "<s>" and sp.is_control(1)
    assert sp.id_to_piece(2) == "</s>" and sp.is_control(2)
    for b in range(256):
        assert sp.id_to_piece(3 + b) == f"<0x{b:02X}>" and sp.is_byte(3 + b), b
    assert sp.get_piece_size() == args.vocab
    text = "And God said, Let there be light: and there was light."
    ids = sp.encode(text)
    assert sp.decode(ids) == text
    print(f"vocab {sp.get_piece_size()}; {text!r} -> {len(ids)} tokens:",
          [sp.id_to_piece(i) for i in ids])
    for name in ("train", "valid"):
        with open(os.path.join(args.out, f"{name}.txt"), encoding="utf-8") as f:
            lines = [l for l in f.read().split("\n") if l]
        n_tok = sum(len(x) for x in sp.encode(lines))
        n_chr = sum(len(l) for l in lines)
        print(f"{name}: {n_tok} tokens, {n_chr / n_tok:.2f} chars/token")


if __name__ == "__main__":
    sys.exit(main())
