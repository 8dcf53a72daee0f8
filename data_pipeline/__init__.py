"""Text to TFRecords: SentencePiece tokenization, pretraining instances, task readers."""
