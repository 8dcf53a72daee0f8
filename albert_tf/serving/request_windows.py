"""Windows with a per-request limit, shared by the tasks that window their text (SQuAD,
long-document classifiers, token classifiers): a request may need at most `max_windows`
windows (the export's setting, `DEFAULT_MAX_WINDOWS` unless given) and `max_request_bytes`
bytes of text. The SavedModels check both in the graph and the on-device runners in
Python, before the model runs, with the same one-line errors (`Wording` names the model
and its texts); beyond either, an error naming the limit and the request's size, the bytes
checked before any tokenization.

Also the in-graph layout of a request's windows of single texts: one flat list [W, S] (row
by row, window by window: W is the sum of its rows' windows, not rows × the longest's), so
every tensor is linear in the request's windows (data_pipeline.windows.doc_spans is the
Python layout).

TensorFlow is imported only inside the in-graph functions: the on-device runner
(albert_tf.serving.tflite_predict) uses the limits without it.
"""

from __future__ import annotations

import dataclasses

# Windows per request of an export that names none: a batch of 384 SQuAD dev questions
# (1,724 windows of 128 tokens at stride 64) twice over; 400 of the longest SQuAD dev
# context (4,063 characters, ~10 windows of 384 tokens at stride 128); one context of
# ~520,000 tokens (~2 MB of English) at 384 / 128. Memory is linear in it.
DEFAULT_MAX_WINDOWS = 4096

# Request text per position of the windows of the limit, in bytes, refused before it is
# tokenized: real text has 1-8 bytes a token and each window adds `doc_stride` <
# max_seq_length tokens, so a request within `max_windows` is far from this; text beyond
# it (megabytes of whitespace, one endless word) would cost its tokenization before its
# windows could be counted.
BYTES_PER_WINDOW_POSITION = 8


@dataclasses.dataclass(frozen=True)
class Wording:
    """How a task's limit errors name its model (`model`), the text a request's bytes are
    of (`text`), its rows (`items`) and what the model does with them (`verb`)."""

    model: str = "classifier"
    text: str = "text"
    items: str = "texts"
    verb: str = "reads"


CLASSIFIER = Wording()


def max_request_bytes(max_windows: int, max_seq_length: int) -> int:
    """The most bytes of text one request may hold."""
    return max_windows * max_seq_length * BYTES_PER_WINDOW_POSITION


def bytes_message(size, max_windows: int, max_seq_length: int, words: Wording = CLASSIFIER):
    """The error of a request of `size` bytes (any value `str.format` takes: the
    SavedModels pass "{}" for `tf.strings.format`)."""
    return (
        f"the request holds {size} bytes of {words.text}; this {words.model} reads at most "
        f"{max_request_bytes(max_windows, max_seq_length):,} per request "
        f"({BYTES_PER_WINDOW_POSITION} per position of its max_windows={max_windows} windows "
        f"of {max_seq_length} tokens); send fewer or shorter {words.items}"
    )


def windows_message(
    windows, rows, max_windows: int, max_seq_length: int, words: Wording = CLASSIFIER
) -> str:
    """The error of a request whose `rows` texts need `windows` windows."""
    return (
        f"the request needs {windows} windows of {max_seq_length} tokens for its {rows} "
        f"{words.items}; this {words.model} {words.verb} at most max_windows={max_windows} "
        f"windows per request; send fewer or shorter {words.items}"
    )


def check_python_request(
    texts, max_windows: int, max_seq_length: int, words: Wording = CLASSIFIER
) -> None:
    """ValueError unless `texts` (one request, str) fit the byte limit (checked before
    they are tokenized)."""
    size = sum(len(t.encode()) for t in texts)
    if size > max_request_bytes(max_windows, max_seq_length):
        raise ValueError(bytes_message(f"{size:,}", max_windows, max_seq_length, words))


def check_python_windows(
    counts, max_windows: int, max_seq_length: int, words: Wording = CLASSIFIER
) -> None:
    """ValueError unless the request's windows (`counts`, each text's) fit `max_windows`."""
    if sum(counts) > max_windows:
        raise ValueError(
            windows_message(sum(counts), len(counts), max_windows, max_seq_length, words)
        )


# --- in the graph ---------------------------------------------------------------------


def check_text_bytes(text, max_windows: int, max_seq_length: int, words: Wording = CLASSIFIER):
    """`text` (string [B]) after an InvalidArgumentError unless its bytes fit."""
    import tensorflow as tf

    size = tf.reduce_sum(tf.cast(tf.strings.length(text), tf.int64))
    message = tf.strings.format(bytes_message("{}", max_windows, max_seq_length, words), [size])
    check = tf.debugging.Assert(size <= max_request_bytes(max_windows, max_seq_length), [message])
    with tf.control_dependencies([check]):
        return tf.identity(text)


def check_windows(counts, max_windows: int, max_seq_length: int, words: Wording = CLASSIFIER):
    """`counts` (int32 [B], each row's windows) after an InvalidArgumentError unless their
    sum is at most `max_windows`."""
    import tensorflow as tf

    total = tf.reduce_sum(counts)
    message = tf.strings.format(
        windows_message("{}", "{}", max_windows, max_seq_length, words), [total, tf.size(counts)]
    )
    with tf.control_dependencies([tf.debugging.Assert(total <= max_windows, [message])]):
        return tf.identity(counts)


def request_limit(module) -> int:
    """The windows (rows or pairs) a serving module answers per request: its export's
    max_windows (or a zero-shot module's max_pairs), else DEFAULT_MAX_WINDOWS."""
    return (
        getattr(module, "max_windows", None)
        or getattr(module, "max_pairs", None)
        or DEFAULT_MAX_WINDOWS
    )


def capped_signatures(module) -> dict:
    """`module.signatures()` with every signature that takes text behind the one byte cap
    of a request: the bytes of all its string inputs together at most
    `max_request_bytes(request_limit(module), module.max_seq_length)`, else an
    InvalidArgumentError naming the limit (`bytes_message`, in the module's `wording`),
    checked before anything is tokenized. Signatures a module names in `checks_own_request`
    check their request in the graph themselves, with the same `max_request_bytes` and
    the bytes they tokenize (SQuAD, the token classifier, zero-shot's hypotheses, a
    long-document classifier). What every text-in SavedModel is saved with
    (albert_tf.serving.saved_model), so that no export tokenizes megabytes of text only
    to keep its first max_seq_length tokens: time and memory grew with the text, not with
    what the model reads."""
    import tensorflow as tf

    from albert_tf.serving.graph_function import graph_function

    limit = request_limit(module)
    length, words = module.max_seq_length, getattr(module, "wording", CLASSIFIER)
    own = getattr(module, "checks_own_request", ())
    out = {}
    for name, fn in module.signatures().items():
        args, kwargs = fn.structured_input_signature
        specs = list(tf.nest.flatten(args)) + [kwargs[k] for k in sorted(kwargs)]
        if name in own or kwargs or not any(spec.dtype == tf.string for spec in specs):
            out[name] = fn
            continue

        def capped(*inputs, fn=fn):
            texts = [x for x in inputs if x.dtype == tf.string]
            size = tf.add_n([tf.reduce_sum(tf.cast(tf.strings.length(x), tf.int64)) for x in texts])
            message = tf.strings.format(bytes_message("{}", limit, length, words), [size])
            check = tf.debugging.Assert(size <= max_request_bytes(limit, length), [message])
            with tf.control_dependencies([check]):
                inputs = [tf.identity(x) for x in inputs]
            return fn(*inputs)

        signature = [tf.TensorSpec(spec.shape, spec.dtype, spec.name) for spec in specs]
        out[name] = graph_function(capped, input_signature=signature).get_concrete_function()
    return out


def window_rows(windows):
    """(row, k) int32 [W]: the row and index within it of each window of the request, row
    by row (the windows of row b are k = 0 .. windows[b] − 1)."""
    import tensorflow as tf

    k = tf.ragged.range(windows)
    return tf.cast(k.value_rowids(), tf.int32), tf.cast(k.flat_values, tf.int32)


def window_counts(pieces, room: int, doc_stride: int, max_document_windows: int = 0):
    """int32 [B]: each row's windows (data_pipeline.windows.doc_spans of its `pieces`
    int32 [B] with windows of `room` pieces, then the first `max_document_windows`).
    Every window but the last is `room` long, so the next starts min(room, doc_stride)
    later and a row of P > room pieces has ceil((P − room) / step) + 1."""
    import tensorflow as tf

    step = min(room, doc_stride)
    windows = tf.where(pieces > room, (pieces - room + step - 1) // step + 1, 1)
    return tf.minimum(windows, max_document_windows) if max_document_windows > 0 else windows


def windowed_inputs(ids, room: int, doc_stride: int, windows, cls_id: int, sep_id: int):
    """Ragged int32 ids [B, (P)] and each row's `windows` [B] → (input_ids, input_mask,
    segment_ids) int32 [W, room + 2] (`[CLS] pieces [SEP]`, zero padded) and row int32
    [W]: the row of each window."""
    import tensorflow as tf

    row, k = window_rows(windows)
    start = k * min(room, doc_stride)  # [W]
    pieces = tf.cast(ids.row_lengths(), tf.int32)
    length = tf.minimum(tf.gather(pieces, row) - start, room)  # [W]
    p = tf.range(room + 2)[None, :]  # [1, S]
    first = tf.cast(tf.gather(ids.row_starts(), row), tf.int32) + start  # [W]
    inside = (p >= 1) & (p <= length[:, None])
    flat = tf.concat([ids.flat_values, [0]], 0)  # (a valid index for positions off the text)
    at = tf.where(inside, first[:, None] + p - 1, tf.size(flat) - 1)
    input_ids = tf.where(inside, tf.gather(flat, at), 0)
    input_ids = tf.where(p == 0, cls_id, tf.where(p == length[:, None] + 1, sep_id, input_ids))
    input_mask = tf.cast(p <= length[:, None] + 1, tf.int32)
    return (input_ids, input_mask, tf.zeros_like(input_mask)), row
