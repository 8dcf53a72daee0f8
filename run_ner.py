"""Fine-tune ALBERT for token classification, NER (albert_tf.runners.families.token_classifier).

`python run_ner.py --help` lists its settings; the console script is the same command."""

from albert_tf.runners.commands import ner

if __name__ == "__main__":
    ner()
