"""The multiple-choice side of the on-device runner (albert_tf.serving.tflite_predict): the
file takes the passage and each option's question + option text (tensorflow-text's custom
ops tokenize in it) and returns the choice. No TensorFlow here."""

from __future__ import annotations


class MultipleChoiceRunner:
    """The runner of a multiple-choice file (`model`: its tflite_predict.LiteModel):
    `choose`, and `answers` for the command line's JSON lines ({"passage", "question",
    "options"} each)."""

    KIND = "multiple_choice"

    def __init__(self, model):
        self.model = model

    @staticmethod
    def takes_ids(metadata: dict) -> bool:
        return False

    def choose(self, passages, questions, options) -> dict:
        """options: [B][C] strings ("" or missing = no such option): probabilities [B, C],
        logits, choice [B]."""
        from data_pipeline.classification.examples import choice_text

        model, text = self.model, self.model.text
        model.check_rows(passage=passages, question=questions, options=options)
        width = max([len(o) for o in options] + [1])
        choices = [
            [
                choice_text(text(q), text(o)) if i < len(opts) and text(o) else ""
                for i, o in enumerate(list(opts) + [""] * (width - len(opts)))
            ]
            for q, opts in zip(questions, options)
        ]
        return model.run(passage=model.text_in(passages), choices=model.text_in(choices))

    def answers(self, chunk, source: str, where: str, batch_size: int):
        """One {"choice", "probabilities"} per (line number, JSON line) of `chunk`."""
        from data_pipeline.io.text_lines import json_object

        rows = [json_object(source, number, line) for number, line in chunk]
        out = self.choose(
            [r["passage"] for r in rows],
            [r["question"] for r in rows],
            [r["options"] for r in rows],
        )
        for i in range(len(rows)):
            yield {
                "choice": int(out["choice"][i]),
                "probabilities": out["probabilities"][i].tolist(),
            }
