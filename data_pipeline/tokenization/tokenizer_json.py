"""A SentencePiece model as a Hugging Face `tokenizers` pipeline (tokenizer.json) that gives
`AlbertTokenizer`'s ids: what `convert --to transformers` ships beside spiece.model.

Without it, transformers builds its fast ALBERT tokenizer from spiece.model by its own
conversion, which differs from SentencePiece on most sentences: the model's user-defined
symbols (ALBERT's `( ) " - . – £ €`) become added tokens that split the text before the
model sees it, so the "▁" standing alone before "." is lost (`film ▁ .` → `film .`) and one
is prepended after a hyphen inside a word (`ex - wi fe` → `ex - ▁wi fe`); a whitespace
pre-split adds more. A user loading the export with `AutoTokenizer` got ids the model was
never trained on.

The pipeline here, in SentencePiece's order:
- normalizer: ALBERT's `normalize_text` (whitespace runs → one space, stripped; `` and '' →
  "; NFKD without combining marks unless `keep_accents`; lowercase when `do_lower_case`),
  then the model's own character map (nmt_nfkc for ALBERT's, as compiled into the model)
  and its whitespace rule once more (the map deletes controls: `a\\x7f b` has two spaces);
- pre-tokenizer: one "▁" in front and every space read as "▁", with no split, so the
  Unigram lattice spans the whole text as SentencePiece's does;
- model: Unigram over the model's pieces and scores, the user-defined symbols kept as
  ordinary pieces (each is the only piece of its character, so the lattice takes it), only
  the control pieces (<pad>, [CLS], [SEP], [MASK]) and <unk> as special tokens;
- the official digit-comma rule (`AlbertTokenizer.tokenize`: a piece ending in
  "<digit>," is re-encoded without the comma, the comma standing alone) as a score: such
  pieces get `NEVER`, so the lattice takes the digits and the comma apart;
- post-processor: [CLS] A [SEP] (B [SEP]), segment ids 0 then 1, as training packs them.

Left as transformers does for every model: a special token's text typed in the input
("[MASK]", "<unk>") is that special token, where SentencePiece reads its characters. Two
segmentations of equal score may be broken differently (Viterbi ties).
"""

from __future__ import annotations

import json

from data_pipeline.tokenization.sentencepiece_tokenizer import ends_in_digit_comma

# The score given to a piece the official digit-comma rule never lets stand: far below any
# piece's log-probability, so no segmentation that avoids it is worse.
NEVER = -1.0e6

# What Python's str.split() splits on (normalize_text's whitespace): Unicode's White_Space
# and the four information separators U+001C-001F.
_SPACE = r"[\s\x{1c}-\x{1f}]"
_UNIGRAM = 1  # TrainerSpec.model_type
_CONTROL, _UNKNOWN = 3, 2  # ModelProto.SentencePiece.type


def _model_proto(model_bytes: bytes):
    """The SentencePiece ModelProto of `model_bytes`; ValueError when they are not one."""
    from google.protobuf.message import DecodeError
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(model_bytes)
    except DecodeError as e:
        raise ValueError(f"not a SentencePiece model ({e})") from None
    if not proto.pieces:
        raise ValueError("not a SentencePiece model (no pieces)")
    return proto


def is_unigram(model_bytes: bytes) -> bool:
    """Whether `model_bytes` is a Unigram SentencePiece model (what `tokenizer_json`
    converts; ALBERT's and every model this project trains are)."""
    try:
        return _model_proto(model_bytes).trainer_spec.model_type == _UNIGRAM
    except ValueError:
        return False


def tokenizer_json(
    model_bytes: bytes, do_lower_case: bool = True, keep_accents: bool = False
) -> str:
    """tokenizer.json (a `tokenizers.Tokenizer` serialized) for the Unigram SentencePiece
    model `model_bytes` under ALBERT's normalization with these options; see the module
    docstring. ValueError for bytes that are not a SentencePiece model, or a model of another
    type (BPE, word, char)."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    proto = _model_proto(model_bytes)
    if proto.trainer_spec.model_type != _UNIGRAM:
        raise ValueError(
            "tokenizer.json is written for Unigram SentencePiece models; this one is of "
            f"model type {proto.trainer_spec.model_type}"
        )
    vocab = [(p.piece, NEVER if ends_in_digit_comma(p.piece) else p.score) for p in proto.pieces]
    unk_id = next(i for i, p in enumerate(proto.pieces) if p.type == _UNKNOWN)
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    steps = [
        normalizers.Replace(Regex(rf"^{_SPACE}+|{_SPACE}+$"), ""),
        normalizers.Replace(Regex(f"{_SPACE}+"), " "),
        normalizers.Replace("``", '"'),
        normalizers.Replace("''", '"'),
    ]
    if not keep_accents:
        steps += [normalizers.NFKD(), normalizers.StripAccents()]
    if do_lower_case:
        steps.append(normalizers.Lowercase())
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if charsmap:
        steps.append(normalizers.Precompiled(charsmap))
    if proto.normalizer_spec.remove_extra_whitespaces:  # (again: the map deletes some characters)
        steps += [
            normalizers.Replace(Regex("^ +| +$"), ""),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    tokenizer.normalizer = normalizers.Sequence(steps)
    metaspace = dict(replacement="\u2581", prepend_scheme="always", split=False)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(**metaspace)
    tokenizer.decoder = decoders.Metaspace(**metaspace)
    special = [p.piece for p in proto.pieces if p.type in (_CONTROL, _UNKNOWN)]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in special])
    ids = {p.piece: i for i, p in enumerate(proto.pieces)}
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    return json.dumps(json.loads(tokenizer.to_str()), ensure_ascii=False, indent=1)
