"""What one long-document classifier or token classifier request may cost: at most
`max_windows` windows (the export's setting, squad_limits.DEFAULT_MAX_WINDOWS unless given)
and `max_request_bytes` bytes of text, as for SQuAD (squad_limits). The SavedModels
(classifier_windows; tasks.token_classifier) and the on-device runners (tflite_predict,
lite_tagging) refuse a request beyond either with these one-line errors before the model
runs; `noun` names the model ("classifier", "token classifier"). No TensorFlow here: the
on-device runner needs none.
"""

from __future__ import annotations

from albert_tf.serving.squad_limits import BYTES_PER_WINDOW_POSITION, max_request_bytes


def bytes_message(size, max_windows: int, max_seq_length: int, noun: str = "classifier") -> str:
    """The error of a request of `size` bytes of text ("{}" for tf.strings.format)."""
    return (
        f"the request holds {size} bytes of text; this {noun} reads at most "
        f"{max_request_bytes(max_windows, max_seq_length):,} per request "
        f"({BYTES_PER_WINDOW_POSITION} per position of its max_windows={max_windows} windows "
        f"of {max_seq_length} tokens); send fewer or shorter texts"
    )


def windows_message(
    windows, rows, max_windows: int, max_seq_length: int, noun: str = "classifier"
) -> str:
    """The error of a request whose `rows` texts need `windows` windows."""
    return (
        f"the request needs {windows} windows of {max_seq_length} tokens for its {rows} "
        f"texts; this {noun} reads at most max_windows={max_windows} windows per "
        "request; send fewer or shorter texts"
    )


def check_python_request(
    texts, max_windows: int, max_seq_length: int, noun: str = "classifier"
) -> None:
    """ValueError unless `texts` (one request, str) fit the byte limit (checked before
    they are tokenized)."""
    size = sum(len(t.encode()) for t in texts)
    if size > max_request_bytes(max_windows, max_seq_length):
        raise ValueError(bytes_message(f"{size:,}", max_windows, max_seq_length, noun))


def check_python_windows(
    counts, max_windows: int, max_seq_length: int, noun: str = "classifier"
) -> None:
    """ValueError unless the request's windows (`counts`, each text's) fit `max_windows`."""
    if sum(counts) > max_windows:
        raise ValueError(
            windows_message(sum(counts), len(counts), max_windows, max_seq_length, noun)
        )
