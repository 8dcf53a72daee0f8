"""Text to TFRecords: SentencePiece tokenization, pretraining instances, task readers.

Importing the package makes TensorFlow's start quiet (data_pipeline.quiet): every entry
point of the project imports it before TensorFlow."""

from data_pipeline import quiet

quiet.install()
