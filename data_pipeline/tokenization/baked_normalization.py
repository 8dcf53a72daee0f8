"""ALBERT's text normalization compiled into a SentencePiece model's own normalizer.

On-device models (LiteRT) have no string ops: no regex, no lowercasing, no Unicode
normalization. What they do have is tensorflow-text's `FastSentencepieceTokenizer`, one
LiteRT custom op that applies the SentencePiece model's `precompiled_charsmap` (a
longest-match rewrite table) before segmenting. `albert_normalized_spm` rewrites that table
so that it is ALBERT's normalization (`tokenization.normalize_text`: whitespace → " ", ``
and '' → ", NFKD with combining marks dropped unless `keep_accents`, lowercasing under
`do_lower_case`) followed by the model's own rules (nmt_nfkc for ALBERT's models):

  * one rule per code point whose normalized form differs, computed with the Python
    reference itself, so the table and `normalize_text` agree character by character;
  * the original table's multi-character rules (Hangul jamo sequences and the like) where
    composing the per-character results would differ from normalizing the whole key;
  * the two-character rules `` → " and '' → ".

SentencePiece's own `remove_extra_whitespaces` then collapses and strips spaces as
`" ".join(text.split())` does. The segmentation model (pieces and scores) is unchanged.

What a context-free table cannot express, and so differs from `AlbertTokenizer.encode`:
  * final sigma: Python's `str.lower()` turns "Σ" at the end of a word into "ς"; the table
    always gives "σ" (uncased models, Greek capitals only);
  * very long unbroken lattices (~1000 characters without a space): FastSentencepiece and
    Python SentencePiece may break a near-tie differently (the Python tokenizer encodes word
    by word; see `AlbertTokenizer`).
"""

from __future__ import annotations

import functools
import sys

from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer, normalize_text


def _normalization_rules(
    model_proto: bytes, do_lower_case: bool, keep_accents: bool
) -> list[tuple[str, str]]:
    """(source, target) rewrite rules: ALBERT's normalization, then the model's own."""
    import sentencepiece as spm

    own = spm.SentencePieceNormalizer(
        model_proto=model_proto,
        add_dummy_prefix=False,
        escape_whitespaces=False,
        remove_extra_whitespaces=False,
    )

    def albert(text: str) -> str:  # one character: spaces stay (SentencePiece collapses)
        if text.isspace():
            return " "
        return normalize_text(text, do_lower_case, keep_accents)

    rules = {}
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:  # surrogates are not characters
            continue
        c = chr(cp)
        target = own.normalize(albert(c))
        if target != c:
            rules[c] = target
    for key, _ in own.Decompile():
        if len(key) > 1:
            whole = own.normalize("".join(albert(c) for c in key))
            if whole != "".join(rules.get(c, c) for c in key):
                rules[key] = whole
    rules["``"] = '"'
    rules["''"] = '"'
    return sorted(rules.items())


@functools.lru_cache(maxsize=4)
def _baked(model_proto: bytes, do_lower_case: bool, keep_accents: bool) -> bytes:
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    rules = _normalization_rules(model_proto, do_lower_case, keep_accents)
    compiled = model_pb2.NormalizerSpec()
    compiled.ParseFromString(
        spm.SentencePieceNormalizer(norm_map=rules).serialized_normalizer_spec()
    )
    proto = model_pb2.ModelProto()
    proto.ParseFromString(model_proto)
    proto.normalizer_spec.precompiled_charsmap = compiled.precompiled_charsmap
    proto.normalizer_spec.name = (
        f"albert(lower={int(do_lower_case)},accents={int(keep_accents)})+"
        f"{proto.normalizer_spec.name}"
    )
    return proto.SerializeToString()


def albert_normalized_spm(tokenizer: AlbertTokenizer) -> bytes:
    """The serialized SentencePiece model of `tokenizer` with ALBERT's normalization (its
    casing and accent settings) baked into `precompiled_charsmap` (see module docstring).
    Same size as the original; takes a few seconds (once per process and setting)."""
    return _baked(tokenizer.model_proto, tokenizer.do_lower_case, tokenizer.keep_accents)
