"""Tokenizers (SentencePiece, WordPiece), their in-graph and on-device forms, their trainers."""
