"""What one SQuAD request may cost: at most `max_windows` windows (a setting of the export,
`DEFAULT_MAX_WINDOWS` unless given) and `max_request_bytes` bytes of text. The SavedModel
(albert_tf.serving.tasks.squad, squad_windows) and the on-device runner
(albert_tf.serving.tflite_predict) refuse a request beyond either with an error naming the
limit and the request's size, before the model runs. No TensorFlow here: the on-device
runner needs none.
"""

from __future__ import annotations

# Windows per request of an export that names none: a batch of 384 SQuAD dev questions
# (1,724 windows of 128 tokens at stride 64) twice over; 400 of the longest SQuAD dev
# context (4,063 characters, ~10 windows of 384 tokens at stride 128); one context of
# ~520,000 tokens (~2 MB of English) at 384 / 128. Memory is linear in it (squad_windows).
DEFAULT_MAX_WINDOWS = 4096

# Request text (questions + contexts) per position of the windows of the limit, in bytes,
# refused before it is tokenized: real text has 1-8 bytes a token and each window adds
# `doc_stride` < max_seq_length tokens, so a request within `max_windows` is far from
# this; text beyond it (megabytes of whitespace, one endless word) would cost its
# tokenization before its windows could be counted.
BYTES_PER_WINDOW_POSITION = 8


def max_request_bytes(max_windows: int, max_seq_length: int) -> int:
    """The most bytes of questions and contexts one request may hold."""
    return max_windows * max_seq_length * BYTES_PER_WINDOW_POSITION


def bytes_message(size, max_windows: int, max_seq_length: int) -> str:
    """The error of a request of `size` bytes (any value `str.format` takes: the
    SavedModel passes "{}" for `tf.strings.format`)."""
    limit = max_request_bytes(max_windows, max_seq_length)
    return (
        f"the request holds {size} bytes of questions and contexts; this SQuAD model reads "
        f"at most {limit:,} per request ({BYTES_PER_WINDOW_POSITION} per position of its "
        f"max_windows={max_windows} windows of {max_seq_length} tokens); send fewer or "
        "shorter contexts"
    )


def windows_message(windows, rows, max_windows: int, max_seq_length: int) -> str:
    """The error of a request whose `rows` contexts need `windows` windows."""
    return (
        f"the request needs {windows} windows of {max_seq_length} tokens for its {rows} "
        f"contexts; this SQuAD model answers at most max_windows={max_windows} windows per "
        "request; send fewer or shorter contexts"
    )


def check_python_request(
    examples,
    tokenizer,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    max_windows: int,
) -> None:
    """ValueError unless SquadExamples `examples` (one request) fit the limits: their
    bytes, then their windows as data_pipeline.squad.features.convert_squad_examples lays them
    out (tokenized once more here, a cost linear in the text, so that the quadratic-time
    features of a huge context are never built)."""
    from data_pipeline.squad.offsets import offset_tokenizer
    from data_pipeline.windows import doc_spans

    size = sum(len(ex.question.encode()) + len(ex.context.encode()) for ex in examples)
    if size > max_request_bytes(max_windows, max_seq_length):
        raise ValueError(bytes_message(f"{size:,}", max_windows, max_seq_length))
    offsets, windows = offset_tokenizer(tokenizer), 0
    for ex in examples:
        query = tokenizer.encode(ex.question)[:max_query_length]
        tokens = len(offsets.encode(ex.context)[0])
        windows += len(doc_spans(tokens, max_seq_length - len(query) - 3, doc_stride))
    if windows > max_windows:
        raise ValueError(windows_message(windows, len(examples), max_windows, max_seq_length))
