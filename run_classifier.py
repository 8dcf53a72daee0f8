"""Fine-tune ALBERT for classification, regression, multiple choice
(albert_tf.runners.families.classifier).

`python run_classifier.py --help` lists its settings; the console script is the same command."""

from albert_tf.runners.commands import classify

if __name__ == "__main__":
    classify()
