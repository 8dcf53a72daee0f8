"""Pretrain ALBERT (MLM + SOP) on the records of create_pretraining_data
(albert_tf.runners.pretraining).

`python run_pretraining.py --help` lists its settings; the console script is the same command."""

from albert_tf.runners.commands import pretrain

if __name__ == "__main__":
    pretrain()
