"""The encoder's side of the on-device runner (albert_tf.serving.tflite_predict): `embed`
(the file's signature: text in, tensorflow-text's custom ops tokenize in it) and sentence
vectors in length-sorted groups, as the SavedModel's `vectors` signature groups a request
(`text_ops.by_length(exact=True)`), done by the runner because the file takes one request
at one padded length.

The file pads a call to its longest row, so the runner calls it on length-sorted groups
(`albert_tf.serving.length_groups`: on STS-B dev sentences, batch 32, 6,048 positions
instead of 8,768). Each row's vector does not depend on the padding around it (every
pooling is masked), so the vectors equal one call's to float rounding.
"""

from __future__ import annotations

import numpy as np

from albert_tf.serving.length_groups import FILE_GROUP, length_groups


def grouped_vectors(run, texts: np.ndarray, group: int = FILE_GROUP) -> np.ndarray:
    """`run(signature, **inputs)` of an encoder file, `texts` object [B] of UTF-8 bytes →
    the export's embeddings float32 [B, H] in the request's order: token counts from the
    file's own `tokenize`, then `embed` on each of their `length_groups` of `group` rows."""
    if len(texts) <= group:
        return run("embed", text=texts)["embeddings"]
    empty = np.full(len(texts), b"", dtype=object)
    lengths = run("tokenize", text_a=texts, text_b=empty)["input_mask"].sum(-1)
    takes = length_groups(lengths, group)
    parts = [run("embed", text=texts[take])["embeddings"] for take in takes]
    out = np.empty((len(texts), parts[0].shape[-1]), parts[0].dtype)
    out[np.concatenate(takes)] = np.concatenate(parts)
    return out


class EncoderRunner:
    """The runner of an encoder file (`model`: its tflite_predict.LiteModel): `embed`,
    `vectors`, and `answers` for the command line (a sentence a line: the embedding chosen
    at export and the pooled output)."""

    KIND = "encoder"

    def __init__(self, model):
        self.model = model

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        return False

    def embed(self, texts) -> dict:
        return self.model.run("embed", text=self.model.text_in(texts))

    def vectors(self, texts) -> np.ndarray:
        """embeddings [B, H] as `embed`'s, computed in length-sorted groups."""
        return grouped_vectors(self.model.run, self.model.text_in(texts), self.model.group)

    def answers(self, chunk, source: str, where: str, batch_size: int):
        out = self.embed([line for _, line in chunk])
        for i in range(len(chunk)):
            yield {
                "embedding": out["embeddings"][i].tolist(),
                "pooled_output": out["pooled_output"][i].tolist(),
            }
