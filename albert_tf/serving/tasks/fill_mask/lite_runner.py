"""The fill-mask side of the on-device runner (albert_tf.serving.tflite_predict): texts with
one or more "[MASK]" → for each mask the top-k pieces, their ids, probabilities and the
filled-in texts, around a LiteRT file that maps ids and mask positions to the top-k
(`modules.LiteFillMask`).

The text side is the Python rule itself (data_pipeline.tokenization.masked_text:
`encode_masked`, `filled_text`) with the tokenizer the file carries (its SentencePiece
model, or its WordPiece vocab.txt), so the file answers as the Python `MaskFiller` and the
SavedModel, whose in-graph rule gives the same ids. Each mask is predicted alone, the
other masks kept; a mask is one piece (whole words of several pieces are out of scope).
"""

from __future__ import annotations

import tempfile


def file_tokenizer(metadata: dict, spm_model: bytes | None, vocab: bytes | None):
    """The Python tokenizer of the vocabulary a file carries: an AlbertTokenizer of its
    SentencePiece model, or a WordPieceTokenizer of its vocab.txt (metadata "tokenizer")."""
    wordpiece = metadata.get("tokenizer") == "wordpiece"
    data = vocab if wordpiece else spm_model
    if data is None:
        raise ValueError("the file carries no vocabulary (exported before fill-mask files had one)")
    with tempfile.NamedTemporaryFile(suffix=".txt" if wordpiece else ".model") as f:
        f.write(data)
        f.flush()
        if wordpiece:
            from data_pipeline.tokenization.wordpiece import WordPieceTokenizer

            return WordPieceTokenizer(f.name, metadata["do_lower_case"])
        from data_pipeline.tokenization.sentencepiece_tokenizer import AlbertTokenizer

        return AlbertTokenizer(
            f.name, metadata["do_lower_case"], metadata.get("keep_accents", False)
        )


def fill_texts(run, metadata: dict, tokenizer, texts, batch_size: int = 8, names=None):
    """For each text, for each of its masks (text order), the file's top-k candidates, most
    probable first: [{"token_id", "token", "score", "sequence"}] (`albert_tf.training.
    fill_mask.Fill`'s fields).

    run: the file's serving_default; metadata: its albert_metadata (max_seq_length,
    fixed_length, tokenizer); tokenizer: `file_tokenizer`'s; names: how errors name each
    text (default "text i"). Every text is encoded before the model runs: a text without
    "[MASK]" or too long for max_seq_length is a one-line ValueError naming it."""
    from data_pipeline.tokenization.masked_text import encode_masked, filled_text, padded_batch

    S = metadata["max_seq_length"]
    names = names or [f"text {i}" for i in range(len(texts))]
    encoded = []
    for name, text in zip(names, texts):
        try:
            encoded.append(encode_masked(tokenizer, text, S))
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    wordpiece = metadata.get("tokenizer") == "wordpiece"
    out = []
    for first in range(0, len(encoded), batch_size):
        batch = encoded[first : first + batch_size]
        ids, input_mask, positions = padded_batch(batch, S if metadata["fixed_length"] else None)
        got = run(input_ids=ids, input_mask=input_mask, masked_lm_positions=positions)
        for row, e in enumerate(batch):
            per_mask = []
            for m, span in enumerate(e.mask_spans):
                candidates = []
                for t, s in zip(got["token_ids"][row, m], got["scores"][row, m]):
                    token = tokenizer.id_to_piece(int(t))
                    candidates.append(
                        {
                            "token_id": int(t),
                            "token": token,
                            "score": float(s),
                            "sequence": filled_text(e.text, span, token, wordpiece),
                        }
                    )
                per_mask.append(candidates)
            out.append(per_mask)
    return out


class FillMaskRunner:
    """The runner of a fill-mask file (`model`: its tflite_predict.LiteModel): `fill`, and
    `answers` for the command line (a text with "[MASK]"s a line: {"masks"})."""

    KIND = "fill_mask"

    def __init__(self, model):
        self.model = model
        self._tokenizer = None

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        return True

    def fill(self, texts, batch_size: int = 8, names=None) -> list[list[list[dict]]]:
        """Per text, per "[MASK]": the top-k candidates (`fill_texts`)."""
        model = self.model
        if self._tokenizer is None:
            self._tokenizer = file_tokenizer(model.metadata, model.spm_model, model.vocab)
        texts = [model.text(t) for t in texts]
        return fill_texts(model.run, model.metadata, self._tokenizer, texts, batch_size, names)

    def answers(self, chunk, source: str, where: str, batch_size: int):
        names = [f"{source}:{n}" for n, _ in chunk]
        batch = [line for _, line in chunk]
        yield from ({"masks": m} for m in self.fill(batch, batch_size, names))
