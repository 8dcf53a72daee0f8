"""The fine-tuning families (albert_tf.runners.family), one module each, and their registry:
one line per family."""

from albert_tf.runners.families.classifier import Classifier
from albert_tf.runners.families.embedding import Embedding
from albert_tf.runners.families.squad import QuestionAnswering
from albert_tf.runners.families.token_classifier import TokenClassifier

FAMILIES = {
    "classifier": Classifier(),
    "squad": QuestionAnswering(),
    "ner": TokenClassifier(),
    "embedding": Embedding(),
}
