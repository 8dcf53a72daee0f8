"""Fine-tune ALBERT as a sentence-embedding model (albert_tf.runners.families.embedding).

`python run_embedding.py --help` lists its settings; the console script is the same command."""

from albert_tf.runners.commands import embedding

if __name__ == "__main__":
    embedding()
